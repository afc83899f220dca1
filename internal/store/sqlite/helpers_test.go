package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nexa-run/nexa/internal/state"
)

// openTemp opens a fresh store in a temporary .nexa directory.
func openTemp(t testing.TB, opts ...Option) (*SQLite, string) {
	t.Helper()
	path := DefaultPath(t.TempDir())
	s, err := Open(context.Background(), path, opts...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s, path
}

// newRun builds a run with nMsgs messages and nJournal journal entries.
func newRun(id string, nMsgs, nJournal int) *state.RunState {
	created := time.Date(2025, 3, 1, 12, 0, 0, 123456789, time.UTC)
	st := &state.RunState{
		ID:     id,
		Status: state.StatusRunning,
		Config: state.Config{
			SourceFile: "agents/demo.nx",
			SourceHash: "sha256:abc",
			Agent:      "demo",
			Provider:   state.ProviderIdentity{Kind: "script", Model: "m", Digest: "d"},
			Budgets:    state.Budgets{MaxTurns: 10},
			WorkDir:    "/work",
		},
		Task:      "do the thing",
		CreatedAt: created,
	}
	for i := 0; i < nMsgs; i++ {
		st.Messages = append(st.Messages, message(i))
	}
	for i := 0; i < nJournal; i++ {
		st.Journal = append(st.Journal, entry(fmt.Sprintf("call-%d", i), i, 1))
	}
	return st
}

func message(seq int) state.Message {
	return state.Message{
		Seq:     seq,
		Role:    state.RoleAssistant,
		Content: fmt.Sprintf("message %d: %s", seq, strings.Repeat("lorem ipsum ", 20)),
		ToolCalls: []state.ToolCall{{
			ID: fmt.Sprintf("call-%d", seq), Name: "file_read", Arguments: `{"path":"a.txt"}`,
		}},
	}
}

func entry(callID string, seq, attempts int) state.JournalEntry {
	at := time.Date(2025, 3, 1, 12, 0, 1, 0, time.UTC)
	return state.JournalEntry{
		CallID:    callID,
		Tool:      "file_read",
		Seq:       seq,
		Turn:      1,
		Arguments: json.RawMessage(`{"path":"a.txt"}`),
		Valid:     true,
		Stage:     state.StageCompleted,
		Result:    strings.Repeat("result ", 30),
		Success:   true,
		Outcome:   "executed",
		Attempts:  attempts,
		CreatedAt: at,
		StartedAt: &at,
	}
}

// mustJSON renders v for comparisons that ignore Go-level representation
// details (time locations, nil versus empty).
func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mustLoad(t testing.TB, s *SQLite, id string) *state.RunState {
	t.Helper()
	st, err := s.Load(context.Background(), id)
	if err != nil {
		t.Fatalf("Load %s: %v", id, err)
	}
	return st
}

// count returns the number of rows of a child table for one run.
func count(t testing.TB, s *SQLite, table, id string) int {
	t.Helper()
	var n int
	if err := s.db.QueryRow("SELECT count(*) FROM "+table+" WHERE run_id = ?", id).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func tempFile(t testing.TB, name string) string {
	return filepath.Join(t.TempDir(), name)
}

// checkpoint copies a closed store's write-ahead log into its database
// file and removes it, as SQLite's default close does, for tests that
// read or damage the database file itself.
func checkpoint(t testing.TB, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		t.Fatalf("checkpoint %s: %v", path, err)
	}
}

// atVersion makes a WAL-mode store at path with only the first n
// migrations applied, as a binary of that schema version left it, and
// returns its open database for the test to fill.
func atVersion(t testing.TB, path string, n int) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", dsn(path, options{busyTimeout: DefaultBusyTimeout}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("PRAGMA journal_mode = WAL"); err != nil {
		t.Fatal(err)
	}
	if err := migrate(context.Background(), db, migrations[:n]); err != nil {
		t.Fatal(err)
	}
	return db
}
