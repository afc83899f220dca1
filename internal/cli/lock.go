package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/nexa-run/nexa/internal/runtime"
)

// errRunBusy is returned when another live process holds a run's lock.
var errRunBusy = errors.New("run is busy")

// lockRun takes an exclusive, non-blocking lock on one run for as long as
// this process drives or changes it. The store's compare-and-set already
// guarantees that two executors never both execute a call; the lock adds
// that a second process does not even start (and, for example, declare a
// call unknown while the first one is still running it). The kernel drops
// the lock when the process dies, so a crashed run is never left locked.
func lockRun(storePath, runID string) (release func(), err error) {
	dir := filepath.Join(filepath.Dir(storePath), "locks")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("lock run %s: %w", runID, err)
	}
	path := filepath.Join(dir, runID+".lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock run %s: %w", runID, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: another nexa process is working on run %s right now; wait for it to stop, then try again", errRunBusy, runID)
		}
		return nil, fmt.Errorf("lock run %s: %w", runID, err)
	}
	return func() {
		// The file stays: removing it would race with a process that
		// opened it and is about to lock it.
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// busyError is the user-facing error of a locked run (exit 7: another
// executor has the run; nothing was written).
func busyError(err error) error {
	return &runtime.Error{Code: runtime.CodeCheckpointConflict, Message: err.Error(), Err: err}
}
