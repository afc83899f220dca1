package sqlite

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/nexa-run/nexa/internal/state"
)

// TestWritesIntoAChangedStoreFail: a store file that something other than
// SQLite removed, replaced or overwrote after Open is never written to as
// if nothing happened: Save, Update and Create fail with ErrTampered.
func TestWritesIntoAChangedStoreFail(t *testing.T) {
	ctx := context.Background()
	cases := map[string]func(t *testing.T, path string){
		"overwritten": func(t *testing.T, path string) {
			if err := os.WriteFile(path, []byte("not a database any more"), 0o600); err != nil {
				t.Fatal(err)
			}
		},
		"truncated": func(t *testing.T, path string) {
			if err := os.Truncate(path, 0); err != nil {
				t.Fatal(err)
			}
		},
		"removed": func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		},
		"replaced by a copy": func(t *testing.T, path string) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path+".copy", data, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(path+".copy", path); err != nil {
				t.Fatal(err)
			}
		},
	}
	for name, change := range cases {
		t.Run(name, func(t *testing.T) {
			s, path := openTemp(t)
			st := newRun("run-1", 2, 1)
			if err := s.Create(ctx, st); err != nil {
				t.Fatal(err)
			}
			if err := s.Save(ctx, st, state.Delta{}); err != nil {
				t.Fatalf("save into an intact store: %v", err)
			}
			change(t, path)
			if err := s.Save(ctx, st, state.Delta{}); !errors.Is(err, ErrTampered) {
				t.Fatalf("Save after the file was %s: %v, want ErrTampered", name, err)
			}
			st.Status = state.StatusCompleted
			if err := s.Save(ctx, st, state.Delta{}); !errors.Is(err, ErrTampered) {
				t.Fatalf("final Save after the file was %s: %v, want ErrTampered", name, err)
			}
			if _, err := s.Update(ctx, st.ID, func(st *state.RunState) (state.Delta, error) { return state.Delta{}, nil }); !errors.Is(err, ErrTampered) {
				t.Fatalf("Update after the file was %s: %v, want ErrTampered", name, err)
			}
			if err := s.Create(ctx, newRun("run-2", 1, 0)); !errors.Is(err, ErrTampered) {
				t.Fatalf("Create after the file was %s: %v, want ErrTampered", name, err)
			}
		})
	}
}

// TestFinalSaveChecksConsistency: damage behind an intact header (a page
// overwritten in place) is caught by the check a save asks for with
// Delta.Verify (the runtime does on the save that stops a run after a tool
// that could reach the file).
func TestFinalSaveChecksConsistency(t *testing.T) {
	ctx := context.Background()
	s, path := openTemp(t)
	st := newRun("run-1", 50, 20)
	if err := s.Create(ctx, st); err != nil {
		t.Fatal(err)
	}
	// Move everything from the WAL into the file, then damage the file
	// where SQLite keeps the runs' rows, leaving the header alone.
	if _, err := s.db.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	junk := make([]byte, fi.Size()-4096)
	for i := range junk {
		junk[i] = 0xA5
	}
	if _, err := f.WriteAt(junk, 4096); err != nil {
		t.Fatal(err)
	}
	f.Close()
	s2, err := Open(ctx, path)
	if err != nil {
		// Open itself may already refuse it; that is a detection too.
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("Open of a damaged store: %v", err)
		}
		return
	}
	defer s2.Close()
	st.Status = state.StatusCompleted
	err = s2.Save(ctx, st, state.Delta{Verify: true})
	if !errors.Is(err, ErrTampered) {
		t.Fatal("a completed run was saved into a damaged store")
	}
}
