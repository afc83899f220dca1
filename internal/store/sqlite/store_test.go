package sqlite

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexa-run/nexa/internal/state"
)

func TestOpenCreatesDirGitignoreAndModes(t *testing.T) {
	work := t.TempDir()
	path := DefaultPath(work)
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	dir := filepath.Join(work, ".nexa")
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o700 {
		t.Errorf(".nexa mode = %o, want 700", got)
	}
	b, err := os.ReadFile(filepath.Join(dir, ".gitignore"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(b)) != "*" {
		t.Errorf(".gitignore = %q, want *", b)
	}
	if err := s.Create(context.Background(), newRun("r1", 2, 1)); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != 0o600 {
			t.Errorf("%s mode = %o, want 600", filepath.Base(p), got)
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if got := strings.Join(names, " "); got != ".gitignore runs.sqlite3 runs.sqlite3-shm runs.sqlite3-wal" {
		t.Errorf(".nexa holds %s", got)
	}
	if s.Path() != path {
		t.Errorf("Path() = %q, want %q", s.Path(), path)
	}
}

func TestOpenKeepsExistingGitignoreAndTightensMode(t *testing.T) {
	work := t.TempDir()
	dir := filepath.Join(work, ".nexa")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("custom\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := DefaultPath(work)
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if b, _ := os.ReadFile(filepath.Join(dir, ".gitignore")); string(b) != "custom\n" {
		t.Errorf(".gitignore overwritten: %q", b)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err = Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	fi, _ := os.Stat(path)
	if got := fi.Mode().Perm(); got != 0o600 {
		t.Errorf("mode after reopen = %o, want 600", got)
	}
}

func TestOpenOtherDirNoGitignore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b", "runs.db")
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	fi, err := os.Stat(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o700 {
		t.Errorf("dir mode = %o, want 700", got)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(path), ".gitignore")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf(".gitignore written outside .nexa: %v", err)
	}
}

func TestPathWithSpecialCharacters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "we?ird #dir %20", "runs.sqlite3")
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Create(context.Background(), newRun("r", 1, 0)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("database not at the given path: %v", err)
	}
}

func TestPragmasOnEveryConnection(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	var conns []*sql.Conn
	for i := 0; i < maxConns; i++ {
		c, err := s.db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	for i, c := range conns {
		var mode string
		var sync, fk, busy int
		if err := c.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
			t.Fatal(err)
		}
		if err := c.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&sync); err != nil {
			t.Fatal(err)
		}
		if err := c.QueryRowContext(ctx, "PRAGMA foreign_keys").Scan(&fk); err != nil {
			t.Fatal(err)
		}
		if err := c.QueryRowContext(ctx, "PRAGMA busy_timeout").Scan(&busy); err != nil {
			t.Fatal(err)
		}
		var cache int
		if err := c.QueryRowContext(ctx, "PRAGMA cache_size").Scan(&cache); err != nil {
			t.Fatal(err)
		}
		if mode != "wal" || sync != 2 || fk != 1 || busy != 5000 || cache != cachePages {
			t.Errorf("conn %d: journal_mode=%s synchronous=%d foreign_keys=%d busy_timeout=%d cache_size=%d", i, mode, sync, fk, busy, cache)
		}
	}
	// A write transaction holds the write lock from BEGIN (IMMEDIATE), not
	// from its first write: another connection cannot start one meanwhile.
	tx, err := conns[0].BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conns[1].ExecContext(ctx, "PRAGMA busy_timeout = 0"); err != nil {
		t.Fatal(err)
	}
	if _, err := conns[1].ExecContext(ctx, "BEGIN IMMEDIATE"); err == nil || !strings.Contains(err.Error(), "locked") {
		t.Errorf("second writer began beside an open write transaction: %v", err)
	}
	// A read-only transaction (Load's) does not take it.
	rtx, err := conns[2].BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		t.Errorf("read transaction beside a writer: %v", err)
	} else {
		rtx.Rollback()
	}
	tx.Rollback()
	for _, c := range conns {
		c.Close()
	}
}

func TestCreateLoadRoundTrip(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	st := newRun("run-1", 3, 2)
	dl := time.Date(2025, 3, 1, 13, 0, 0, 0, time.UTC)
	st.Config.Deadline = &dl
	st.Usage = state.Usage{InputTokens: 5, OutputTokens: 6, TotalTokens: 11, ProviderRequests: 1}
	st.ProviderItems = []state.ProviderItem{{Seq: 0, Raw: json.RawMessage(`{"id":"x"}`), Usage: st.Usage, CreatedAt: st.CreatedAt}}
	st.Output = json.RawMessage(`{"answer":42}`)
	st.Error = &state.RunError{Code: "E", Message: "m"}
	yes := true
	st.Journal[1].Decision = &yes
	st.Journal[1].Arguments = nil
	st.Journal[1].RawArgs = "not json"
	st.Journal[1].Valid = false
	if err := s.Create(ctx, st); err != nil {
		t.Fatal(err)
	}
	if st.Revision != 1 || st.UpdatedAt.IsZero() {
		t.Fatalf("after Create: revision %d updated %v", st.Revision, st.UpdatedAt)
	}
	got := mustLoad(t, s, "run-1")
	if a, b := mustJSON(t, got), mustJSON(t, st); a != b {
		t.Errorf("round trip differs:\nloaded %s\nwant   %s", a, b)
	}
	if got.Journal[1].Arguments != nil {
		t.Errorf("nil arguments loaded as %q", got.Journal[1].Arguments)
	}

	// A run with no rows loads with empty, non-nil slices.
	empty := &state.RunState{ID: "empty", Status: state.StatusRunning}
	if err := s.Create(ctx, empty); err != nil {
		t.Fatal(err)
	}
	e := mustLoad(t, s, "empty")
	if e.Messages == nil || e.Journal == nil || e.ProviderItems == nil || e.Output != nil || e.Error != nil {
		t.Errorf("empty run loaded as %+v", e)
	}
	if e.CreatedAt.IsZero() || !e.CreatedAt.Equal(e.UpdatedAt) {
		t.Errorf("zero timestamps not defaulted: %v %v", e.CreatedAt, e.UpdatedAt)
	}
}

