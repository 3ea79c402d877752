package execgate

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestErrorKind_EveryKindIsDocumented keeps the vocabulary and its
// documentation one list: every kind is named, with what a caller can do,
// in ErrorKind's doc comment, and is a row of README's table of refusals,
// which lists no other kind.
func TestErrorKind_EveryKindIsDocumented(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "errors.go", nil, parser.ParseComments)
	require.NoError(t, err)
	p, err := doc.NewFromFiles(fset, []*ast.File{f}, "github.com/execgate/execgate")
	require.NoError(t, err)
	var kindDoc string
	for _, ty := range p.Types {
		if ty.Name == "ErrorKind" {
			kindDoc = ty.Doc
		}
	}
	require.NotEmpty(t, kindDoc)
	names := map[ErrorKind]string{}
	for _, c := range p.Consts {
		for _, spec := range c.Decl.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if !strings.HasPrefix(n.Name, "ErrorKind") || vs.Doc == nil || strings.Contains(vs.Doc.Text(), "Deprecated:") {
					continue
				}
				lit, ok := vs.Values[i].(*ast.BasicLit)
				require.True(t, ok, "%s is a string literal", n.Name)
				names[ErrorKind(strings.Trim(lit.Value, `"`))] = n.Name
			}
		}
	}
	got := make([]ErrorKind, 0, len(names))
	for k := range names {
		got = append(got, k)
	}
	assert.ElementsMatch(t, errorKinds, got, "errorKinds lists every kind constant")
	for _, k := range errorKinds {
		assert.Contains(t, kindDoc, "["+names[k]+"]", "ErrorKind's doc says what to do on %s", k)
	}

	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	section := string(readme)
	i := strings.Index(section, "## How a call is refused")
	require.GreaterOrEqual(t, i, 0, "README has the section on refusals")
	section = section[i:]
	section = section[:strings.Index(section, "\n### ")]
	var rows []ErrorKind
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\|").FindAllStringSubmatch(section, -1) {
		rows = append(rows, ErrorKind(m[1]))
	}
	assert.Equal(t, errorKinds, rows, "README's table lists every kind, in the order of errorKinds")
	assert.False(t, slices.Contains(rows, ""), "no empty kind")
}
