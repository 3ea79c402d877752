package audit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/audit"
	"github.com/execgate/execgate/execgatetest"
)

// Invariant 11, the record is true, for the audit trail: a call's intent
// is recorded before its process starts (no record, no start), its
// outcome after; a failed write leaves the trail ending at its last whole
// entry; a crash leaves an intent without an outcome, which Verify
// reports, and a torn last line, which a restarted Chain cuts.

// memChain returns a Chain on a memFile that already holds n entries.
func memChain(t *testing.T, n int) (*audit.Chain, *memFile) {
	t.Helper()
	f := newMemFile(join(chainBytes(t, n)...))
	if n == 0 {
		f = newMemFile(nil)
	}
	c, err := audit.OpenChainFile(f, audit.ChainOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c, f
}

// countIntents returns how many entries of a chain file are intents.
func countIntents(t *testing.T, data []byte) int {
	t.Helper()
	n := 0
	for _, line := range bytes.SplitAfter(data, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		if decode(t, line).Phase == execgate.PhaseIntent {
			n++
		}
	}
	return n
}

// Invariant 11 of DESIGN.md.
func TestRecordIsTrue_FailedWriteLeavesWholeEntries(t *testing.T) {
	tests := []struct {
		name     string
		fail     func(f *memFile, size int) // makes the next Audit fail
		cause    error
		cutFails bool // the file cannot be cut back either, until recover
	}{
		{
			// The common full disk: write(2) takes what fits, then ENOSPC.
			name:  "a short write on a full disk is cut back to the last whole entry",
			fail:  func(f *memFile, size int) { f.limit = size + 40 },
			cause: syscall.ENOSPC,
		},
		{
			name:  "a disk full to the byte writes nothing and leaves nothing",
			fail:  func(f *memFile, size int) { f.limit = size },
			cause: syscall.ENOSPC,
		},
		{
			name:  "an I/O error after part of the entry is cut back too",
			fail:  func(f *memFile, _ int) { f.writeErr = errEIO },
			cause: syscall.EIO,
		},
		{
			name:  "an entry written whole whose sync failed is cut, since it may not be on the disk",
			fail:  func(f *memFile, _ int) { f.syncErr = errEIO },
			cause: syscall.EIO,
		},
		{
			name: "a cut that fails is made before the next entry is written",
			fail: func(f *memFile, size int) {
				f.limit = size + 40
				f.truncateErr = errEIO
			},
			cause:    syscall.ENOSPC,
			cutFails: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			c, f := memChain(t, 2)
			before, head := f.bytes(), c.Head()

			f.set(func(f *memFile) { tt.fail(f, len(before)) })
			err := c.Audit(ctx, event(3))
			require.ErrorIs(t, err, tt.cause, "the failing Audit reports it, so its call is refused")
			require.ErrorIs(t, c.Ready(ctx), tt.cause, "and Ready too, so the calls after it are refused")
			assert.Equal(t, head, c.Head(), "the head stays at the last recorded entry")
			if tt.cutFails {
				assert.Greater(t, len(f.bytes()), len(before), "the torn bytes are still there")
			} else {
				assert.Equal(t, before, f.bytes(), "the file ends at its last whole entry")
			}

			// Still failing: each Audit tries again, and writes nothing
			// after a torn line.
			require.Error(t, c.Audit(ctx, event(3)))
			if !tt.cutFails {
				assert.Equal(t, before, f.bytes())
			}

			// The disk is fine again: the next Audit (after the cut, if
			// one is owed) records, with no reopening.
			f.set(func(f *memFile) { f.limit, f.writeErr, f.syncErr, f.truncateErr = -1, nil, nil, nil })
			require.NoError(t, c.Audit(ctx, event(3)))
			require.NoError(t, c.Ready(ctx))
			assert.Equal(t, uint64(3), c.Head().Seq)
			after := f.bytes()
			assert.Equal(t, before, after[:len(before)], "nothing before the new entry changed")
			got, err := audit.VerifyHead(bytes.NewReader(after))
			require.NoError(t, err)
			assert.Equal(t, c.Head(), got)
		})
	}

	t.Run("Close makes a cut that is owed", func(t *testing.T) {
		c, f := memChain(t, 2)
		before := f.bytes()
		f.set(func(f *memFile) { f.limit, f.truncateErr = len(before)+40, errEIO })
		require.Error(t, c.Audit(context.Background(), event(3)))
		f.set(func(f *memFile) { f.truncateErr = nil })
		require.NoError(t, c.Close())
		assert.Equal(t, before, f.bytes())
	})

	t.Run("a NewChain writer that took nothing is tried again", func(t *testing.T) {
		w := &refusingWriter{}
		c := audit.NewChain(w, audit.ChainOptions{})
		w.refuse.Store(true)
		require.ErrorIs(t, c.Audit(context.Background(), event(1)), syscall.ENOSPC)
		require.Error(t, c.Ready(context.Background()))
		w.refuse.Store(false)
		require.NoError(t, c.Audit(context.Background(), event(1)))
		require.NoError(t, c.Ready(context.Background()))
		require.NoError(t, audit.Verify(bytes.NewReader(w.buf.Bytes())))
	})
}

