package early

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nexa-run/nexa/internal/runtime/state"
	"github.com/nexa-run/nexa/internal/store"
)

func TestGuess(t *testing.T) {
	for _, c := range []struct {
		args         []string
		run, storeAs string
		ok           bool
	}{
		{[]string{"agent", "a.nx", "A", "--resume", "run_1", "--approve", "c1"}, "run_1", "", true},
		{[]string{"agent", "a.nx", "A", "--resume=run_1", "--store=x.db"}, "run_1", "x.db", true},
		{[]string{"agent", "--store", "x.db", "-q", "--no-stream", "a.nx", "A", "--resume", "run_2"}, "run_2", "x.db", true},
		// The value of another flag is not a flag.
		{[]string{"agent", "a.nx", "A", "--reason", "--resume", "--deny", "c1"}, "", "", false},
		{[]string{"agent", "a.nx", "A", "--resume", "run_1", "--reason", "--store"}, "run_1", "", true},
		// After --, everything is an argument.
		{[]string{"agent", "a.nx", "A", "--", "--resume", "run_1"}, "", "", false},
		{[]string{"agent", "a.nx", "A", "task"}, "", "", false},
		{[]string{"agent", "a.nx", "A", "--resume"}, "", "", false},
		{[]string{"runs", "show", "--resume", "run_1"}, "", "", false},
		{[]string{"--resume", "run_1", "agent"}, "", "", false},
		{nil, "", "", false},
	} {
		run, name, ok := guess(c.args)
		if run != c.run || name != c.storeAs || ok != c.ok {
			t.Errorf("guess(%q) = %q, %q, %v; want %q, %q, %v", c.args, run, name, ok, c.run, c.storeAs, c.ok)
		}
	}
}

// paused makes a store under dir/.nexa with one run and returns its path.
func paused(t *testing.T, dir, id string) string {
	t.Helper()
	path := store.DefaultPath(dir)
	s, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st := &state.RunState{
		ID: id, Status: state.StatusWaitingApproval, Task: "t", CreatedAt: time.Now(),
		Config:   state.Config{SourceFile: "a.nx", Agent: "A", WorkDir: dir},
		Messages: []state.Message{{Seq: 0, Role: state.RoleUser, Content: "t"}},
	}
	if err := s.Create(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	return path
}

func noEnv(string) string { return "" }

func inDir(dir string) func() (string, error) { return func() (string, error) { return dir, nil } }

func TestTakeGivesTheStoreAndTheRunReadAhead(t *testing.T) {
	dir := t.TempDir()
	path := paused(t, dir, "run_a")
	pending.Store(start([]string{"agent", "a.nx", "A", "--resume", "run_a"}, noEnv, inDir(dir)))
	st, read := Take(path, "run_a")
	if st == nil {
		t.Fatal("Take gave nothing for the store and run started")
	}
	defer st.Close()
	run, err := read()
	if err != nil || run == nil || run.ID != "run_a" || len(run.Messages) != 1 {
		t.Fatalf("read: %+v, %v; want run_a with its message", run, err)
	}
	if again, _ := Take(path, "run_a"); again != nil {
		t.Fatal("Take gave the store twice")
	}
}

func TestTakeGivesNothingForAnotherStoreOrRun(t *testing.T) {
	dir := t.TempDir()
	path := paused(t, dir, "run_a")
	for _, c := range []struct{ path, run string }{
		{path, "run_b"},
		{filepath.Join(dir, "other.sqlite3"), "run_a"},
	} {
		pending.Store(start([]string{"agent", "a.nx", "A", "--resume", "run_a"}, noEnv, inDir(dir)))
		if st, _ := Take(c.path, c.run); st != nil {
			st.Close()
			t.Errorf("Take(%s, %s) gave the store opened for %s, run_a", c.path, c.run, path)
		}
	}
	// NEXA_STORE names the store when --store does not.
	pending.Store(start([]string{"agent", "a.nx", "A", "--resume", "run_a"},
		func(k string) string { return map[string]string{"NEXA_STORE": path}[k] }, inDir(t.TempDir())))
	st, read := Take(path, "run_a")
	if st == nil {
		t.Fatal("the store NEXA_STORE names was not opened ahead")
	}
	read()
	st.Close()
}

// TestNothingIsStartedOrCreatedForOtherCommands: no read starts unless
// the command line is a resume of a SQLite store that exists, and the
// guess creates nothing.
func TestNothingIsStartedOrCreatedForOtherCommands(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		env  string
	}{
		{[]string{"agent", "a.nx", "A", "task"}, ""},
		{[]string{"agent", "a.nx", "A", "--resume", "run_a"}, ""}, // no store yet
		{[]string{"agent", "a.nx", "A", "--resume", "run_a", "--store", "postgres://u@h/db"}, ""},
		{[]string{"agent", "a.nx", "A", "--resume", "run_a"}, "postgres://u@h/db"},
		{[]string{"validate", "a.nx"}, ""},
	} {
		getenv := func(k string) string {
			if k == "NEXA_STORE" {
				return c.env
			}
			return ""
		}
		if a := start(c.args, getenv, inDir(dir)); a != nil {
			t.Errorf("start(%q, NEXA_STORE=%q) started a read of %s", c.args, c.env, a.path)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, store.DirName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a guess made %s (%v)", store.DirName, err)
	}
}

// TestAStoreThatNeedsChangesIsLeftToTheCommand: a store the command's own
// open would change (here, its .gitignore is missing) is not opened ahead
// and is left as it was.
func TestAStoreThatNeedsChangesIsLeftToTheCommand(t *testing.T) {
	dir := t.TempDir()
	path := paused(t, dir, "run_a")
	ignore := filepath.Join(filepath.Dir(path), ".gitignore")
	if err := os.Remove(ignore); err != nil {
		t.Fatal(err)
	}
	pending.Store(start([]string{"agent", "a.nx", "A", "--resume", "run_a"}, noEnv, inDir(dir)))
	if st, _ := Take(path, "run_a"); st != nil {
		st.Close()
		t.Fatal("Take gave a store that the command's open would have changed")
	}
	if _, err := os.Lstat(ignore); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the open ahead wrote %s (%v)", ignore, err)
	}
}