func TestCreateDuplicateAndInvalid(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	if err := s.Create(ctx, newRun("dup", 1, 0)); err != nil {
		t.Fatal(err)
	}
	err := s.Create(ctx, newRun("dup", 5, 0))
	if !errors.Is(err, ErrRunExists) {
		t.Fatalf("duplicate Create: %v, want ErrRunExists", err)
	}
	if n := count(t, s, "messages", "dup"); n != 1 {
		t.Errorf("duplicate Create wrote messages: %d", n)
	}
	if err := s.Create(ctx, &state.RunState{}); err == nil {
		t.Error("Create without id succeeded")
	}
	bad := newRun("bad", 2, 0)
	bad.Messages[1].Seq = 0
	if err := s.Create(ctx, bad); err == nil || !strings.Contains(err.Error(), "append-only") {
		t.Errorf("duplicate seq: %v", err)
	}
	if _, err := s.Load(ctx, "bad"); !errors.Is(err, state.ErrNotFound) {
		t.Errorf("failed Create left a run: %v", err)
	}
}

func TestLoadNotFound(t *testing.T) {
	s, _ := openTemp(t)
	_, err := s.Load(context.Background(), "nope")
	if !errors.Is(err, state.ErrNotFound) || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("Load missing: %v", err)
	}
}

func TestSaveWritesDeltaAndHeader(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	st := newRun("r", 2, 1)
	st.ProviderItems = []state.ProviderItem{{Seq: 0, Raw: json.RawMessage(`1`)}}
	if err := s.Create(ctx, st); err != nil {
		t.Fatal(err)
	}
	before := st.UpdatedAt
	st.Messages = append(st.Messages, message(2), message(3))
	st.Journal[0].Stage = state.StageStarted
	st.Journal = append(st.Journal, entry("new", 5, 0))
	st.ProviderItems[0].Raw = json.RawMessage(`{"replaced":true}`)
	st.ProviderItems = append(st.ProviderItems, state.ProviderItem{Seq: 1, Raw: json.RawMessage(`2`)})
	st.Status = state.StatusCompleted
	st.Usage.ToolCalls = 7
	st.Output = json.RawMessage(`"done"`)
	d := state.Delta{
		Messages:      st.Messages[2:],
		Journal:       st.Journal,
		ProviderItems: st.ProviderItems,
	}
	if err := s.Save(ctx, st, d); err != nil {
		t.Fatal(err)
	}
	if st.Revision != 2 || !st.UpdatedAt.After(before) {
		t.Fatalf("after Save: revision %d updated %v (before %v)", st.Revision, st.UpdatedAt, before)
	}
	got := mustLoad(t, s, "r")
	if a, b := mustJSON(t, got), mustJSON(t, st); a != b {
		t.Errorf("after Save:\nloaded %s\nwant   %s", a, b)
	}
	if count(t, s, "journal", "r") != 2 || count(t, s, "provider_items", "r") != 2 {
		t.Error("upserts duplicated rows")
	}

	// Appending an existing message seq fails and writes nothing.
	st.Status = state.StatusFailed
	err := s.Save(ctx, st, state.Delta{Messages: []state.Message{message(4), message(1)}})
	if err == nil || !strings.Contains(err.Error(), "append-only") {
		t.Fatalf("duplicate seq Save: %v", err)
	}
	if st.Revision != 2 {
		t.Errorf("failed Save changed revision to %d", st.Revision)
	}
	got = mustLoad(t, s, "r")
	if got.Revision != 2 || got.Status != state.StatusCompleted || len(got.Messages) != 4 {
		t.Errorf("failed Save wrote: revision %d status %s messages %d", got.Revision, got.Status, len(got.Messages))
	}
}

func TestSaveConflict(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	if err := s.Create(ctx, newRun("r", 2, 0)); err != nil {
		t.Fatal(err)
	}
	a := mustLoad(t, s, "r")
	b := mustLoad(t, s, "r")

	a.Messages = append(a.Messages, message(2))
	if err := s.Save(ctx, a, state.Delta{Messages: a.Messages[2:]}); err != nil {
		t.Fatal(err)
	}

	b.Status = state.StatusFailed
	b.Journal = append(b.Journal, entry("from-b", 0, 1))
	b.Messages = append(b.Messages, message(3))
	err := s.Save(ctx, b, state.Delta{Messages: b.Messages[2:], Journal: b.Journal})
	var ce *state.ConflictError
	if !errors.As(err, &ce) {
		t.Fatalf("second Save: %v, want ConflictError", err)
	}
	if ce.RunID != "r" || ce.Expected != 1 || ce.Actual != 2 {
		t.Errorf("conflict = %+v", ce)
	}
	if b.Revision != 1 {
		t.Errorf("losing Save changed revision to %d", b.Revision)
	}
	got := mustLoad(t, s, "r")
	if got.Revision != 2 || got.Status != state.StatusRunning || len(got.Messages) != 3 || len(got.Journal) != 0 ||
		got.Messages[2].Content != message(2).Content {
		t.Errorf("losing Save wrote something: %s", mustJSON(t, got))
	}

	// The winner keeps going.
	if err := s.Save(ctx, a, state.Delta{}); err != nil || a.Revision != 3 {
		t.Fatalf("winner's next Save: %v (revision %d)", err, a.Revision)
	}
}