// refusingWriter fails every write, writing nothing, while refuse is set.
type refusingWriter struct {
	refuse atomic.Bool
	buf    bytes.Buffer
}

func (w *refusingWriter) Write(p []byte) (int, error) {
	if w.refuse.Load() {
		return 0, errENOSPC
	}
	return w.buf.Write(p)
}

// After a full disk, calls run again as soon as there is space, with no
// restart; until then nothing starts and no approval is burnt.
//
// Invariant 11 of DESIGN.md.
func TestRecordIsTrue_FullDiskRecoversWithoutRestart(t *testing.T) {
	ctx := context.Background()
	c, f := memChain(t, 0)
	x, rec := newGate(t, execgate.Config{Auditor: c})
	_, err := x.Run(ctx, "echo.say", nil)
	require.NoError(t, err)
	ap, err := x.Propose(ctx, "echo.say", json.RawMessage(`{"args":["later"]}`), "")
	require.NoError(t, err)

	full := f.bytes()
	f.set(func(f *memFile) { f.limit = len(full) + 100 }) // room for a part of an intent
	var ae *execgate.AuditError
	_, err = x.Run(ctx, "echo.say", nil)
	require.ErrorAs(t, err, &ae, "no record, no start")
	require.ErrorIs(t, err, syscall.ENOSPC)
	_, err = x.Execute(ctx, ap)
	require.ErrorAs(t, err, &ae, "Ready refuses before the approval is taken")
	assert.Equal(t, 1, rec.Count(), "nothing started while the disk was full")
	assert.Equal(t, full, f.bytes(), "the trail ends at its last whole entry")

	// Space again. Ready still reports the failure, so the first call is
	// refused, but the Executor records that refusal: the write succeeds
	// and clears the failure, and the next calls run.
	f.set(func(f *memFile) { f.limit = -1 })
	_, err = x.Run(ctx, "echo.say", nil)
	require.ErrorAs(t, err, &ae)
	require.NoError(t, c.Ready(ctx), "the refusal's own record was the write that recovered")
	_, err = x.Run(ctx, "echo.say", nil)
	require.NoError(t, err)
	_, err = x.Execute(ctx, ap)
	require.NoError(t, err, "the approval refused during the outage still executes")
	assert.Equal(t, 3, rec.Count())

	rep, err := audit.VerifyReport(bytes.NewReader(f.bytes()))
	require.NoError(t, err)
	assert.Empty(t, rep.Unfinished)
	assert.Equal(t, uint64(rec.Count()), rep.Intents, "an intent per process that started")
	last := decode(t, bytes.SplitAfter(f.bytes(), []byte("\n"))[rep.Head.Seq-1])
	assert.Equal(t, execgate.OpExecute, last.Op)
}

