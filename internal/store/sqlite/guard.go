package sqlite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
)

// ErrTampered: the store file was removed, replaced or overwritten by
// something other than SQLite since Open (a tool that runs with the user's
// rights can do that). Nothing more is written to it; the caller must not
// report the write as done.
var ErrTampered = errors.New("the store file was changed outside nexa")

// headerProblem reads the database file's header through fd and says what
// is wrong with it for a SQLite database in WAL mode, worded to follow the
// file's path, or "" when nothing is.
func headerProblem(fd int) string {
	var head [100]byte
	n, err := syscall.Pread(fd, head[:], 0)
	switch {
	case err != nil:
		return fmt.Sprintf("cannot be read: %v", err)
	case n < len(head):
		return "was truncated (no SQLite header)"
	case !bytes.Equal(head[:len(sqliteMagic)], sqliteMagic):
		return "was overwritten (it no longer starts with a SQLite header)"
	case head[18] != 2 || head[19] != 2:
		return "was overwritten (its header no longer says WAL mode)"
	}
	return ""
}

// sqliteMagic starts every SQLite database file.
var sqliteMagic = []byte("SQLite format 3\x00")

// fileID identifies the store file at Open: a file put in its place later,
// even with the same content, is another file.
type fileID struct {
	dev, ino uint64
}

// guard checks, before a write, that the file SQLite writes to is still the
// one Open verified: the same file (device and inode) at the path, still
// starting with a SQLite header that says WAL mode (which Open set). A tool
// that overwrote, truncated, deleted or replaced the file is caught here,
// so the write fails instead of landing in a broken store and being
// reported as saved. deep adds SQLite's quick_check (a read of every page,
// in the size of the store), which catches damage behind an intact header;
// the runtime asks for it (state.Delta.Verify) when it saves a run that
// stops after something that could write to the file ran. It is not run
// on every stop: its cost grows with the whole store, not with the run.
func (s *SQLite) guard(ctx context.Context, deep bool) error {
	// A stat of the path and a pread of the descriptor Open kept: a save
	// runs this every time, and two system calls are all it needs.
	var st syscall.Stat_t
	err := syscall.Stat(s.path, &st)
	switch {
	case errors.Is(err, syscall.ENOENT):
		return fmt.Errorf("%w: %s was removed", ErrTampered, s.path)
	case err != nil:
		return fmt.Errorf("%w: %s cannot be checked: %v", ErrTampered, s.path, err)
	case (fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)}) != s.id:
		return fmt.Errorf("%w: %s was replaced by another file", ErrTampered, s.path)
	}
	if problem := headerProblem(s.headFD); problem != "" {
		return fmt.Errorf("%w: %s %s", ErrTampered, s.path, problem)
	}
	if !deep {
		return nil
	}
	var res string
	if err := s.db.QueryRowContext(ctx, "PRAGMA quick_check(1)").Scan(&res); err != nil {
		return fmt.Errorf("%w: %s: consistency check: %w", ErrTampered, s.path, dbErr(ctx, err))
	}
	if res != "ok" {
		return fmt.Errorf("%w: %s is damaged (SQLite's consistency check says: %s)", ErrTampered, s.path, strings.Join(strings.Fields(res), " "))
	}
	return nil
}
