package execgate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate/internal/inputrules"
)

// Native fuzz targets for the three places where untrusted bytes enter the
// gate: Struct decoding, Flags parsing and the approval envelope. Their
// seed corpora live in testdata/fuzz/<FuzzName>/; the seed-* files there
// are written from fuzzSeeds by `go test -run TestFuzzSeedCorpora -update`.
// Run one target with, for example:
//
//	go test -run '^$' -fuzz '^FuzzFlagsParse$' -fuzztime 30s .
//
// Every accepted input is also proposed and executed, so that each target
// checks, besides its own invariants, that the approval digest binds the
// argv: changing, adding, removing, splitting, joining or swapping any
// argv element changes the digest.

// fuzzCommand is the executable of every fuzz spec. The fuzz ExecFn never
// starts it; NewAllowlist only needs it to exist.
const fuzzCommand = "/bin/true"

// fuzzNow is the fixed clock of the fuzz Executors, so that approval
// envelopes are reproducible.
var fuzzNow = time.Date(2026, 11, 30, 12, 0, 0, 123456789, time.UTC)

// fuzzCallsKey carries a *[]Invocation through the context, so that the
// fuzz ExecFn reports each call to the one that made it.
type fuzzCallsKey struct{}

// fuzzExecFn records the Invocation in the context's slot and starts
// nothing.
func fuzzExecFn(ctx context.Context, inv Invocation) Outcome {
	if calls, ok := ctx.Value(fuzzCallsKey{}).(*[]Invocation); ok {
		*calls = append(*calls, inv)
	}
	return Outcome{}
}

// fuzzContext returns a context whose ExecFn calls are recorded in the
// returned slice.
func fuzzContext() (context.Context, *[]Invocation) {
	calls := new([]Invocation)
	return context.WithValue(context.Background(), fuzzCallsKey{}, calls), calls
}

// fuzzStore is a MemoryStore that also remembers every Record saved in
// it, so that the fuzz targets can recompute approval digests with the
// record's own fingerprint.
type fuzzStore struct {
	*MemoryStore
	mu    sync.Mutex
	saved map[string]Record
}

func newFuzzStore() *fuzzStore {
	return &fuzzStore{MemoryStore: NewMemoryStore(MemoryStoreOptions{Now: func() time.Time { return fuzzNow }}), saved: map[string]Record{}}
}

// Save implements ApprovalStore.
func (s *fuzzStore) Save(ctx context.Context, rec Record) error {
	s.mu.Lock()
	s.saved[rec.Approval.ID] = rec
	s.mu.Unlock()
	return s.MemoryStore.Save(ctx, rec)
}

// record returns the Record saved under id.
func (s *fuzzStore) record(t *testing.T, id string) Record {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.saved[id]
	require.True(t, ok, "no record saved for %s", id)
	return rec
}

// fuzzExecutor returns an Executor over a with the fuzz ExecFn, a new
// fuzzStore and the fixed clock.
func fuzzExecutor(t testing.TB, a *Allowlist) (*Executor, *fuzzStore) {
	t.Helper()
	store := newFuzzStore()
	x, err := NewExecutor(Config{Allowlist: a, ExecFn: fuzzExecFn, Store: store, Now: func() time.Time { return fuzzNow }})
	require.NoError(t, err)
	return x, store
}

// fuzzAllowlist returns an Allowlist of one spec named name, with
// fuzzCommand as its executable.
func fuzzAllowlist(t testing.TB, name string, schema ArgsSchema) *Allowlist {
	t.Helper()
	a, err := NewAllowlist(CommandSpec{Name: name, Command: fuzzCommand, Dir: "/", Args: schema})
	require.NoError(t, err)
	return a
}

// forbiddenRune reports whether r may never appear in an accepted argv
// element of a Flags schema: any character no token may hold.
func forbiddenRune(r rune) bool { return inputrules.Refused(r) }

// requireCleanText checks that s is valid UTF-8 without NUL or any
// forbidden character.
func requireCleanText(t *testing.T, what, s string) {
	t.Helper()
	require.True(t, utf8.ValidString(s), "%s %q is not valid UTF-8", what, s)
	for _, r := range s {
		require.False(t, forbiddenRune(r), "%s %q holds U+%04X", what, s, r)
	}
}