// With many calls in flight, however writes fail, exactly the processes
// whose intent is in the trail were started.
//
// Invariant 11 of DESIGN.md.
func TestRecordIsTrue_StartedProcessesEqualIntents(t *testing.T) {
	tests := []struct {
		name    string
		workers int
		fail    func(f *memFile) // applied once the first calls are recorded
		heal    bool             // the disk gets space again half way
	}{
		{"a disk that fills up, 8 callers", 8, func(f *memFile) { f.limit = len(f.data) + 5000 }, false},
		{"a disk that fills up, 32 callers", 32, func(f *memFile) { f.limit = len(f.data) + 5000 }, false},
		{"a disk that fails with EIO mid-write, 16 callers", 16, func(f *memFile) {
			f.limit, f.limitErr = len(f.data)+3000, errEIO
		}, false},
		{"a failing sync, 16 callers", 16, func(f *memFile) { f.syncErr = errEIO }, false},
		{"a disk that fills up and gets space back while calls are in flight, 32 callers", 32, func(f *memFile) {
			f.limit = len(f.data) + 5000
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			c, f := memChain(t, 0)
			var started atomic.Int64
			rec := execgatetest.NewRecorder()
			a, err := execgate.NewAllowlist(spec("echo.say"))
			require.NoError(t, err)
			x, err := execgate.NewExecutor(execgate.Config{
				Allowlist: a, Auditor: c,
				ExecFn: func(ctx context.Context, inv execgate.Invocation) execgate.Outcome {
					started.Add(1)
					return rec.Exec(ctx, inv)
				},
			})
			require.NoError(t, err)
			for range 3 {
				_, err := x.Run(ctx, "echo.say", nil)
				require.NoError(t, err)
			}
			f.set(tt.fail)

			const calls = 40
			var ok, refused atomic.Int64
			var wg sync.WaitGroup
			for w := range tt.workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range calls {
						if tt.heal && w == 0 && i == calls/2 {
							f.set(func(f *memFile) { f.limit = -1 })
						}
						_, err := x.Run(ctx, "echo.say", fmt.Appendf(nil, `{"args":["%d-%d"]}`, w, i))
						var ae *execgate.AuditError
						switch {
						case err == nil:
							ok.Add(1)
						case errors.As(err, &ae):
							refused.Add(1)
						default:
							t.Errorf("unexpected error: %v", err)
						}
					}
				}()
			}
			wg.Wait()

			data := f.bytes()
			rep, err := audit.VerifyReport(bytes.NewReader(data))
			require.NoError(t, err, "the trail is whole entries only")
			assert.Equal(t, c.Head(), rep.Head)
			assert.Equal(t, int(started.Load()), countIntents(t, data), "started processes = intent entries")
			assert.Equal(t, uint64(started.Load()), rep.Intents)
			assert.Equal(t, started.Load(), 3+ok.Load(), "a call ran exactly when it was not refused")
			assert.Positive(t, refused.Load(), "the failure refused calls")
			if tt.heal {
				assert.Greater(t, ok.Load(), int64(0), "calls ran again once there was space")
			}
			// A started call whose outcome was lost is listed as such.
			assert.LessOrEqual(t, len(rep.Unfinished), int(started.Load()))
		})
	}
}

