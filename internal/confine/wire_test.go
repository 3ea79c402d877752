package confine

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/bpf"
)

func sampleRequest() *Request {
	return &Request{
		Token: "00ff", Path: "/usr/bin/git",
		Argv:            []string{"/usr/bin/git", "log", "", "\xff not UTF-8"},
		Env:             []string{"A=1", "B="},
		Rules:           []Rule{{Path: "/usr", Access: AccessReadFile | AccessReadDir}, {Path: "/srv", Access: AccessWrite}},
		NetworkIsolated: true, ScopeAbstractUnix: true,
		Limits:     Limits{CPUSeconds: 1, AddressSpace: 2, Files: 3, FileSize: 4, Processes: 5},
		BestEffort: true,
		Dir:        "/srv/work",
	}
}

func TestRequestRoundTrip(t *testing.T) {
	for _, r := range []*Request{sampleRequest(), {Argv: []string{"x"}, PinnedFD: true}} {
		got, err := DecodeRequest(r.Encode())
		require.NoError(t, err)
		want := *r
		if want.Env == nil {
			want.Env = []string{}
		}
		assert.Equal(t, &want, got)
	}
}

func TestDecodeRequestRefusesAnythingElse(t *testing.T) {
	good := sampleRequest().Encode()
	for name, b := range map[string][]byte{
		"empty":         nil,
		"other magic":   append([]byte("\x00\x00\x00\x00\x00\x00\x00\x03abc"), good[8+len(requestMagic):]...),
		"trailing byte": append(append([]byte(nil), good...), 0),
	} {
		_, err := DecodeRequest(b)
		assert.Error(t, err, name)
	}
	// Every truncation is refused.
	for i := range good {
		_, err := DecodeRequest(good[:i])
		assert.Error(t, err, "truncated at %d", i)
	}
	// A forged count cannot make the decoder allocate beyond the input.
	var e encoder
	e.str(requestMagic)
	e.str("t")
	e.str("/p")
	e.bool(false)
	e.u64(1 << 60)
	_, err := DecodeRequest(e.b)
	assert.Error(t, err)
	// Unknown access bits, no argv, and a path with a pinned descriptor.
	for _, r := range []*Request{
		{Path: "/p", Argv: []string{"p"}, Rules: []Rule{{Path: "/", Access: 0x80}}},
		{Path: "/p", Argv: []string{"p"}, Rules: []Rule{{Path: "/", Access: 0}}},
		{Path: "/p"},
		{Path: "/p", Argv: []string{"p"}, Dir: "relative/dir"},
	} {
		_, err := DecodeRequest(r.Encode())
		assert.Error(t, err, "%+v", r)
	}
	b := (&Request{Path: "/p", PinnedFD: true, Argv: []string{"p"}}).Encode()
	_, err = DecodeRequest(b)
	assert.Error(t, err)
}

func TestStatusRecords(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, writeStatus(&b, statusUnapplied, UnappliedNetwork))
	require.NoError(t, writeStatus(&b, statusReady, ""))
	require.NoError(t, writeStatus(&b, statusError, "exec failed"))
	rep := readReport(&b)
	assert.True(t, rep.Ready)
	assert.Equal(t, []string{UnappliedNetwork}, rep.Unapplied)
	assert.EqualError(t, rep.Err, "exec failed")

	assert.Equal(t, Report{}, readReport(bytes.NewReader(nil)))
	assert.Error(t, readReport(bytes.NewReader([]byte{'r', 0, 0, 0, 9})).Err)
	assert.Error(t, readReport(bytes.NewReader([]byte{'x', 0, 0, 0, 0})).Err)
}

// FuzzDecodeRequest feeds the helper's decoder arbitrary bytes, as a
// forger who controls the request pipe could: it must never panic, and
// whatever it accepts must encode back to the same bytes.
func FuzzDecodeRequest(f *testing.F) {
	f.Add(sampleRequest().Encode())
	f.Add((&Request{Argv: []string{"x"}, PinnedFD: true}).Encode())
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeRequest(b)
		if err != nil {
			return
		}
		if !bytes.Equal(r.Encode(), b) {
			t.Fatalf("accepted %q, which encodes back as %q", b, r.Encode())
		}
	})
}

// A request carries the system call filters whole, and a helper refuses
// one that carries too many or an empty one.
func TestRequest_FiltersRoundTrip(t *testing.T) {
	filters := [][]bpf.RawInstruction{
		{{Op: 0x20, K: 4}, {Op: 0x15, Jt: 1, Jf: 0, K: 0xc000003e}, {Op: 0x06, K: 0x80000000}, {Op: 0x06, K: 0x7fff0000}},
		{{Op: 0x06, K: 0x7fff0000}},
	}
	req := Request{Token: "t", Path: "/bin/true", Argv: []string{"/bin/true"}, Filters: filters}
	got, err := DecodeRequest(req.Encode())
	require.NoError(t, err)
	assert.Equal(t, filters, got.Filters)

	tooMany := make([][]bpf.RawInstruction, maxFilters+1)
	for i := range tooMany {
		tooMany[i] = []bpf.RawInstruction{{Op: 0x06}}
	}
	for _, bad := range [][][]bpf.RawInstruction{{nil}, tooMany} {
		req.Filters = bad
		_, err := DecodeRequest(req.Encode())
		assert.Error(t, err, "%d filters", len(bad))
	}
}
