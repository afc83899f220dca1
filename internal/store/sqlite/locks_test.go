package sqlite

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/nexa-run/nexa/internal/state"
)

// lockProbeEnv names the store file TestLockProbeProcess probes.
const lockProbeEnv = "NEXA_TEST_LOCK_PROBE"

// SQLite's unix locks on the database file: a connection in WAL mode keeps
// a read lock on the shared range for as long as it is open, which is how
// other processes know the file is in use (no one may then take the file
// out of WAL mode or treat itself as its last user).
const (
	sqliteSharedFirst = 0x40000000 + 2
	sqliteSharedSize  = 510
)

// TestSavesKeepSQLitesLocks: a save must not drop the POSIX locks SQLite's
// connections hold on the store file. Closing any descriptor of a file
// releases every POSIX lock the process holds on it, so a check that opened
// and closed the file before each save (as guard once did) silently
// unlocked the store for every other process. A second process probes the
// shared range after saves: it must find it locked.
func TestSavesKeepSQLitesLocks(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a process")
	}
	s, path := openTemp(t)
	ctx := context.Background()
	st := newRun("locked", 2, 1)
	if err := s.Create(ctx, st); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		st.Messages = append(st.Messages, st.Messages[0])
		st.Messages[len(st.Messages)-1].Seq = len(st.Messages) - 1
		if err := s.Save(ctx, st, state.Delta{Messages: st.Messages[len(st.Messages)-1:]}); err != nil {
			t.Fatalf("save %d: %v", i, err)
		}
	}
	if _, err := s.Load(ctx, "locked"); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockProbeProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), lockProbeEnv+"="+path)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		t.Fatalf("another process could lock the shared range of the store file after saves: this process's locks were dropped\n%s", out)
	case errors.As(err, &ee) && ee.ExitCode() == 4:
		// locked, as it must be
	default:
		t.Fatalf("lock probe: %v\n%s", err, out)
	}
}

// TestLockProbeProcess is the second process of TestSavesKeepSQLitesLocks:
// it exits 0 when it can write-lock the shared range of the store file, 4
// when another process holds a lock there.
func TestLockProbeProcess(t *testing.T) {
	path := os.Getenv(lockProbeEnv)
	if path == "" {
		t.Skip("helper process for TestSavesKeepSQLitesLocks")
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0, Start: sqliteSharedFirst, Len: sqliteSharedSize}
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &lk); err != nil {
		if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EACCES) {
			os.Exit(4)
		}
		t.Fatal(err)
	}
	os.Exit(0)
}