// A real full file system: tmpfs of 64 KiB. Needs root; the injected
// failures above prove the same without it.
//
// Invariant 11 of DESIGN.md.
func TestRecordIsTrue_RealFullDisk(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount: %v: %s", err, out)
		}
	})
	filler := filepath.Join(dir, "filler")
	require.NoError(t, os.WriteFile(filler, make([]byte, 16<<10), 0o600))

	path := filepath.Join(dir, "audit.jsonl")
	c, err := audit.OpenChain(path, audit.ChainOptions{})
	require.NoError(t, err)
	defer c.Close()
	x, rec := newGate(t, execgate.Config{Auditor: c})
	ctx := context.Background()

	var ae *execgate.AuditError
	var full error
	for range 1000 {
		if _, err := x.Run(ctx, "echo.say", json.RawMessage(`{"args":["filling the disk"]}`)); err != nil {
			require.ErrorAs(t, err, &ae)
			full = err
			break
		}
	}
	require.ErrorIs(t, full, syscall.ENOSPC, "the disk filled up")
	started := rec.Count()
	rep, err := verifyFile(path)
	require.NoError(t, err, "a full disk leaves whole entries only")
	assert.Equal(t, uint64(started), rep.Intents, "started processes = intent entries")
	assert.Equal(t, c.Head(), rep.Head)

	_, err = x.Run(ctx, "echo.say", nil)
	require.ErrorAs(t, err, &ae, "refused while the disk is full")
	assert.Equal(t, started, rec.Count())

	// Space again, no restart. If Ready still reports the failure (the
	// last write failed), the first call is refused and its record is the
	// write that recovers; if a small refusal record still fit on the
	// full disk, the failure is already cleared. Either way the second
	// call at the latest runs.
	require.NoError(t, os.Remove(filler))
	if _, err = x.Run(ctx, "echo.say", nil); err != nil {
		require.ErrorAs(t, err, &ae)
		require.NoError(t, c.Ready(ctx), "the refusal's record recovered the chain")
		_, err = x.Run(ctx, "echo.say", nil)
	}
	require.NoError(t, err)
	assert.Equal(t, started+1, rec.Count())
	require.NoError(t, c.Close())

	rep, err = verifyFile(path)
	require.NoError(t, err)
	assert.Equal(t, uint64(rec.Count()), rep.Intents)
	// The entry the disk had no room for was an intent (that call was
	// refused) or the outcome of a call that had started (listed now).
	assert.LessOrEqual(t, len(rep.Unfinished), 1)
	c2, err := audit.OpenChain(path, audit.ChainOptions{})
	require.NoError(t, err)
	assert.Zero(t, c2.Recovery().TornBytes)
	require.NoError(t, c2.Close())
}

// A gate that dies while a process runs leaves its intent and no outcome:
// the file still verifies, VerifyReport names the call, and a restarted
// Chain reports it and goes on appending.
//
// Invariant 11 of DESIGN.md.
func TestRecordIsTrue_CrashLeavesAnUnfinishedIntent(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	c, err := audit.OpenChain(path, audit.ChainOptions{})
	require.NoError(t, err)
	defer c.Close()

	// The ExecFn takes what the disk holds while the process runs: what a
	// crash at that moment would leave.
	var crashed []byte
	a, err := execgate.NewAllowlist(spec("echo.say"))
	require.NoError(t, err)
	x, err := execgate.NewExecutor(execgate.Config{
		Allowlist: a, Auditor: c,
		ExecFn: func(context.Context, execgate.Invocation) execgate.Outcome {
			crashed, err = os.ReadFile(path)
			require.NoError(t, err)
			return execgate.Outcome{}
		},
	})
	require.NoError(t, err)
	ctx := execgate.WithPrincipal(context.Background(), "alice")
	_, err = x.Run(ctx, "nope", nil) // a refusal before it: an outcome only
	require.Error(t, err)
	res, err := x.Run(ctx, "echo.say", json.RawMessage(`{"args":["x"]}`))
	require.NoError(t, err)
	require.NoError(t, c.Close())

	require.NoError(t, audit.Verify(bytes.NewReader(crashed)), "an unfinished intent is not a broken chain")
	rep, err := audit.VerifyReport(bytes.NewReader(crashed))
	require.NoError(t, err)
	require.Len(t, rep.Unfinished, 1)
	u := rep.Unfinished[0]
	assert.Equal(t, uint64(2), u.Seq)
	assert.Equal(t, res.ID, u.TraceID)
	assert.Equal(t, execgate.OpRun, u.Op)
	assert.Equal(t, "echo.say", u.Name)
	assert.Equal(t, "alice", u.Principal)
	assert.False(t, u.Time.IsZero())
	assert.Equal(t, uint64(1), rep.Intents)
	assert.Equal(t, uint64(1), rep.Outcomes)

	// The whole file, as it ended, has the outcome: nothing unfinished.
	rep, err = verifyFile(path)
	require.NoError(t, err)
	assert.Empty(t, rep.Unfinished)

	// Restart on the crashed file, with the outcome's write torn half way.
	lines := readLines(t, path)
	outcome := lines[len(lines)-1]
	crashedPath := filepath.Join(dir, "crashed.jsonl")
	for _, opts := range []audit.ChainOptions{{}, {TailOnly: true}} {
		require.NoError(t, os.WriteFile(crashedPath, append(bytes.Clone(crashed), outcome[:len(outcome)/2]...), 0o600))
		c2, err := audit.OpenChain(crashedPath, opts)
		require.NoError(t, err, "a restarted server goes on by itself")
		r := c2.Recovery()
		assert.Equal(t, int64(len(outcome)/2), r.TornBytes)
		if opts.TailOnly {
			assert.Nil(t, r.Unfinished, "TailOnly does not read the file")
		} else {
			assert.Equal(t, []audit.Unfinished{u}, r.Unfinished)
		}
		require.NoError(t, c2.Close())
	}
}

