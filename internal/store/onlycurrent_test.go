package store

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestOnlyIfCurrentChangesNothing: an open with OnlyIfCurrent (a resume's
// read ahead, made before the command line is parsed) opens a current
// store and refuses every store the ordinary Open would create, complete
// or migrate, leaving it as it was.
func TestOnlyIfCurrentChangesNothing(t *testing.T) {
	ctx := context.Background()

	t.Run("current", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), DirName, FileName)
		s, err := Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Create(ctx, newRun("r1", 3, 2)); err != nil {
			t.Fatal(err)
		}
		s.Close()
		s, err = Open(ctx, path, OnlyIfCurrent())
		if err != nil {
			t.Fatalf("a current store: %v", err)
		}
		defer s.Close()
		if got := mustLoad(t, s, "r1"); len(got.Messages) != 3 {
			t.Fatalf("loaded %d messages, want 3", len(got.Messages))
		}
	})

	t.Run("missing", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, DirName, FileName)
		if _, err := Open(ctx, path, OnlyIfCurrent()); !errors.Is(err, ErrNotCurrent) {
			t.Fatalf("no store: %v, want ErrNotCurrent", err)
		}
		if _, err := os.Stat(filepath.Join(dir, DirName)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("the open made %s (%v)", DirName, err)
		}
	})

	t.Run("no .gitignore", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), DirName, FileName)
		s, err := Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		ignore := filepath.Join(filepath.Dir(path), ".gitignore")
		if err := os.Remove(ignore); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(ctx, path, OnlyIfCurrent()); !errors.Is(err, ErrNotCurrent) {
			t.Fatalf("a store without its .gitignore: %v, want ErrNotCurrent", err)
		}
		if _, err := os.Lstat(ignore); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("the open wrote %s (%v)", ignore, err)
		}
	})

	t.Run("older schema", func(t *testing.T) {
		path := tempFile(t, FileName)
		atVersion(t, path, 2).Close()
		if _, err := Open(ctx, path, OnlyIfCurrent()); !errors.Is(err, ErrNotCurrent) {
			t.Fatalf("a version 2 store: %v, want ErrNotCurrent", err)
		}
		if v := userVersion(t, path); v != 2 {
			t.Fatalf("user_version %d after the open, want 2 (not migrated)", v)
		}
	})

	t.Run("not in WAL mode", func(t *testing.T) {
		path := tempFile(t, FileName)
		s, err := Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		db, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		var mode string
		if err := db.QueryRow("PRAGMA journal_mode = DELETE").Scan(&mode); err != nil || mode != "delete" {
			t.Fatalf("journal mode %q (%v)", mode, err)
		}
		db.Close()
		if _, err := Open(ctx, path, OnlyIfCurrent()); !errors.Is(err, ErrNotCurrent) {
			t.Fatalf("a store in rollback mode: %v, want ErrNotCurrent", err)
		}
		if problem := headerOf(t, path); problem == "" {
			t.Fatal("the open switched the store to WAL mode")
		}
	})
}

// userVersion reads a database's user_version through a plain connection.
func userVersion(t *testing.T, path string) int {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v int
	if err := db.QueryRow("PRAGMA user_version").Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// headerOf is headerProblem for the file at path.
func headerOf(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return headerProblem(int(f.Fd()))
}
