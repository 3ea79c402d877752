package execgate

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// Path is a string that a [Struct] schema checks as a path, as a Flags
// path argument is checked (see [PathRule]): a field of type Path, or
// []Path, at the top level of the struct must name something inside the
// spec's working directory, and the build function sees it cleaned.
//
// The field's `path` tag sets the field's [PathRule], as a list of
// options separated by commas, each at most once:
//
//   - exists, file or dir (at most one): what must be there, the rule's
//     Must ([PathExists], [PathFile], [PathDir]); none means anything or
//     nothing;
//   - glob: the path may hold the glob characters * ? [ for the program
//     to expand ([PathRule.Glob]);
//   - lexical: the path is checked as text, symbolic links are not
//     resolved ([PathRule.Lexical]).
//
// So `path:"file"` is a regular file, reached through no link that leads
// out; `path:"glob,lexical"` a pattern checked as text. No tag, or an
// empty one, is PathRule{}. An unknown option is refused by
// [NewAllowlist]. A Struct schema with Path fields must be used through
// an [Allowlist], which binds it to the spec's Dir. A Path anywhere else
// in the type (a nested struct, a map, a pointer) would not be checked,
// and [NewAllowlist] refuses it. The schema's JSON Schema describes each
// Path field as the path it must be.
type Path string

// parsePathTag returns the PathRule that a Path field's `path` tag
// declares (see [Path]).
func parsePathTag(tag string) (PathRule, error) {
	var rule PathRule
	if tag == "" {
		return rule, nil
	}
	seen := map[string]bool{}
	for _, opt := range strings.Split(tag, ",") {
		if seen[opt] {
			return PathRule{}, fmt.Errorf("path tag %q: %q is given twice", tag, opt)
		}
		seen[opt] = true
		switch m := PathMust(opt); {
		case m == PathExists || m == PathFile || m == PathDir:
			if rule.Must != PathAny {
				return PathRule{}, fmt.Errorf("path tag %q: %q and %q both say what must be there; give one", tag, rule.Must, m)
			}
			rule.Must = m
		case opt == "glob":
			rule.Glob = true
		case opt == "lexical":
			rule.Lexical = true
		default:
			return PathRule{}, fmt.Errorf("path tag %q: unknown option %q (want exists, file or dir, glob, lexical, separated by commas)", tag, opt)
		}
	}
	return rule, rule.validate()
}

// structPath is one Path field of a Struct schema's type.
type structPath struct {
	index []int  // the field, for reflect.Value.FieldByIndex
	name  string // its JSON name, for issues
	slice bool   // []Path rather than Path
	rule  PathRule
	bound *boundPathRule // nil before bindDir
}

var pathReflectType = reflect.TypeFor[Path]()

// structPaths finds the Path and []Path fields at the top level of t.
func structPaths(t reflect.Type) ([]structPath, error) {
	if t.Kind() != reflect.Struct {
		return nil, nil
	}
	var out []structPath
	for i := range t.NumField() {
		f := t.Field(i)
		slice := f.Type.Kind() == reflect.Slice && f.Type.Elem() == pathReflectType
		if f.Type != pathReflectType && !slice {
			if holdsPath(f.Type, map[reflect.Type]bool{}) {
				return nil, &ConfigError{Field: f.Name, Message: fmt.Sprintf("holds a Path inside %v, where it would not be checked: Path is checked in a field of type Path or []Path at the top level of the struct", f.Type)}
			}
			continue
		}
		p := structPath{index: f.Index, name: jsonFieldName(f), slice: slice}
		rule, err := parsePathTag(f.Tag.Get("path"))
		if err != nil {
			return nil, &ConfigError{Field: f.Name, Message: err.Error()}
		}
		p.rule = rule
		out = append(out, p)
	}
	return out, nil
}

// holdsPath reports whether a value of type t holds a Path anywhere: in
// a field, an element, a map key or value, or behind a pointer.
func holdsPath(t reflect.Type, seen map[reflect.Type]bool) bool {
	if t == pathReflectType {
		return true
	}
	if seen[t] {
		return false
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return holdsPath(t.Elem(), seen)
	case reflect.Map:
		return holdsPath(t.Key(), seen) || holdsPath(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			if holdsPath(t.Field(i).Type, seen) {
				return true
			}
		}
	}
	return false
}

// bindPaths returns paths bound to the working directory dir.
func bindPaths(paths []structPath, dir string, memo *allowMemo) ([]structPath, error) {
	out := make([]structPath, len(paths))
	for i, p := range paths {
		b, err := bindPath(p.rule, dir, memo)
		if err != nil {
			return nil, err
		}
		p.bound = b
		out[i] = p
	}
	return out, nil
}

// checkPaths checks and cleans the Path fields of v, in place, and returns
// an Issue for each refused one.
func checkPaths(paths []structPath, v reflect.Value) (issues []Issue, causes []error) {
	check := func(field string, p structPath, fv reflect.Value) {
		if p.bound == nil {
			issues = append(issues, Issue{Field: field, Message: errUnboundPath})
			return
		}
		out, err := p.bound.check(fv.String())
		if err != nil {
			issues = append(issues, Issue{Field: field, Message: err.Error()})
			causes = append(causes, err)
			return
		}
		fv.SetString(out)
	}
	for _, p := range paths {
		fv := v.FieldByIndex(p.index)
		if !p.slice {
			if fv.String() != "" {
				check(p.name, p, fv)
			}
			continue
		}
		for i := range fv.Len() {
			check(p.name+"["+strconv.Itoa(i)+"]", p, fv.Index(i))
		}
	}
	return issues, causes
}