// Invariant 11 of DESIGN.md.
func TestRecordIsTrue_RestartCutsATornLastLine(t *testing.T) {
	lines := chainBytes(t, 4)
	prefix := join(lines[:3]...)
	next := bytes.TrimSuffix(lines[3], []byte("\n"))
	zeros := func(n int) []byte { return make([]byte, n) }
	tests := []struct {
		name   string
		prefix []byte
		torn   []byte
	}{
		{"a short write on a full disk: half an entry", prefix, next[:len(next)/2]},
		{"a write cut just before its newline", prefix, next},
		{"a write cut after its first byte", prefix, next[:1]},
		{"NUL bytes where a crash lost the data", prefix, zeros(300)},
		{"NUL bytes, then the end of the entry and its newline: not JSON", prefix, append(zeros(100), lines[3][100:]...)},
		{"a newline-ended line that is not JSON", prefix, []byte("{\"seq\":4,\"prev\n")},
		{"the first entry of a file, torn", nil, lines[0][:40]},
		{"a file of NUL bytes only", nil, zeros(512)},
	}
	for _, tt := range tests {
		for _, opts := range []audit.ChainOptions{{}, {TailOnly: true}} {
			t.Run(fmt.Sprintf("%s, tail only %v", tt.name, opts.TailOnly), func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "audit.jsonl")
				file := append(bytes.Clone(tt.prefix), tt.torn...)
				require.NoError(t, os.WriteFile(path, file, 0o600))
				want, err := audit.VerifyHead(bytes.NewReader(tt.prefix))
				require.NoError(t, err)

				c, err := audit.OpenChain(path, opts)
				require.NoError(t, err, "a torn last line does not stop a restart")
				r := c.Recovery()
				assert.Equal(t, int64(len(tt.torn)), r.TornBytes, "it says how much it cut")
				assert.Equal(t, tt.torn, r.Torn)
				assert.Equal(t, want, c.Head(), "the chain goes on from the last whole entry")
				require.NoError(t, c.Audit(context.Background(), event(9)))
				require.NoError(t, c.Close())

				after, err := os.ReadFile(path)
				require.NoError(t, err)
				assert.Equal(t, string(tt.prefix), string(after[:len(tt.prefix)]), "whole entries are kept as they were")
				got, err := audit.VerifyHead(bytes.NewReader(after))
				require.NoError(t, err)
				assert.Equal(t, want.Seq+1, got.Seq)
			})
		}
	}
}