func TestSaveMissingRun(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	st := newRun("gone", 1, 0)
	if err := s.Create(ctx, st); err != nil {
		t.Fatal(err)
	}
	if rep, err := s.Prune(ctx, state.Filter{}); err != nil || len(rep.Deleted) != 1 {
		t.Fatalf("Prune: %v %v", rep, err)
	}
	err := s.Save(ctx, st, state.Delta{Messages: []state.Message{message(1)}})
	if !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("Save of a deleted run: %v", err)
	}
	if n := count(t, s, "messages", "gone"); n != 0 {
		t.Errorf("orphan messages written: %d", n)
	}
}

func TestUpdate(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	if err := s.Create(ctx, newRun("r", 1, 1)); err != nil {
		t.Fatal(err)
	}

	got, err := s.Update(ctx, "r", func(st *state.RunState) (state.Delta, error) {
		st.Status = state.StatusWaitingApproval
		st.Journal[0].Reason = "approved"
		st.Messages = append(st.Messages, message(1))
		return state.Delta{Journal: st.Journal, Messages: st.Messages[1:]}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got.Revision != 2 || got.Status != state.StatusWaitingApproval {
		t.Errorf("Update returned revision %d status %s", got.Revision, got.Status)
	}
	if a, b := mustJSON(t, mustLoad(t, s, "r")), mustJSON(t, got); a != b {
		t.Errorf("Update result differs from stored:\n%s\n%s", a, b)
	}

	sentinel := errors.New("refused")
	_, err = s.Update(ctx, "r", func(st *state.RunState) (state.Delta, error) {
		st.Status = state.StatusFailed
		st.Messages = append(st.Messages, message(2))
		return state.Delta{Messages: st.Messages[2:]}, sentinel
	})
	if err != sentinel {
		t.Fatalf("Update fn error = %v, want the sentinel unchanged", err)
	}
	after := mustLoad(t, s, "r")
	if after.Revision != 2 || after.Status != state.StatusWaitingApproval || len(after.Messages) != 2 {
		t.Errorf("failed Update wrote: %s", mustJSON(t, after))
	}

	if _, err := s.Update(ctx, "nope", func(*state.RunState) (state.Delta, error) {
		t.Error("fn called for a missing run")
		return state.Delta{}, nil
	}); !errors.Is(err, state.ErrNotFound) {
		t.Errorf("Update missing run: %v", err)
	}
}

func TestContextCancelled(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	st := newRun("r", 1, 0)
	if err := s.Create(ctx, st); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	err := s.Save(cctx, st, state.Delta{Messages: []state.Message{message(1)}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Save with cancelled context: %v", err)
	}
	if _, err := s.Load(cctx, "r"); !errors.Is(err, context.Canceled) {
		t.Errorf("Load with cancelled context: %v", err)
	}
	if got := mustLoad(t, s, "r"); got.Revision != 1 || len(got.Messages) != 1 {
		t.Errorf("cancelled Save wrote: revision %d", got.Revision)
	}
	if _, err := Open(cctx, tempFile(t, "x.db")); !errors.Is(err, context.Canceled) {
		t.Errorf("Open with cancelled context: %v", err)
	}
}

func TestMigrations(t *testing.T) {
	path := tempFile(t, "runs.db")
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	var v, app int
	s.db.QueryRow("PRAGMA user_version").Scan(&v)
	s.db.QueryRow("PRAGMA application_id").Scan(&app)
	if v != SchemaVersion() || app != applicationID {
		t.Fatalf("fresh store: user_version %d application_id %#x", v, app)
	}
	if err := s.Create(context.Background(), newRun("kept", 3, 1)); err != nil {
		t.Fatal(err)
	}
	s.Close()

	// Reopening is idempotent.
	for i := 0; i < 2; i++ {
		s, err = Open(context.Background(), path)
		if err != nil {
			t.Fatalf("reopen %d: %v", i, err)
		}
		if got := mustLoad(t, s, "kept"); len(got.Messages) != 3 {
			t.Fatalf("reopen lost data")
		}
		s.Close()
	}

	// A later step is applied forward, once, keeping the data.
	s, err = Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	steps := append(append([]migration(nil), migrations...), migration{
		name:  "test column",
		stmts: []string{`ALTER TABLE runs ADD COLUMN note TEXT`},
	})
	for i := 0; i < 2; i++ {
		if err := migrate(context.Background(), s.db, steps); err != nil {
			t.Fatalf("migrate to %d (pass %d): %v", len(steps), i, err)
		}
	}
	s.db.QueryRow("PRAGMA user_version").Scan(&v)
	if v != len(steps) {
		t.Errorf("user_version = %d, want %d", v, len(steps))
	}
	if got := mustLoad(t, s, "kept"); len(got.Messages) != 3 || len(got.Journal) != 1 {
		t.Errorf("migration lost data")
	}

	// A failing step rolls back entirely.
	bad := append(append([]migration(nil), steps...), migration{
		name:  "broken",
		stmts: []string{`CREATE TABLE t1 (x INTEGER)`, `THIS IS NOT SQL`},
	})
	if err := migrate(context.Background(), s.db, bad); err == nil || !strings.Contains(err.Error(), "broken") {
		t.Fatalf("broken migration: %v", err)
	}
	var n int
	s.db.QueryRow("SELECT count(*) FROM sqlite_schema WHERE name = 't1'").Scan(&n)
	s.db.QueryRow("PRAGMA user_version").Scan(&v)
	if n != 0 || v != len(steps) {
		t.Errorf("failed migration left table=%d user_version=%d", n, v)
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	path := tempFile(t, "runs.db")
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.Exec("PRAGMA user_version = 99"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	before := snapshot(t, path)

	_, err = Open(context.Background(), path)
	if !errors.Is(err, ErrNewerSchema) || !strings.Contains(err.Error(), "99") {
		t.Fatalf("Open newer store: %v", err)
	}
	if !bytes.Equal(before, snapshot(t, path)) {
		t.Error("newer store modified")
	}
}

// snapshot reads a closed database file (its last connection checkpointed
// the WAL into it), so two snapshots compare everything stored.
func snapshot(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCorruptFileRefused(t *testing.T) {
	path := tempFile(t, "runs.sqlite3")
	junk := make([]byte, 3*4096+17)
	rand.Read(junk)
	if err := os.WriteFile(path, junk, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Open(context.Background(), path)
	if err == nil {
		s.Close()
		t.Fatal("Open of random bytes succeeded")
	}
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) {
		t.Errorf("error = %v, want ErrCorrupt naming the path", err)
	}
	got, _ := os.ReadFile(path)
	if !bytes.Equal(got, junk) {
		t.Error("corrupt file was modified")
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Errorf("corrupt file's mode changed to %o", fi.Mode().Perm())
	}

	// A text file is no better.
	if err := os.WriteFile(path, []byte("hello\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(context.Background(), path); !errors.Is(err, ErrCorrupt) {
		t.Errorf("text file: %v", err)
	}
}

// TestDamagedPages overwrites pages in the middle of a valid store: the
// damage surfaces as ErrCorrupt from whatever reads it, never as a panic, and
// reading does not write to the file.
func TestDamagedPages(t *testing.T) {
	path := tempFile(t, "runs.sqlite3")
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		if err := s.Create(context.Background(), newRun("r"+string(rune('0'+i)), 50, 20)); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	checkpoint(t, path) // the runs' pages into the file, to damage them there
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const page = 4096
	if len(b) < 20*page {
		t.Fatalf("store too small to damage: %d bytes", len(b))
	}
	rand.Read(b[3*page : len(b)-3*page])
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}

	s, err = Open(context.Background(), path)
	if err != nil {
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("Open damaged store: %v, want ErrCorrupt", err)
		}
		return
	}
	defer s.Close()
	corrupt := 0
	for i := 0; i < 4; i++ {
		_, err := s.Load(context.Background(), "r"+string(rune('0'+i)))
		if errors.Is(err, ErrCorrupt) {
			t.Logf("load r%d: %v", i, err)
			corrupt++
		} else if err != nil && !errors.Is(err, state.ErrNotFound) && !strings.Contains(err.Error(), "decode") {
			t.Errorf("Load from damaged store: %v", err)
		}
	}
	if _, err := s.List(context.Background(), state.Filter{}); err != nil && !errors.Is(err, ErrCorrupt) {
		t.Errorf("List damaged store: %v", err)
	}
	if corrupt == 0 {
		t.Error("no load reported the damage")
	}
	s.Close()
	if got, _ := os.ReadFile(path); !bytes.Equal(got, b) {
		t.Error("reading a damaged store wrote to it")
	}
}

func TestForeignDatabaseRefused(t *testing.T) {
	path := tempFile(t, "other.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE notes (x TEXT)"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	before := snapshot(t, path)
	if _, err := Open(context.Background(), path); !errors.Is(err, ErrNotRunStore) {
		t.Fatalf("Open foreign db: %v", err)
	}
	if !bytes.Equal(before, snapshot(t, path)) {
		t.Error("foreign database modified")
	}
}

func TestOpenDirectoryPath(t *testing.T) {
	if _, err := Open(context.Background(), t.TempDir()); err == nil {
		t.Fatal("Open of a directory succeeded")
	}
	if _, err := Open(context.Background(), ""); err == nil {
		t.Fatal("Open of an empty path succeeded")
	}
}

func TestListAndPrune(t *testing.T) {
	// The store's clock stands still, so the ages are exact.
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	s, _ := openTemp(t, WithClock(func() time.Time { return now }))
	ctx := context.Background()
	mk := func(id, agent string, status state.Status, created, updated time.Duration) {
		st := newRun(id, 2, 1)
		st.Config.Agent = agent
		st.Status = status
		st.CreatedAt = now.Add(-created)
		st.UpdatedAt = now.Add(-updated)
		if err := s.Create(ctx, st); err != nil {
			t.Fatal(err)
		}
	}
	mk("a", "alpha", state.StatusCompleted, 96*time.Hour, 90*time.Hour)
	mk("b", "beta", state.StatusFailed, 72*time.Hour, 48*time.Hour)
	mk("c", "alpha", state.StatusRunning, 2*time.Hour, time.Hour)
	mk("d", "beta", state.StatusCompleted, time.Hour, time.Minute)
	mk("e", "alpha", state.StatusCompleted, time.Hour, time.Minute) // same created_at as d

	ids := func(f state.Filter) string {
		t.Helper()
		l, err := s.List(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, x := range l {
			out = append(out, x.ID)
		}
		return strings.Join(out, ",")
	}
	cases := []struct {
		f    state.Filter
		want string
	}{
		{state.Filter{}, "e,d,c,b,a"},
		{state.Filter{Limit: 2}, "e,d"},
		{state.Filter{Status: state.StatusCompleted}, "e,d,a"},
		{state.Filter{Agent: "alpha"}, "e,c,a"},
		{state.Filter{Agent: "alpha", Status: state.StatusCompleted}, "e,a"},
		{state.Filter{OlderThan: 24 * time.Hour}, "b,a"},
		{state.Filter{OlderThan: 24 * time.Hour, Status: state.StatusFailed}, "b"},
		{state.Filter{Status: state.StatusInterrupted}, ""},
	}
	for _, c := range cases {
		if got := ids(c.f); got != c.want {
			t.Errorf("List(%+v) = %q, want %q", c.f, got, c.want)
		}
	}
	l, _ := s.List(ctx, state.Filter{Limit: 1})
	if x := l[0]; x.Agent != "alpha" || x.File != "agents/demo.nx" || x.Revision != 1 || x.Status != state.StatusCompleted ||
		x.CreatedAt.Unix() != now.Add(-time.Hour).Unix() {
		t.Errorf("summary = %+v", x)
	}

	// A save refreshes updated_at, so the run is no longer old.
	b := mustLoad(t, s, "b")
	if err := s.Save(ctx, b, state.Delta{}); err != nil {
		t.Fatal(err)
	}
	if got := ids(state.Filter{OlderThan: 24 * time.Hour}); got != "a" {
		t.Errorf("after saving b: %q", got)
	}

	rep, err := s.Prune(ctx, state.Filter{OlderThan: 24 * time.Hour})
	if err != nil || strings.Join(rep.Deleted, ",") != "a" {
		t.Fatalf("Prune older: %v %v", rep, err)
	}
	for _, table := range []string{"messages", "journal"} {
		if c := count(t, s, table, "a"); c != 0 {
			t.Errorf("%s rows of pruned run remain: %d", table, c)
		}
	}
	if _, err := s.Load(ctx, "a"); !errors.Is(err, state.ErrNotFound) {
		t.Errorf("pruned run loads: %v", err)
	}
	rep, err = s.Prune(ctx, state.Filter{Status: state.StatusCompleted, Agent: "beta"})
	if err != nil || len(rep.Deleted) != 1 {
		t.Fatalf("Prune status+agent: %v %v", rep, err)
	}
	if got := ids(state.Filter{}); got != "e,c,b" {
		t.Errorf("after prunes: %q", got)
	}
	if count(t, s, "messages", "c") != 2 {
		t.Error("prune touched another run's rows")
	}
}

// TestTwoHandlesRace has two handles on one file, as two processes would,
// save the same loaded revision at the same moment: exactly one wins each
// round and the loser writes nothing.
func TestTwoHandlesRace(t *testing.T) {
	path := tempFile(t, "runs.sqlite3")
	ctx := context.Background()
	var hs [2]*SQLite
	for i := range hs {
		s, err := Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		hs[i] = s
	}
	if err := hs[0].Create(ctx, newRun("r", 1, 0)); err != nil {
		t.Fatal(err)
	}
	const rounds = 25
	wins := [2]int{}
	for round := 0; round < rounds; round++ {
		var (
			sts  [2]*state.RunState
			errs [2]error
			wg   sync.WaitGroup
		)
		for i, h := range hs {
			sts[i] = mustLoad(t, h, "r")
		}
		rev := sts[0].Revision
		start := make(chan struct{})
		order := []int{0, 1}
		if round%2 == 1 {
			order = []int{1, 0} // vary which goroutine the scheduler favours
		}
		for _, i := range order {
			h := hs[i]
			wg.Add(1)
			go func() {
				defer wg.Done()
				st := sts[i]
				m := message(len(st.Messages)) // the same seq from both
				m.Name = []string{"h0", "h1"}[i]
				st.Messages = append(st.Messages, m)
				<-start
				errs[i] = h.Save(ctx, st, state.Delta{Messages: []state.Message{m}})
			}()
		}
		close(start)
		wg.Wait()
		winner := -1
		for i, err := range errs {
			var ce *state.ConflictError
			switch {
			case err == nil:
				if winner >= 0 {
					t.Fatalf("round %d: both saves succeeded", round)
				}
				winner = i
			case errors.As(err, &ce):
				if ce.Expected != rev || ce.Actual != rev+1 {
					t.Errorf("round %d: conflict %+v, want %d→%d", round, ce, rev, rev+1)
				}
			default:
				t.Fatalf("round %d handle %d: %v", round, i, err)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: no save succeeded: %v", round, errs)
		}
		wins[winner]++
		got := mustLoad(t, hs[1-winner], "r")
		if got.Revision != rev+1 || len(got.Messages) != int(rev)+1 {
			t.Fatalf("round %d: stored revision %d with %d messages", round, got.Revision, len(got.Messages))
		}
		if last := got.Messages[len(got.Messages)-1]; last.Name != []string{"h0", "h1"}[winner] {
			t.Fatalf("round %d: stored message from %s, winner was h%d", round, last.Name, winner)
		}
	}
	t.Logf("wins: %v", wins)
}

// TestLocked holds the write lock from another connection: a write with a
// deadline fails with ErrLocked when it passes, while reads still work
// (WAL); a write without a deadline waits until the lock is released.
func TestLocked(t *testing.T) {
	s, path := openTemp(t, WithBusyTimeout(150*time.Millisecond))
	ctx := context.Background()
	st := newRun("r", 1, 0)
	if err := s.Create(ctx, st); err != nil {
		t.Fatal(err)
	}

	other, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}

	t0 := time.Now()
	dctx, dcancel := context.WithTimeout(ctx, 400*time.Millisecond)
	err = s.Save(dctx, st, state.Delta{Messages: []state.Message{message(1)}})
	dcancel()
	if !errors.Is(err, ErrLocked) || !errors.Is(err, state.ErrBusy) || !strings.Contains(err.Error(), "locked by another process") {
		t.Fatalf("Save on locked store: %v", err)
	}
	if d := time.Since(t0); d < 300*time.Millisecond {
		t.Errorf("gave up after %v, before its deadline", d)
	}
	if st.Revision != 1 {
		t.Errorf("failed Save changed revision")
	}
	if got := mustLoad(t, s, "r"); got.Revision != 1 {
		t.Errorf("Load while locked: revision %d", got.Revision)
	}
	if _, err := s.List(ctx, state.Filter{}); err != nil {
		t.Errorf("List while locked: %v", err)
	}

	// A cancelled wait ends early with the context's error.
	cctx, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	s2, err := Open(ctx, path, WithBusyTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	t0 = time.Now()
	if err := s2.Save(cctx, st, state.Delta{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Save with deadline on a locked store: %v", err)
	}
	if d := time.Since(t0); d > 2*time.Second {
		t.Errorf("cancelled wait took %v", d)
	}

	// Without a deadline the write outlasts several busy timeouts and
	// commits once the lock is released.
	retries := make(chan struct{}, 16)
	s.onBusy = func() {
		select {
		case retries <- struct{}{}:
		default:
		}
	}
	saved := make(chan error, 1)
	go func() { saved <- s.Save(ctx, st, state.Delta{Messages: []state.Message{message(1)}}) }()
	for i := 0; i < 3; i++ {
		select {
		case <-retries:
		case err := <-saved:
			t.Fatalf("Save returned while the store was locked: %v", err)
		}
	}
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if err := <-saved; err != nil {
		t.Fatalf("Save waiting for the lock: %v", err)
	}
	if st.Revision != 2 {
		t.Errorf("revision after the waiting Save: %d", st.Revision)
	}
}

// Most steps change only the usage; the store then writes only usage and
// updated_at. Whatever a save writes, the run loads as it was saved: a
// header change after usage-only saves, and a save after another handle
// changed the header, are written whole.
func TestSaveHeaderDelta(t *testing.T) {
	s, path := openTemp(t)
	ctx := context.Background()
	st := newRun("r", 2, 0)
	st.ProviderItems, st.Journal = []state.ProviderItem{}, []state.JournalEntry{}
	if err := s.Create(ctx, st); err != nil {
		t.Fatal(err)
	}
	check := func(what string) {
		t.Helper()
		if a, b := mustJSON(t, mustLoad(t, s, "r")), mustJSON(t, st); a != b {
			t.Fatalf("%s:\nloaded %s\nwant   %s", what, a, b)
		}
	}
	for i := 1; i <= 3; i++ {
		st.Usage.ToolCalls = i
		if err := s.Save(ctx, st, state.Delta{}); err != nil {
			t.Fatal(err)
		}
		check("after a usage-only save")
	}
	st.Status = state.StatusCompleted
	st.Output = json.RawMessage(`"done"`)
	st.Task = "another task"
	if err := s.Save(ctx, st, state.Delta{}); err != nil {
		t.Fatal(err)
	}
	check("after a header change")

	// Another handle changes the header; this handle's next save, read
	// at the new revision, writes its header whole.
	other, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.Update(ctx, "r", func(o *state.RunState) (state.Delta, error) {
		o.Status = state.StatusFailed
		o.Error = &state.RunError{Code: "x", Message: "set by another handle"}
		return state.Delta{}, nil
	}); err != nil {
		t.Fatal(err)
	}
	st = mustLoad(t, s, "r")
	st.Status = state.StatusRunning
	st.Error = nil
	st.Usage.ToolCalls = 9
	if err := s.Save(ctx, st, state.Delta{}); err != nil {
		t.Fatal(err)
	}
	check("after another handle's update")
}

// LoadHeader gives what Load gives of a run but its rows, and a missing
// run as state.ErrNotFound.
func TestLoadHeaderHasNoRows(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	st := newRun("hdr", 40, 20)
	st.Output = json.RawMessage(`"answer"`)
	st.Error = &state.RunError{Code: "c", Message: "m"}
	if err := s.Create(ctx, st); err != nil {
		t.Fatal(err)
	}
	whole := mustLoad(t, s, "hdr")
	h, err := s.LoadHeader(ctx, "hdr")
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Messages)+len(h.ProviderItems)+len(h.Journal) != 0 {
		t.Fatalf("header load has %d messages, %d items, %d entries; want none", len(h.Messages), len(h.ProviderItems), len(h.Journal))
	}
	whole.Messages, whole.ProviderItems, whole.Journal = h.Messages, h.ProviderItems, h.Journal
	if got, want := mustJSON(t, h), mustJSON(t, whole); got != want {
		t.Fatalf("header load\n%s\nwant the whole load without rows\n%s", got, want)
	}
	if _, err := s.LoadHeader(ctx, "nope"); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("missing run: %v, want ErrNotFound", err)
	}
}

// Open prepares nothing: a command that only reads (runs list, runs show)
// does not compile the statements of a save. The first write prepares
// them, and every later save reuses them.
func TestStatementsArePreparedByTheFirstWrite(t *testing.T) {
	s, path := openTemp(t)
	ctx := context.Background()
	if _, err := s.List(ctx, state.Filter{}); err != nil {
		t.Fatal(err)
	}
	if s.stmts.Load() != nil {
		t.Fatal("Open or List prepared the statements of a save")
	}
	if err := s.Create(ctx, newRun("r1", 2, 1)); err != nil {
		t.Fatal(err)
	}
	first := s.stmts.Load()
	if first == nil || len(*first) == 0 {
		t.Fatal("the first write prepared no statements")
	}
	if err := s.Create(ctx, newRun("r2", 1, 0)); err != nil {
		t.Fatal(err)
	}
	if s.stmts.Load() != first {
		t.Fatal("statements prepared again by a later write")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if got := mustLoad(t, s2, "r1"); len(got.Messages) != 2 || len(got.Journal) != 1 {
		t.Fatalf("reopened: %d messages, %d journal entries", len(got.Messages), len(got.Journal))
	}
}

// LoadForDrive gives what Load gives, except that provider items carry
// only their seq; a missing run is state.ErrNotFound.
func TestLoadForDriveLeavesOutItemBodies(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	st := newRun("drive", 6, 3)
	for i := 0; i < 3; i++ {
		st.ProviderItems = append(st.ProviderItems, state.ProviderItem{Seq: i, Raw: json.RawMessage(fmt.Sprintf(`{"reply":%d}`, i)),
			Usage: state.Usage{InputTokens: i + 1, ProviderRequests: 1}, CreatedAt: st.CreatedAt})
	}
	if err := s.Create(ctx, st); err != nil {
		t.Fatal(err)
	}
	whole := mustLoad(t, s, "drive")
	d, err := s.LoadForDrive(ctx, "drive")
	if err != nil {
		t.Fatal(err)
	}
	if len(d.ProviderItems) != 3 {
		t.Fatalf("drive load has %d provider items, want 3", len(d.ProviderItems))
	}
	for i, it := range d.ProviderItems {
		if it.Seq != i || it.Raw != nil || it.Usage != (state.Usage{}) || !it.CreatedAt.IsZero() {
			t.Errorf("item %d = %+v, want only seq %d", i, it, i)
		}
		whole.ProviderItems[i] = state.ProviderItem{Seq: i}
	}
	if got, want := mustJSON(t, d), mustJSON(t, whole); got != want {
		t.Fatalf("drive load\n%s\nwant the whole load with bare items\n%s", got, want)
	}
	if _, err := s.LoadForDrive(ctx, "nope"); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("missing run: %v, want ErrNotFound", err)
	}
}

// Journal entries that share a seq (an imported run may have them) load
// in call id order, whatever order they were written in.
func TestJournalEntriesOfOneSeqInCallIDOrder(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	st := newRun("ties", 1, 0)
	for _, c := range []struct {
		id  string
		seq int
	}{{"c-z", 0}, {"c-b", 1}, {"c-a", 1}, {"c-y", 2}, {"c-m", 1}} {
		st.Journal = append(st.Journal, entry(c.id, c.seq, 1))
	}
	if err := s.Create(ctx, st); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range mustLoad(t, s, "ties").Journal {
		got = append(got, fmt.Sprintf("%d/%s", e.Seq, e.CallID))
	}
	if want := "0/c-z 1/c-a 1/c-b 1/c-m 2/c-y"; strings.Join(got, " ") != want {
		t.Fatalf("journal order %v, want %s", got, want)
	}
}

// journalByTurn is a run whose journal spans turns 1..3: completed calls in
// each turn, and in turn 2 a call whose outcome is unknown (started).
func journalByTurn(id string) *state.RunState {
	st := newRun(id, 4, 0)
	for i, turn := range []int{1, 1, 2, 2, 3, 3} {
		e := entry(fmt.Sprintf("call-%d", i), i, 1)
		e.Turn = turn
		e.Result = fmt.Sprintf("result of call %d", i)
		st.Journal = append(st.Journal, e)
	}
	open := &st.Journal[3]
	open.Stage, open.Result, open.Outcome, open.Success = state.StageStarted, "", "", false
	return st
}

// checkDriveStubs checks LoadForDrive of journalByTurn's run against its
// whole load: completed entries of turns 1 and 2 are stubs (call id, seq,
// turn, stage), the started entry and the latest turn's entries are whole.
func checkDriveStubs(t *testing.T, s *SQLite, id string) {
	t.Helper()
	ctx := context.Background()
	whole := mustLoad(t, s, id)
	d, err := s.LoadForDrive(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Journal) != len(whole.Journal) {
		t.Fatalf("drive load has %d journal entries, want %d", len(d.Journal), len(whole.Journal))
	}
	for i, e := range d.Journal {
		w := whole.Journal[i]
		if i == 3 || w.Turn == 3 {
			if got, want := mustJSON(t, e), mustJSON(t, w); got != want || e.Stub {
				t.Errorf("entry %d (stub %v)\n%s\nwant whole\n%s", i, e.Stub, got, want)
			}
			continue
		}
		stub := state.JournalEntry{CallID: w.CallID, Seq: w.Seq, Turn: w.Turn, Stage: state.StageCompleted, Stub: true}
		if !reflect.DeepEqual(e, stub) {
			t.Errorf("entry %d = %+v, want the stub %+v", i, e, stub)
		}
	}
	if got, want := mustJSON(t, d.Messages), mustJSON(t, whole.Messages); got != want {
		t.Errorf("drive load messages\n%s\nwant\n%s", got, want)
	}
}

// LoadForDrive leaves out the bodies of completed journal entries of
// earlier turns, and a save refuses to write such a stub back, so the
// stored entry keeps its body.
func TestLoadForDriveStubsEarlierCompletedEntries(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	if err := s.Create(ctx, journalByTurn("stubs")); err != nil {
		t.Fatal(err)
	}
	before := mustJSON(t, mustLoad(t, s, "stubs"))
	checkDriveStubs(t, s, "stubs")

	d, err := s.LoadForDrive(ctx, "stubs")
	if err != nil {
		t.Fatal(err)
	}
	err = s.Save(ctx, d, state.Delta{Journal: []state.JournalEntry{d.Journal[0]}})
	if err == nil || !strings.Contains(err.Error(), "call-0") || !strings.Contains(err.Error(), "without its body") {
		t.Fatalf("save of a stub: %v, want a refusal naming call-0", err)
	}
	if after := mustJSON(t, mustLoad(t, s, "stubs")); after != before {
		t.Fatalf("a refused save changed the run:\n%s\nwant\n%s", after, before)
	}
	// The tail of a run still finds the open entry by its stage.
	tail, om, err := s.LoadTail(ctx, "stubs", 1)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range tail.Journal {
		ids = append(ids, e.CallID)
	}
	if strings.Join(ids, " ") != "call-3 call-5" || om.Journal != 4 {
		t.Fatalf("tail journal %v (%d omitted), want call-3 call-5 (4 omitted)", ids, om.Journal)
	}
}

// A store written by schema version 2 (the journal without its stage and
// turn columns) is upgraded in place when opened: its rows load as they
// did, and a drive load gives the same stubs as for a run written since.
func TestMigrationToJournalStageColumns(t *testing.T) {
	ctx := context.Background()
	path := tempFile(t, "runs.sqlite3")
	db := atVersion(t, path, 2)
	// The rows as version 2 wrote them.
	st := journalByTurn("old")
	if _, err := db.Exec(`INSERT INTO runs (id, revision, status, agent, file, created_at, updated_at, config, task, usage)
		VALUES ('old', 1, 'running', 'demo', 'agents/demo.nx', 1, 1, '{}', 'task', '{}')`); err != nil {
		t.Fatal(err)
	}
	for _, m := range st.Messages {
		b, _ := json.Marshal(m)
		if _, err := db.Exec(`INSERT INTO messages (run_id, seq, body) VALUES ('old', ?, ?)`, m.Seq, string(b)); err != nil {
			t.Fatal(err)
		}
	}
	for _, e := range st.Journal {
		b, _ := json.Marshal(e)
		if _, err := db.Exec(`INSERT INTO journal (run_id, call_id, seq, body) VALUES ('old', ?, ?, ?)`, e.CallID, e.Seq, string(b)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var v int
	s.db.QueryRow("PRAGMA user_version").Scan(&v)
	if v != SchemaVersion() {
		t.Fatalf("user_version %d after Open, want %d", v, SchemaVersion())
	}
	got := mustLoad(t, s, "old")
	if a, b := mustJSON(t, got.Journal), mustJSON(t, st.Journal); a != b {
		t.Fatalf("journal after the upgrade\n%s\nwant\n%s", a, b)
	}
	checkDriveStubs(t, s, "old")
	// A save after the upgrade keeps the columns equal to the body.
	e := got.Journal[3]
	e.Stage, e.Result, e.Outcome = state.StageCompleted, "resolved", "resolved"
	if err := s.Save(ctx, got, state.Delta{Journal: []state.JournalEntry{e}}); err != nil {
		t.Fatal(err)
	}
	var stage string
	var turn int
	if err := s.db.QueryRow(`SELECT stage, turn FROM journal WHERE call_id = 'call-3'`).Scan(&stage, &turn); err != nil || stage != "completed" || turn != 2 {
		t.Fatalf("columns of a saved entry: stage %q turn %d (%v), want completed 2", stage, turn, err)
	}
}

// Provider items whose seqs have gaps (an imported run may have them)
// load for a drive with their own seqs, not 0..n-1.
func TestLoadForDriveItemSeqsWithGaps(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	st := newRun("gaps", 2, 0)
	for _, seq := range []int{0, 2, 5} {
		st.ProviderItems = append(st.ProviderItems, state.ProviderItem{Seq: seq, Raw: json.RawMessage(`{}`), CreatedAt: st.CreatedAt})
	}
	if err := s.Create(ctx, st); err != nil {
		t.Fatal(err)
	}
	d, err := s.LoadForDrive(ctx, "gaps")
	if err != nil {
		t.Fatal(err)
	}
	var seqs []int
	for _, it := range d.ProviderItems {
		seqs = append(seqs, it.Seq)
	}
	if fmt.Sprint(seqs) != "[0 2 5]" {
		t.Fatalf("drive load item seqs %v, want [0 2 5]", seqs)
	}
}

// A save rewrites a journal entry in place when it keeps its seq (every
// stage of a call) and moves it when the seq changed: either way the run
// loads with the entry as saved, once, in seq order.
func TestSaveJournalEntryKeepsOrMovesSeq(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	st := newRun("r", 0, 3)
	if err := s.Create(ctx, st); err != nil {
		t.Fatal(err)
	}
	st.Journal[1].Stage, st.Journal[1].Result = state.StageStarted, "same seq"
	if err := s.Save(ctx, st, state.Delta{Journal: st.Journal[1:2]}); err != nil {
		t.Fatal(err)
	}
	st.Journal[0].Seq, st.Journal[0].Result = 7, "moved"
	if err := s.Save(ctx, st, state.Delta{Journal: st.Journal[0:1]}); err != nil {
		t.Fatal(err)
	}
	got := mustLoad(t, s, "r")
	var order []string
	for _, e := range got.Journal {
		order = append(order, fmt.Sprintf("%s@%d:%s", e.CallID, e.Seq, e.Stage))
	}
	want := "call-1@1:started call-2@2:completed call-0@7:completed"
	if strings.Join(order, " ") != want {
		t.Fatalf("journal after the saves:\n%s\nwant\n%s", strings.Join(order, " "), want)
	}
	if got.Journal[0].Result != "same seq" || got.Journal[2].Result != "moved" {
		t.Fatalf("results after the saves: %q, %q", got.Journal[0].Result, got.Journal[2].Result)
	}
}

// Only a read of a run maps the store file: afterwards no pooled
// connection keeps the map, so a save after a tool ran (a tool may
// truncate the file) reads through SQLite's own reads, which fail with
// an error where a mapped page would kill the process.
func TestOnlyRunReadsMapTheFile(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	if err := s.Create(ctx, newRun("mapped", 6, 3)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.LoadForDrive(ctx, "mapped"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load(ctx, "mapped"); err != nil {
		t.Fatal(err)
	}
	conns := make([]*sql.Conn, 0, maxConns)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range maxConns { // every connection the pool may hold, so the one the reads used too
		c, err := s.db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		var size int64
		if err := c.QueryRowContext(ctx, "PRAGMA mmap_size").Scan(&size); err != nil {
			t.Fatal(err)
		}
		if size != 0 {
			t.Errorf("a pooled connection maps %d bytes of the store after the reads, want 0", size)
		}
	}
}
