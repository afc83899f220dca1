package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
)

// ErrTampered: the store file was removed, replaced or overwritten by
// something other than SQLite since Open (a tool that runs with the user's
// rights can do that). Nothing more is written to it; the caller must not
// report the write as done.
var ErrTampered = errors.New("the store file was changed outside nexa")

// sqliteMagic starts every SQLite database file.
var sqliteMagic = []byte("SQLite format 3\x00")

// fileID identifies the store file at Open: a file put in its place later,
// even with the same content, is another file.
type fileID struct {
	dev, ino uint64
}

// identify returns the identity of the file at path.
func identify(path string) (fileID, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileID{}, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, errors.New("file identity is not available on this system")
	}
	return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)}, nil
}

// guard checks, before a write, that the file SQLite writes to is still the
// one Open verified: the same file (device and inode) at the path, still
// starting with a SQLite header that says WAL mode (which Open set). A tool
// that overwrote, truncated, deleted or replaced the file is caught here,
// so the write fails instead of landing in a broken store and being
// reported as saved. deep adds SQLite's quick_check (a read of every page,
// in the size of the store), which catches damage behind an intact header;
// the runtime asks for it when it saves a run that stops.
func (s *SQLite) guard(ctx context.Context, deep bool) error {
	// Raw system calls, not os.Open: a save runs this every time, and
	// open, fstat, pread and close are all it needs (os.Open also sets
	// the descriptor non-blocking and offers it to the poller).
	fd, err := syscall.Open(s.path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, syscall.ENOENT):
		return fmt.Errorf("%w: %s was removed", ErrTampered, s.path)
	case err != nil:
		return fmt.Errorf("%w: %s cannot be read: %v", ErrTampered, s.path, err)
	}
	var (
		st   syscall.Stat_t
		head [100]byte
		n    int
	)
	err = syscall.Fstat(fd, &st)
	if err == nil {
		n, err = syscall.Pread(fd, head[:], 0)
	}
	syscall.Close(fd)
	switch {
	case err != nil:
		return fmt.Errorf("%w: %s cannot be checked: %v", ErrTampered, s.path, err)
	case (fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)}) != s.id:
		return fmt.Errorf("%w: %s was replaced by another file", ErrTampered, s.path)
	case n < len(head):
		return fmt.Errorf("%w: %s was truncated (no SQLite header)", ErrTampered, s.path)
	case !bytes.Equal(head[:len(sqliteMagic)], sqliteMagic):
		return fmt.Errorf("%w: %s was overwritten (it no longer starts with a SQLite header)", ErrTampered, s.path)
	case head[18] != 2 || head[19] != 2:
		return fmt.Errorf("%w: %s was overwritten (its header no longer says WAL mode)", ErrTampered, s.path)
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
