package audit_test

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"sync"
	"syscall"
	"time"

	"github.com/execgate/execgate/audit"
)

// memFile is an in-memory file opened for appending, with the failures of
// a real one: a disk of limited size, on which a write that does not fit
// writes what fits and then fails with ENOSPC, as write(2) does (a short
// write, then ENOSPC on the rest); and injected errors for the next
// writes, syncs and truncations.
type memFile struct {
	mu       sync.Mutex
	data     []byte
	limit    int   // bytes the disk holds; < 0: no limit
	limitErr error // what a write past limit fails with; nil: ENOSPC

	writeErr    error // if set, each write writes half of what it is given and fails with it
	syncErr     error // if set, each sync fails with it
	truncateErr error // if set, each truncation fails with it
	writes      int
	closed      bool
}

var _ audit.ChainFile = (*memFile)(nil)

func newMemFile(content []byte) *memFile {
	return &memFile{data: bytes.Clone(content), limit: -1}
}

// The errors *os.File returns for a full disk and a failing one.
var (
	errENOSPC = &fs.PathError{Op: "write", Path: "audit.jsonl", Err: syscall.ENOSPC}
	errEIO    = &fs.PathError{Op: "write", Path: "audit.jsonl", Err: syscall.EIO}
)

func (f *memFile) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes++
	if f.closed {
		return 0, fs.ErrClosed
	}
	if f.writeErr != nil {
		n := len(p) / 2
		f.data = append(f.data, p[:n]...)
		return n, f.writeErr
	}
	if f.limit >= 0 && len(f.data)+len(p) > f.limit {
		n := max(f.limit-len(f.data), 0)
		f.data = append(f.data, p[:n]...)
		if f.limitErr != nil {
			return n, f.limitErr
		}
		return n, errENOSPC
	}
	f.data = append(f.data, p...)
	return len(p), nil
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if off >= int64(len(f.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) Truncate(size int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.truncateErr != nil {
		return f.truncateErr
	}
	if size < 0 || size > int64(len(f.data)) {
		return errors.New("memFile: truncate beyond the end")
	}
	f.data = f.data[:size]
	return nil
}

func (f *memFile) Sync() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.syncErr
}

func (f *memFile) Stat() (fs.FileInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return memInfo(len(f.data)), nil
}

func (f *memFile) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	return nil
}

// set changes the file's behavior under its lock.
func (f *memFile) set(change func(f *memFile)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	change(f)
}

func (f *memFile) bytes() []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return bytes.Clone(f.data)
}

type memInfo int

func (n memInfo) Name() string     { return "audit.jsonl" }
func (n memInfo) Size() int64      { return int64(n) }
func (memInfo) Mode() fs.FileMode  { return 0o600 }
func (memInfo) ModTime() time.Time { return time.Time{} }
func (memInfo) IsDir() bool        { return false }
func (memInfo) Sys() any           { return nil }