// argvMutations returns argvs that differ from args by one edit: an
// element changed, shortened, emptied, removed, split in two, joined with
// its neighbor, swapped with it, or an element inserted. Only the first
// and last few positions are edited, to bound the work on long argvs.
func argvMutations(args []string) [][]string {
	var out [][]string
	add := func(m []string) {
		if !slices.Equal(m, args) {
			out = append(out, m)
		}
	}
	edit := func(i int, f func([]string) []string) {
		add(f(slices.Clone(args)))
	}
	var positions []int
	for i := range args {
		if i < 8 || i >= len(args)-4 {
			positions = append(positions, i)
		}
	}
	for _, i := range positions {
		edit(i, func(a []string) []string { a[i] += "x"; return a })
		edit(i, func(a []string) []string { a[i] = ""; return a })
		if n := len(args[i]); n > 0 {
			edit(i, func(a []string) []string { a[i] = a[i][:n-1]; return a })
		}
		edit(i, func(a []string) []string { return slices.Delete(a, i, i+1) })
		if n := len(args[i]); n >= 2 {
			edit(i, func(a []string) []string {
				return slices.Replace(a, i, i+1, args[i][:n/2], args[i][n/2:])
			})
		}
		if i+1 < len(args) {
			edit(i, func(a []string) []string { return slices.Replace(a, i, i+2, args[i]+args[i+1]) })
			edit(i, func(a []string) []string { a[i], a[i+1] = a[i+1], a[i]; return a })
		}
		edit(i, func(a []string) []string { return slices.Insert(a, i, "") })
	}
	add(append(slices.Clone(args), ""))
	return out
}

// requireDigestBindsArgv checks that the approval digest of ap, recomputed
// with its record's fingerprint and stdin hash, is ap.Digest, and that it
// changes with every one-edit change of the argv.
func requireDigestBindsArgv(t *testing.T, ap Approval, rec Record) {
	t.Helper()
	require.Equal(t, ap.Digest, approvalDigest(&ap, rec.Fingerprint, rec.StdinSHA256))
	for _, m := range argvMutations(ap.Args) {
		changed := ap
		changed.Args = m
		require.NotEqual(t, ap.Digest, approvalDigest(&changed, rec.Fingerprint, rec.StdinSHA256), "approval digest ignores argv %q -> %q", ap.Args, m)
	}
}

// requireApprovalRunsProposal proposes an accepted call, checks that its
// approval digest binds the argv, and executes the approval after a JSON
// round trip, checking that exactly the checked argv and stdin reach the
// ExecFn, once.
func requireApprovalRunsProposal(t *testing.T, x *Executor, store *fuzzStore, name string, input []byte, p Proposal) {
	t.Helper()
	ctx, calls := fuzzContext()
	ap, err := x.Propose(ctx, name, input, "fuzz")
	require.NoError(t, err, "Propose refused what Check accepted")
	require.Equal(t, p.Args, ap.Args)
	require.Empty(t, *calls, "Propose spawned")
	requireDigestBindsArgv(t, ap, store.record(t, ap.ID))

	b, err := json.Marshal(ap)
	require.NoError(t, err)
	var back Approval
	require.NoError(t, json.Unmarshal(b, &back))
	res, err := x.Execute(ctx, back)
	require.NoError(t, err)
	require.True(t, res.OK)
	require.Len(t, *calls, 1)
	require.Equal(t, p.Args, (*calls)[0].Args)
	require.Equal(t, string(p.Stdin), string((*calls)[0].Stdin))
	_, err = x.Execute(ctx, back)
	requireApprovalReason(t, err, ReasonUnknown)
	require.Len(t, *calls, 1)
}

// Struct.

