package sqlite

import (
	"context"
	"database/sql"
	"os"
	"runtime"
	"testing"
	"time"

	"modernc.org/sqlite"

	"github.com/nexa-run/nexa/internal/state"
)

// TestCloseLeavesTheRunsInTheFile: after Close the write-ahead log is
// copied into the database file, and the next Open reads every run.
func TestCloseLeavesTheRunsInTheFile(t *testing.T) {
	s, path := openTemp(t)
	for i := range 4 {
		if err := s.Create(context.Background(), newRun("r"+string(rune('0'+i)), 50, 20)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() != 0 {
		t.Errorf("log after Close: %d bytes, want it copied into the file", fi.Size())
	}
	s2, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	sums, err := s2.List(context.Background(), state.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(sums) != 4 {
		t.Errorf("listed %d runs, want 4", len(sums))
	}
}

// TestReleaseLeavesCommitsDurable: Release writes with synchronous=NORMAL
// on a connection of its own; every connection of the pool is back to
// synchronous=FULL afterwards, so the next save is on disk when it returns.
func TestReleaseLeavesCommitsDurable(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	st := newRun("r1", 1, 0)
	st.Lease = &state.Lease{Owner: "me", TTL: time.Minute}
	if err := s.Create(ctx, st); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, "r1", st.Lease); err != nil {
		t.Fatal(err)
	}
	if cur, err := s.storedLease(ctx, "r1"); err != nil || cur.Owner != "" {
		t.Fatalf("stored lease after Release: %+v, %v; want none", cur, err)
	}
	var conns []*sql.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range maxConns {
		c, err := s.db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		var mode int
		if err := c.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&mode); err != nil {
			t.Fatal(err)
		}
		if mode != 2 {
			t.Errorf("a pooled connection has synchronous = %d after Release, want 2 (FULL)", mode)
		}
	}
}

// TestOpenCommitsWithFdatasync: after Open, SQLite commits with
// fdatasync(2), as it does on Linux when built by its own configure script
// (see useFdatasync).
func TestOpenCommitsWithFdatasync(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("fdatasync is switched on where the driver honours it; checked on Linux")
	}
	openTemp(t)
	if !sqlite.FdatasyncEnabled() {
		t.Error("SQLite still commits with fsync after Open")
	}
}
