package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/audit"
)

// TestAuditVerify_Unfinished: audit verify lists the calls whose intent
// no outcome follows, after the chain's head, and for a broken chain
// those before the break.
func TestAuditVerify_Unfinished(t *testing.T) {
	at := time.Date(2026, 11, 30, 12, 0, 7, 0, time.UTC)
	intent := func(trace, name, principal string) execgate.Event {
		return execgate.Event{Op: execgate.OpRun, Phase: execgate.PhaseIntent, TraceID: trace, Time: at, Name: name, Principal: principal}
	}
	outcome := func(trace string) execgate.Event {
		return execgate.Event{Op: execgate.OpRun, Phase: execgate.PhaseOutcome, TraceID: trace, Time: at, Termination: execgate.TerminationExit}
	}
	for _, tc := range []struct {
		name   string
		events []execgate.Event
		broken bool     // a line that is not JSON is appended
		code   int      // the exit code
		want   []string // the lines after the ok line, or all of stdout for a broken chain
	}{
		{"a trail whose every intent has its outcome lists nothing more",
			[]execgate.Event{intent("t1", "echo.run", "ci-bot"), outcome("t1")}, false, exitOK, nil},
		{"an intent with no outcome is listed with its seq, name, principal, time and trace",
			[]execgate.Event{intent("t1", "echo.run", "ci-bot"), outcome("t1"), intent("t2", "sleep.run", "alice")}, false, exitOK,
			[]string{"unfinished: seq 3: run sleep.run by alice at 2026-11-30T12:00:07Z, trace t2: started, no outcome recorded"}},
		{"several are listed in file order, and a name that could forge a line is quoted",
			[]execgate.Event{intent("t1", "a\nb", "ci-bot"), intent("t2", "echo.run", "ci-bot"), outcome("t2"), intent("t3", "echo.run", "bob")}, false, exitOK,
			[]string{`unfinished: seq 1: run "a\nb" by ci-bot at 2026-11-30T12:00:07Z, trace t1: started, no outcome recorded`,
				"unfinished: seq 4: run echo.run by bob at 2026-11-30T12:00:07Z, trace t3: started, no outcome recorded"}},
		{"a broken chain still lists the unfinished calls before the break",
			[]execgate.Event{intent("t1", "sleep.run", "ci-bot")}, true, exitFailed,
			[]string{"unfinished: seq 1: run sleep.run by ci-bot at 2026-11-30T12:00:07Z, trace t1: started, no outcome recorded"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			trail := filepath.Join(t.TempDir(), "audit.jsonl")
			chain, err := audit.OpenChain(trail, audit.ChainOptions{NoSync: true})
			require.NoError(t, err)
			for _, ev := range tc.events {
				require.NoError(t, chain.Audit(context.Background(), ev))
			}
			require.NoError(t, chain.Close())
			if tc.broken {
				f, err := os.OpenFile(trail, os.O_APPEND|os.O_WRONLY, 0)
				require.NoError(t, err)
				_, err = f.WriteString("not json\n")
				require.NoError(t, err)
				require.NoError(t, f.Close())
			}

			code, out, errOut := runCLI(t, "", "audit", "verify", trail)
			assert.Equal(t, tc.code, code, errOut)
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if tc.broken {
				assert.Contains(t, errOut, "broken:")
			} else {
				require.NotEmpty(t, lines)
				assert.Contains(t, lines[0], trail+": ok: ")
				lines = lines[1:]
			}
			var want []string
			for _, w := range tc.want {
				want = append(want, trail+": "+w)
			}
			if len(want) == 0 {
				assert.Empty(t, lines, out)
			} else {
				assert.Equal(t, want, lines)
			}
		})
	}
}

// TestE2E_KilledServeLeavesUnfinished: serve killed while a command runs
// leaves its intent with no outcome, which audit verify lists.
func TestE2E_KilledServeLeavesUnfinished(t *testing.T) {
	path := writeFile(t, "tools.yaml", reloadFile(sleepTool, callerToken))
	trail := writeFile(t, "audit.jsonl", "")
	p := startServe(t, "--config", path, "--http", "127.0.0.1:0", "--audit", trail)
	base := p.stderr.waitFor(t, regexp.MustCompile(`serving the HTTP API on (http://127\.0\.0\.1:\d+)`))
	go func() {
		req, err := http.NewRequest("POST", base+"/v1/tools/sleep.run", strings.NewReader(`{"args":["2"]}`))
		if err != nil {
			return
		}
		req.Header.Set("Authorization", "Bearer "+callerToken)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	waitForIntent(t, trail, "sleep.run")
	require.NoError(t, p.cmd.Process.Kill())
	<-p.exited

	code, out, errOut := runCLI(t, "", "audit", "verify", trail)
	require.Equal(t, exitOK, code, errOut)
	assert.Regexp(t, `(?m)^`+regexp.QuoteMeta(trail)+`: ok: 1 entries, head seq 1 sha256 [0-9a-f]{64}$`, out)
	assert.Regexp(t, `(?m)^`+regexp.QuoteMeta(trail)+`: unfinished: seq 1: run sleep\.run by ci-bot at \S+, trace [0-9a-f-]{36}: started, no outcome recorded$`, out)

	// A restarted server goes on with the same trail without a person's
	// help, and says what the previous one left unfinished.
	p = startServe(t, "--config", path, "--http", "127.0.0.1:0", "--audit", trail)
	p.stderr.waitFor(t, regexp.MustCompile(`(serving the HTTP API on http://127\.0\.0\.1:\d+)`))
	assert.Regexp(t, `holds a call that started and has no outcome.*run sleep\.run by ci-bot`, p.stderr.String())
	require.NoError(t, p.cmd.Process.Kill())
	<-p.exited

	// So does one whose trail ends in a torn line, as a full disk or a
	// crash in the middle of a write leaves it: the line is cut.
	f, err := os.OpenFile(trail, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"seq":2,"prev":"`)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	p = startServe(t, "--config", path, "--http", "127.0.0.1:0", "--audit", trail)
	p.stderr.waitFor(t, regexp.MustCompile(`(serving the HTTP API on http://127\.0\.0\.1:\d+)`))
	assert.Contains(t, p.stderr.String(), "ended in a torn line")
	code, _, errOut = runCLI(t, "", "audit", "verify", trail)
	require.Equal(t, exitOK, code, errOut)
}