// fuzzSearchArgs is the Struct schema under fuzz: several field kinds,
// each with rules that also keep control characters out of the argv.
type fuzzSearchArgs struct {
	Pattern    string            `json:"pattern" validate:"required,max=100,printascii"`
	MaxCount   int               `json:"max_count" validate:"omitempty,min=1,max=500"`
	Context    *uint8            `json:"context" validate:"omitempty,max=10"`
	IgnoreCase bool              `json:"ignore_case"`
	Format     string            `json:"format" validate:"omitempty,oneof=text json"`
	Paths      []string          `json:"paths" validate:"max=4,dive,required,max=128,regexp=^[A-Za-z0-9_][A-Za-z0-9._-]*(/[A-Za-z0-9_][A-Za-z0-9._-]*)*$"`
	Labels     map[string]string `json:"labels" validate:"max=2,dive,keys,min=1,max=16,alphanum,endkeys,max=32,printascii"`
	Timeout    time.Duration     `json:"timeout" validate:"omitempty,min=1s,max=1m"`
}

var fuzzPathRe = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]*(/[A-Za-z0-9_][A-Za-z0-9._-]*)*$`)

// buildFuzzSearch is the build function of the Struct schema under fuzz.
func buildFuzzSearch(in fuzzSearchArgs) Argv {
	args := []string{"--no-config"}
	if in.IgnoreCase {
		args = append(args, "--ignore-case")
	}
	if in.MaxCount > 0 {
		args = append(args, "--max-count", strconv.Itoa(in.MaxCount))
	}
	if in.Context != nil {
		args = append(args, "--context", strconv.Itoa(int(*in.Context)))
	}
	if in.Format != "" {
		args = append(args, "--format", in.Format)
	}
	keys := make([]string, 0, len(in.Labels))
	for k := range in.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		args = append(args, "--label", k+"="+in.Labels[k])
	}
	if in.Timeout > 0 {
		args = append(args, "--timeout", in.Timeout.String())
	}
	args = append(args, "--regexp", in.Pattern, "--")
	return Argv{Args: append(args, in.Paths...)}
}

// FuzzStructDecode feeds arbitrary input to a Struct schema through
// Proposer.Check. Invariants: no panic; a refusal is a *ValidationError
// with issues; an accepted input is one that encoding/json also accepts
// and decodes to the value that builds the same argv (strict decoding only
// ever refuses more); the argv satisfies the field rules and holds no NUL
// or control byte; and the approval digest binds the argv.
func FuzzStructDecode(f *testing.F) {
	x, store := fuzzExecutor(f, fuzzAllowlist(f, "rg.search", Struct(buildFuzzSearch)))
	p := x.Proposer()
	f.Fuzz(func(t *testing.T, input []byte) {
		prop, err := p.Check("rg.search", input)
		if err != nil {
			var ve *ValidationError
			require.ErrorAs(t, err, &ve)
			require.NotEmpty(t, ve.Issues)
			return
		}

		// encoding/json agrees on the value.
		std := input
		if t := bytes.TrimSpace(input); len(t) == 0 || string(t) == "null" {
			std = []byte("{}")
		}
		require.True(t, json.Valid(std), "accepted invalid JSON %q", input)
		var want fuzzSearchArgs
		require.NoError(t, json.Unmarshal(std, &want), "encoding/json refuses what Struct accepted")
		require.NoError(t, structValidator().Struct(&want), "accepted a value its rules refuse")
		require.Equal(t, buildFuzzSearch(want).Args, prop.Args)
		require.Empty(t, prop.Stdin)

		// The argv satisfies the rules by itself.
		for _, a := range prop.Args {
			for i := 0; i < len(a); i++ {
				require.False(t, a[i] < 0x20 || a[i] == 0x7f, "argv element %q holds a control byte", a)
			}
			requireCleanText(t, "argv element", a)
		}
		require.LessOrEqual(t, len(want.Pattern), 100)
		require.NotEmpty(t, want.Pattern)
		require.LessOrEqual(t, len(want.Paths), 4)
		// No value before it can be "--regexp" (they are numbers, enum
		// members, durations and KEY=VALUE labels), so the first one is
		// the flag; the pattern may be anything printable, "--" included.
		re := slices.Index(prop.Args, "--regexp")
		require.GreaterOrEqual(t, re, 1)
		require.Less(t, re+2, len(prop.Args)+1)
		require.Equal(t, want.Pattern, prop.Args[re+1])
		require.Equal(t, "--", prop.Args[re+2])
		for _, path := range prop.Args[re+3:] {
			require.Regexp(t, fuzzPathRe, path)
		}

		again, err := p.Check("rg.search", input)
		require.NoError(t, err)
		require.Equal(t, prop, again, "Check is not deterministic")
		requireApprovalRunsProposal(t, x, store, "rg.search", input, prop)
	})
}

// Flags.

// fuzzFlagSpec is the Flags schema under fuzz, modeled on git log, with
// every value kind, a single-dash long flag, repeats, a glued short
// spelling, positionals after "--" and a small stdin.
func fuzzFlagSpec() FlagSpec {
	min1, max1000 := int64(1), int64(1000)
	return FlagSpec{
		Leading: []string{"--no-pager", "log"},
		Flags: []Flag{
			{Name: "max-count", Short: "n", Value: ValueInt, Min: &min1, Max: &max1000, Glued: true},
			{Name: "oneline"},
			{Name: "format", Value: ValueEnum, Enum: []string{"oneline", "short", "medium"}},
			{Name: "author", Value: ValuePattern, Pattern: `^[A-Za-z .@-]{1,64}$`},
			{Name: "grep", Value: ValueString, Repeat: 3},
			{Name: "verbose", Short: "v", Repeat: 2},
			{Name: "since", SingleDash: true, Value: ValuePattern, Pattern: `^[0-9]{4}-[0-9]{2}-[0-9]{2}$`},
		},
		Positionals:  Positionals{Max: 2, Pattern: `^[A-Za-z0-9._/-]{1,100}$`},
		Stdin:        &StdinSpec{Max: 64},
		EndOfOptions: true,
	}
}

// FuzzFlagsParse feeds arbitrary input to a Flags schema through
// Proposer.Check. Invariants: no panic; a refusal is a *ValidationError
// with issues; in an accepted argv, the leading arguments come first, then
// only canonical spellings of declared flags, each at most as often as its
// Repeat allows and each value flag with a value of its kind, glued as
// --name=value to a two-dash spelling or next to a one-dash one (integers
// in range and in canonical form, enum members, full pattern matches,
// plain strings without '-' or '@' in front or shell metacharacters),
// then "--", then at most Max positionals matching their pattern; no
// element holds NUL, control, bidirectional formatting or line separator
// characters; stdin is only present when sent and is within its cap;
// parsing the argv back gives the same argv; and the approval digest
// binds the argv.
func FuzzFlagsParse(f *testing.F) {
	spec := fuzzFlagSpec()
	x, store := fuzzExecutor(f, fuzzAllowlist(f, "git.log", Flags(spec)))
	p := x.Proposer()
	canon := map[string]Flag{}
	for _, fl := range spec.Flags {
		c := "--" + fl.Name
		if fl.SingleDash || len(fl.Name) == 1 {
			c = "-" + fl.Name
		}
		canon[c] = fl
	}
	posRe := regexp.MustCompile(`^(?:` + spec.Positionals.Pattern + `)$`)
	f.Fuzz(func(t *testing.T, input []byte) {
		prop, err := p.Check("git.log", input)
		if err != nil {
			var ve *ValidationError
			require.ErrorAs(t, err, &ve)
			require.NotEmpty(t, ve.Issues)
			return
		}
		args := prop.Args
		for _, a := range args {
			requireCleanText(t, "argv element", a)
		}
		require.True(t, slices.Equal(spec.Leading, args[:len(spec.Leading)]), "leading arguments moved: %q", args)
		rest := args[len(spec.Leading):]
		dd := slices.Index(rest, "--")
		require.GreaterOrEqual(t, dd, 0, "no -- before the positionals: %q", args)

		// Flags, and the tokens that give them back through "args": a
		// two-dash flag carries its value as --name=value, a one-dash flag
		// as the next element.
		var tokens []string
		roundTrip := true
		counts := map[string]int{}
		for i := 0; i < dd; i++ {
			tok := rest[i]
			name, v, glued := tok, "", false
			if strings.HasPrefix(tok, "--") {
				name, v, glued = strings.Cut(tok, "=")
			}
			fl, ok := canon[name]
			require.True(t, ok, "%q is not the canonical spelling of a declared flag in %q", tok, args)
			counts[name]++
			require.LessOrEqual(t, counts[name], max(fl.Repeat, 1), "%s repeated too often in %q", name, args)
			if fl.Value == ValueNone {
				require.False(t, glued, "boolean flag %q with a value in %q", tok, args)
				tokens = append(tokens, tok)
				continue
			}
			if !glued {
				require.False(t, strings.HasPrefix(name, "--"), "%s without =value in %q", name, args)
				i++
				require.Less(t, i, dd, "%s has no value in %q", name, args)
				v = rest[i]
			}
			switch fl.Value {
			case ValueInt:
				n, err := strconv.ParseInt(v, 10, 64)
				require.NoError(t, err, "%s %q", name, v)
				require.Equal(t, strconv.FormatInt(n, 10), v, "integer not in canonical form")
				require.True(t, (fl.Min == nil || n >= *fl.Min) && (fl.Max == nil || n <= *fl.Max), "%s %d out of range", name, n)
			case ValueEnum:
				require.Contains(t, fl.Enum, v)
			case ValuePattern:
				require.Regexp(t, `^(?:`+fl.Pattern+`)$`, v)
			case ValueString:
				require.NotEmpty(t, v)
				require.NotContains(t, "-@", v[:1], "%s value %q starts with '-' or '@'", name, v)
				require.False(t, strings.ContainsAny(v, argShellMeta), "%s value %q holds a shell metacharacter", name, v)
			}
			switch {
			case glued:
				tokens = append(tokens, tok)
			case !strings.HasPrefix(v, "-"):
				tokens = append(tokens, name, v)
			case len(fl.Name) > 1:
				tokens = append(tokens, name+"="+v) // -since=value
			default:
				roundTrip = false // "-x=value" is refused and "-x -v" reads -v as a flag
			}
		}
		positionals := rest[dd+1:]
		require.LessOrEqual(t, len(positionals), spec.Positionals.Max)
		for _, a := range positionals {
			require.Regexp(t, posRe, a)
			require.False(t, strings.HasPrefix(a, "@"))
		}

		// Stdin.
		var in struct {
			Stdin *string `json:"stdin"`
		}
		if json.Unmarshal(input, &in) == nil && in.Stdin == nil {
			require.Empty(t, prop.Stdin, "stdin appeared from nowhere")
		}
		require.LessOrEqual(t, len(prop.Stdin), spec.Stdin.Max)
		require.NotContains(t, string(prop.Stdin), "\x00")

		// The canonical argv is a fixed point: given back as tokens, it
		// gives the same argv.
		if roundTrip {
			again := map[string]any{"args": append(tokens, positionals...)}
			if len(prop.Stdin) > 0 {
				again["stdin"] = string(prop.Stdin)
			}
			b, err := json.Marshal(again)
			require.NoError(t, err)
			prop2, err := p.Check("git.log", b)
			require.NoError(t, err, "the canonical argv %q does not parse back", args)
			require.Equal(t, args, prop2.Args)
		}

		requireApprovalRunsProposal(t, x, store, "git.log", input, prop)
	})
}

// Approval envelope.

// Placeholders in the approval seeds, replaced by the values of the
// approval proposed for each input. A mutation that breaks one gives the
// envelope another ID or digest.
const (
	fuzzIDPlaceholder     = "@ID@"
	fuzzDigestPlaceholder = "@DIGEST@"
)

// fuzzApprovalInput is the call every approval fuzz input starts from.
const fuzzApprovalInput = `{"flags":{"max-count":5,"author":"Ann Lee"},"args":["--oneline","main"],"stdin":"deploy\n"}`

// FuzzApprovalEnvelope proposes one call, then decodes the fuzz input as
// its envelope with Approval.UnmarshalJSON (after putting the real ID and
// digest in place of the placeholders) and executes it against the real
// MemoryStore. Invariants: no panic; a decode refusal is a
// *ValidationError; an envelope executes only when every field means the
// same as in the proposed one (same strings and argv, same instants), and
// then exactly the proposed argv and stdin run, once; a refused envelope
// spawns nothing; a refusal before the record is taken (a malformed
// envelope, another ID) leaves the proposal executable, and any later
// refusal for the same ID burns it; and the approval digest binds the
// argv.
func FuzzApprovalEnvelope(f *testing.F) {
	a := fuzzAllowlist(f, "git.log", Flags(fuzzFlagSpec()))
	f.Fuzz(func(t *testing.T, data []byte) {
		x, store := fuzzExecutor(t, a)
		ctx, calls := fuzzContext()
		ap, err := x.Propose(ctx, "git.log", json.RawMessage(fuzzApprovalInput), "deploy fix")
		require.NoError(t, err)
		requireDigestBindsArgv(t, ap, store.record(t, ap.ID))
		data = bytes.ReplaceAll(data, []byte(fuzzIDPlaceholder), []byte(ap.ID))
		data = bytes.ReplaceAll(data, []byte(fuzzDigestPlaceholder), []byte(ap.Digest))

		// genuineRuns executes the proposed envelope and reports whether
		// it ran.
		genuineRuns := func() bool {
			before := len(*calls)
			_, err := x.Execute(ctx, ap)
			if err != nil {
				requireApprovalReason(t, err, ReasonUnknown)
				require.Len(t, *calls, before)
				return false
			}
			require.Len(t, *calls, before+1)
			return true
		}

		var env Approval
		if err := env.UnmarshalJSON(data); err != nil {
			var ve *ValidationError
			require.ErrorAs(t, err, &ve)
			require.NotEmpty(t, ve.Issues)
			require.True(t, genuineRuns(), "a refused decode burned the approval")
			return
		}
		_, err = x.Execute(ctx, env)
		if err == nil {
			require.True(t, sameApproval(ap, env), "an envelope that differs in meaning executed:\nproposed %+v\nexecuted %+v", ap, env)
			require.Len(t, *calls, 1)
			require.Equal(t, ap.Args, (*calls)[0].Args)
			require.Equal(t, "deploy\n", string((*calls)[0].Stdin))
			require.False(t, genuineRuns(), "an approval executed twice")
			return
		}
		require.Empty(t, *calls, "a refused envelope spawned")
		var ve *ValidationError
		var ae *ApprovalError
		switch {
		case errors.As(err, &ve):
			require.True(t, genuineRuns(), "a malformed envelope burned the approval")
		case errors.As(err, &ae):
			require.NotEqual(t, ReasonPolicyChanged, ae.Reason)
			require.Equal(t, env.ID != ap.ID, genuineRuns(), "refused with %s", ae.Reason)
		default:
			t.Fatalf("unexpected error %T: %v", err, err)
		}

	})
}

// sameApproval reports whether two envelopes mean the same, field by
// field, whatever fields Approval has: equal values, and for times the
// same instant whatever the time zone.
func sameApproval(a, b Approval) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	for i := range va.NumField() {
		fa, fb := va.Field(i).Interface(), vb.Field(i).Interface()
		switch fa := fa.(type) {
		case time.Time:
			if !fa.Equal(fb.(time.Time)) {
				return false
			}
		case []string:
			if !slices.Equal(fa, fb.([]string)) {
				return false
			}
		default:
			if !reflect.DeepEqual(fa, fb) {
				return false
			}
		}
	}
	return true
}

func requireApprovalReason(t *testing.T, err error, reason string) {
	t.Helper()
	var ae *ApprovalError
	require.ErrorAs(t, err, &ae)
	require.Equal(t, reason, ae.Reason)
}

// Seed corpora.

// fuzzSeedApproval returns the approval envelope of fuzzApprovalInput,
// with placeholders for the ID and digest.
func fuzzSeedApproval() Approval {
	argv, err := Flags(fuzzFlagSpec()).Parse(json.RawMessage(fuzzApprovalInput))
	if err != nil {
		panic(err)
	}
	return Approval{
		ID:            fuzzIDPlaceholder,
		Name:          "git.log",
		Command:       fuzzCommand,
		Args:          argv.Args,
		Digest:        fuzzDigestPlaceholder,
		Reason:        "deploy fix",
		PolicyVersion: DefaultPolicyVersion,
		CreatedAt:     fuzzNow,
		ExpiresAt:     fuzzNow.Add(DefaultApprovalTTL),
	}
}

// fuzzSeedEnvelope returns fuzzSeedApproval, edited by edit, as JSON.
func fuzzSeedEnvelope(edit func(*Approval)) string {
	ap := fuzzSeedApproval()
	if edit != nil {
		edit(&ap)
	}
	b, err := json.Marshal(ap)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// fuzzSeedReordered returns fuzzSeedApproval as JSON with its keys in
// alphabetical order.
func fuzzSeedReordered() string {
	var m map[string]any
	if err := json.Unmarshal([]byte(fuzzSeedEnvelope(nil)), &m); err != nil {
		panic(err)
	}
	b, err := json.Marshal(m) // maps are encoded with sorted keys
	if err != nil {
		panic(err)
	}
	return string(b)
}

// fuzzSeeds are the seed inputs of each target, by target and seed name.
func fuzzSeeds() map[string]map[string]string {
	genuine := fuzzSeedEnvelope(nil)
	return map[string]map[string]string{
		"FuzzStructDecode": {
			"minimal":        `{"pattern":"TODO"}`,
			"every-field":    `{"pattern":"fix(me)?","max_count":10,"context":2,"ignore_case":true,"format":"json","paths":["src","docs/a.md"],"labels":{"team":"core","env":"prod"},"timeout":5000000000}`,
			"empty":          ``,
			"null":           `null`,
			"duplicate":      `{"pattern":"a","pattern":"b"}`,
			"case-folded":    `{"Pattern":"a"}`,
			"control":        `{"pattern":"a\u001bb"}`,
			"nul":            `{"pattern":"a\u0000b"}`,
			"traversal":      `{"pattern":"a","paths":["../etc"]}`,
			"option-path":    `{"pattern":"a","paths":["--pre=sh"]}`,
			"option-pattern": `{"pattern":"--pre=sh"}`,
			"wrong-types":    `{"pattern":1,"max_count":"5","context":-1,"ignore_case":"yes"}`,
			"big-number":     `{"pattern":"a","max_count":1e400}`,
			"labels-bad-key": `{"pattern":"a","labels":{"a b":"c"}}`,
			"trailing":       `{"pattern":"a"} {}`,
			"nested":         `{"pattern":"a","paths":[["x"]]}`,
		},
		"FuzzFlagsParse": {
			"empty":          ``,
			"flags-object":   `{"flags":{"max-count":5,"oneline":true,"format":"short","author":"Ann Lee","grep":["fix","bug"],"verbose":true,"since":"2024-01-02"},"args":["main","docs"]}`,
			"args-spellings": `{"args":["-n5","--format=medium","--author=-x","-since=2024-01-02","-v","-v","--grep","a","HEAD"]}`,
			"stdin":          `{"args":["-"],"stdin":"line one\nline two\n"}`,
			"dash-value":     `{"flags":{"author":"-Ann"},"args":["--grep=x"]}`,
			"undeclared":     `{"args":["--output=/tmp/x"]}`,
			"abbreviation":   `{"args":["--max=5"]}`,
			"glued-o":        `{"args":["-oProxyCommand=x"]}`,
			"bundled":        `{"args":["-vn5"]}`,
			"double-dash":    `{"args":["--","-x"]}`,
			"duplicate":      `{"flags":{"max-count":5,"max-count":6}}`,
			"case-folded":    `{"Flags":{"oneline":true}}`,
			"control":        `{"flags":{"grep":["a\u202eb"]}}`,
			"meta":           `{"flags":{"grep":["$(id)"]}}`,
			"too-many":       `{"args":["--grep","a","--grep","b","--grep","c","--grep","d"]}`,
			"negative":       `{"args":["-n","-1"]}`,
			"plus":           `{"args":["--max-count=+7"]}`,
			"at":             `{"args":["@file"]}`,
		},
		"FuzzApprovalEnvelope": {
			"genuine":         genuine,
			"zone-offset":     fuzzSeedEnvelope(func(a *Approval) { a.CreatedAt = fuzzNow.In(time.FixedZone("", 3600)) }),
			"escaped":         mustReplace(genuine, `"log"`, `"\u006cog"`),
			"reordered":       fuzzSeedReordered(),
			"args-changed":    mustReplace(genuine, `--max-count=5"`, `--max-count=500"`),
			"args-added":      mustReplace(genuine, `"main"]`, `"main","--output=/tmp/x"]`),
			"args-null":       fuzzSeedEnvelope(func(a *Approval) { a.Args = nil }),
			"reason-changed":  fuzzSeedEnvelope(func(a *Approval) { a.Reason = "deploy fix!" }),
			"expiry-extended": fuzzSeedEnvelope(func(a *Approval) { a.ExpiresAt = fuzzNow.Add(time.Hour) }),
			"extra-env":       strings.TrimSuffix(genuine, "}") + `,"env":{"LD_PRELOAD":"/tmp/x.so"}}`,
			"duplicate-args":  strings.TrimSuffix(genuine, "}") + `,"args":["rm"]}`,
			"case-folded":     mustReplace(genuine, `"args"`, `"Args"`),
			"trailing":        genuine + `{}`,
			"id-uppercase":    fuzzSeedEnvelope(func(a *Approval) { a.ID = "0190B7D2-4F3A-7C4E-8A1B-2C3D4E5F6A7B" }),
			"other-id":        fuzzSeedEnvelope(func(a *Approval) { a.ID = "0190b7d2-4f3a-7c4e-8a1b-2c3d4e5f6a7b" }),
			"digest-flipped":  fuzzSeedEnvelope(func(a *Approval) { a.Digest = strings.Repeat("0", 64) }),
			"command-changed": fuzzSeedEnvelope(func(a *Approval) { a.Command = "/bin/sh" }),
			"nul":             mustReplace(genuine, `"deploy fix"`, `"deploy\u0000fix"`),
			"not-object":      `[]`,
		},
	}
}

// mustReplace replaces the first old in s with new, and panics if s holds
// no old, so that a seed cannot silently equal the one it was made from.
func mustReplace(s, old, new string) string {
	if !strings.Contains(s, old) {
		panic(fmt.Sprintf("seed: %q not found", old))
	}
	return strings.Replace(s, old, new, 1)
}

// fuzzSeedFile is the content of a seed file in the go test corpus format.
func fuzzSeedFile(input string) []byte {
	return fmt.Appendf(nil, "go test fuzz v1\n[]byte(%q)\n", input)
}

// TestFuzzSeedCorpora checks that testdata/fuzz holds the seeds of
// fuzzSeeds, and rewrites them with -update. Files that fuzzing added
// (failing inputs, named by their hash) are left alone.
func TestFuzzSeedCorpora(t *testing.T) {
	for target, seeds := range fuzzSeeds() {
		dir := filepath.Join("testdata", "fuzz", target)
		if updateGolden() {
			require.NoError(t, os.MkdirAll(dir, 0o755))
			old, err := filepath.Glob(filepath.Join(dir, "seed-*"))
			require.NoError(t, err)
			for _, p := range old {
				require.NoError(t, os.Remove(p))
			}
		}
		for name, input := range seeds {
			path := filepath.Join(dir, "seed-"+name)
			want := fuzzSeedFile(input)
			if updateGolden() {
				require.NoError(t, os.WriteFile(path, want, 0o644))
				continue
			}
			got, err := os.ReadFile(path)
			require.NoError(t, err, "run go test -run TestFuzzSeedCorpora -update")
			assert.Equal(t, string(want), string(got), "%s is stale: run go test -run TestFuzzSeedCorpora -update", path)
		}
		files, err := filepath.Glob(filepath.Join(dir, "seed-*"))
		require.NoError(t, err)
		assert.Len(t, files, len(seeds), "%s holds seed files that fuzzSeeds does not list", dir)
	}
}
