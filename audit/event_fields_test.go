package audit_test

import (
	"context"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/audit"
	"github.com/execgate/execgate/internal/inventory"
)

// eventFields returns the names of the fields of execgate.Event.
func eventFields() []string {
	return inventory.Leaves(reflect.TypeFor[execgate.Event]())
}

// eventJSONNames returns the JSON names of the fields of execgate.Event,
// in order.
func eventJSONNames() []string {
	t := reflect.TypeFor[execgate.Event]()
	var out []string
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		out = append(out, name)
	}
	return out
}

// events keeps every Event it is handed.
type events struct {
	mu  sync.Mutex
	all []execgate.Event
}

func (e *events) Audit(_ context.Context, ev execgate.Event) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.all = append(e.all, ev)
	return nil
}

// Every field of an Event is filled by some call through the Executor: a
// field added to Event that no call sets fails here, until the Executor
// sets it where a call knows it.
func TestEvent_EveryFieldIsSetBySomeCall(t *testing.T) {
	trail := &events{}
	policy := execgate.PolicyFunc(func(_ context.Context, req execgate.Request) (execgate.Decision, error) {
		switch req.Name {
		case "echo.denied":
			return execgate.Decision{Action: execgate.ActionDeny, Rule: "no-denied"}, nil
		case "echo.held":
			return execgate.Decision{Action: execgate.ActionRequireApproval, Rule: "hold"}, nil
		}
		return execgate.Decision{Action: execgate.ActionAllow, Rule: "allow-echo", Grant: "grant-1"}, nil
	})
	secret := spec("echo.secret")
	secret.SensitiveArgs = true
	loud := spec("echo.loud")
	loud.MaxOutput = 4
	x, rec := newGate(t, execgate.Config{Auditor: trail, Policy: policy, Now: newClock().Now},
		spec("echo.say"), spec("echo.denied"), spec("echo.held"), secret, loud)
	rec.On("echo.loud", execgate.Outcome{
		Termination: execgate.TerminationSignal, Signal: "SIGKILL", PID: 42,
		Stdout: []byte("more than four"), Stderr: []byte("also more"), Unconfined: []string{"network"},
		OutputIncomplete: true,
		Connections: []execgate.Connection{
			{Host: "example.com", Port: 443, Kind: "connect", Allowed: true, Address: "192.0.2.1:443", Error: "connection refused", BytesSent: 1, BytesReceived: 2},
			{Host: "example.org", Port: 80, Kind: "http", Refusal: `"example.org:80" is not on the allowlist`},
		},
		ConnectionsDropped: 3,
	})
	ctx := execgate.WithPrincipal(context.Background(), "agent-7")
	approver := execgate.WithPrincipal(context.Background(), "alice")
	in := json.RawMessage(`{"args":["a"],"stdin":"some stdin"}`)

	_, err := x.Run(ctx, "echo.loud", in) // a process, with everything an outcome can hold
	require.NoError(t, err)
	_, err = x.Run(ctx, "echo.secret", in) // an argv kept out of the trail
	require.NoError(t, err)
	_, err = x.Run(ctx, "echo.denied", in) // a refusal
	require.Error(t, err)
	ap, err := x.Propose(ctx, "echo.held", in, "please")
	require.NoError(t, err)
	_, err = x.Execute(approver, ap)
	require.NoError(t, err)
	ap, err = x.Propose(ctx, "echo.held", in, "please")
	require.NoError(t, err)
	_, err = x.Reject(approver, ap.ID)
	require.NoError(t, err)
	require.NoError(t, x.RecordRefusal(ctx, execgate.Refusal{
		Route: "POST /v1/tools/echo.say", Name: "echo.say", Kind: execgate.ErrorKindRequest, Reason: "body too large",
	}))

	set := map[string]bool{}
	for _, ev := range trail.all {
		for _, f := range inventory.Diff(ev, execgate.Event{}) {
			set[f] = true
		}
		for _, c := range ev.Connections { // a list of structs differs from none as a whole
			for _, f := range inventory.Diff(c, execgate.Connection{}) {
				set["Connections[]."+f] = true
			}
		}
	}
	for _, f := range eventFields() {
		assert.True(t, set[f], "no call through the Executor sets Event.%s", f)
	}
}

// A SlogSink logs every field of an Event, under its name in an Entry's
// JSON, and its documentation names them all, in that order.
func TestSlogSink_LogsEveryEventField(t *testing.T) {
	c := &capture{}
	sink := audit.NewSlogSink(slog.New(c))
	var ev execgate.Event
	inventory.Fill(&ev, 1)
	require.NoError(t, sink.Audit(context.Background(), ev))
	// rejected is logged for a Reject that was not refused.
	ev.Op, ev.Error = execgate.OpReject, ""
	require.NoError(t, sink.Audit(context.Background(), ev))

	logged := map[string]bool{"time": true} // the record's own time
	for _, r := range c.all() {
		for k := range attrs(r) {
			logged[k] = true
		}
	}
	for _, name := range eventJSONNames() {
		assert.True(t, logged[name], "SlogSink does not log the Event field %q", name)
	}

	documented := slogSinkDocFields(t)
	want := slices.DeleteFunc(eventJSONNames(), func(n string) bool { return n == "time" })
	assert.Equal(t, want, documented, "the SlogSink documentation lists the attributes in the Event's order")
}

// slogSinkDocFields reads the attribute list out of the SlogSink doc
// comment: the names after "JSON:" up to the end of the sentence.
func slogSinkDocFields(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "slog.go", nil, parser.ParseComments)
	require.NoError(t, err)
	var doc string
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.TYPE && g.Specs[0].(*ast.TypeSpec).Name.Name == "SlogSink" {
			doc = g.Doc.Text()
		}
	}
	_, rest, ok := strings.Cut(doc, "JSON:")
	require.True(t, ok, "the SlogSink doc lists its attributes after \"JSON:\"")
	list, _, _ := strings.Cut(rest, ".")
	var out []string
	for _, w := range strings.FieldsFunc(list, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' }) {
		if w != "and" {
			out = append(out, w)
		}
	}
	return out
}
