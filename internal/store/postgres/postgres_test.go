package postgres

import (
	"context"
	"errors"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/nexa-run/nexa/internal/state"
	"github.com/nexa-run/nexa/internal/store/postgres/pgtest"
)

var ctx = context.Background()

func open(t testing.TB, u string) *Store {
	t.Helper()
	s, err := Open(ctx, u)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func sample(id string) *state.RunState {
	return &state.RunState{
		ID: id, Status: state.StatusRunning, Task: "task",
		Config:   state.Config{SourceFile: "a.nx", Agent: "A"},
		Messages: []state.Message{{Seq: 0, Role: state.RoleUser, Content: "task"}},
	}
}

func TestConcurrentOpensMigrateOnce(t *testing.T) {
	u := pgtest.FreshURL(t)
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := Open(ctx, u)
			if err == nil {
				s.Close()
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("open %d of %d concurrent opens of a new database: %v", i+1, n, err)
		}
	}
	s := open(t, u)
	if v, err := readVersion(ctx, s.pool); err != nil || v != SchemaVersion() {
		t.Fatalf("schema version %d (%v), want %d", v, err, SchemaVersion())
	}
}

func TestNewerSchemaRefusedWithoutWriting(t *testing.T) {
	u := pgtest.FreshURL(t)
	s := open(t, u)
	if err := s.Create(ctx, sample("run_a")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `UPDATE nexa_schema SET version = 99`); err != nil {
		t.Fatal(err)
	}
	fingerprint := func() string {
		var fp string
		err := s.pool.QueryRow(ctx, `SELECT (SELECT xmin::text || ':' || version FROM nexa_schema) || '/' ||
			(SELECT string_agg(xmin::text || ':' || revision, ',') FROM nexa_runs) || '/' ||
			(SELECT count(*) FROM pg_tables WHERE schemaname = current_schema())`).Scan(&fp)
		if err != nil {
			t.Fatal(err)
		}
		return fp
	}
	before := fingerprint()
	_, err := Open(ctx, u)
	if !errors.Is(err, ErrNewerSchema) || !strings.Contains(err.Error(), "version 99") {
		t.Fatalf("Open of a newer schema: %v, want ErrNewerSchema naming version 99", err)
	}
	if after := fingerprint(); after != before {
		t.Fatalf("the refused Open wrote: %s → %s", before, after)
	}
}

func TestCreateDuplicateIsErrExists(t *testing.T) {
	s := open(t, pgtest.FreshURL(t))
	if err := s.Create(ctx, sample("run_dup")); err != nil {
		t.Fatal(err)
	}
	st := sample("run_dup")
	st.Task = "another"
	if err := s.Create(ctx, st); !errors.Is(err, state.ErrExists) {
		t.Fatalf("second Create: %v, want state.ErrExists", err)
	}
	if got, err := s.Load(ctx, "run_dup"); err != nil || got.Task != "task" {
		t.Fatalf("the refused Create changed the run: %+v %v", got, err)
	}
}

// A connection that dies while a save is in flight (here: terminated by the
// server just before COMMIT) leaves the run at its last committed revision
// with exactly that revision's rows, and the same save can then be retried.
func TestDroppedConnectionMidSave(t *testing.T) {
	u := pgtest.FreshURL(t)
	s, other := open(t, u), open(t, u)
	st := sample("run_drop")
	if err := s.Create(ctx, st); err != nil {
		t.Fatal(err)
	}
	admin, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	s.beforeCommit = func(ctx context.Context, tx pgx.Tx) error {
		pid := tx.Conn().PgConn().PID()
		var ok bool
		if err := admin.QueryRow(ctx, `SELECT pg_terminate_backend($1, 10000)`, pid).Scan(&ok); err != nil || !ok {
			t.Errorf("pg_terminate_backend(%d): %v %v", pid, ok, err)
		}
		return nil
	}
	st.Messages = append(st.Messages, state.Message{Seq: 1, Role: state.RoleAssistant, Content: "lost"})
	st.Status = state.StatusCompleted
	if err := s.Save(ctx, st, state.Delta{Messages: st.Messages[1:]}); err == nil {
		t.Fatal("Save over a terminated connection reported success")
	}
	got, err := other.Load(ctx, "run_drop")
	if err != nil {
		t.Fatal(err)
	}
	if got.Revision != 1 || len(got.Messages) != 1 || got.Status != state.StatusRunning {
		t.Fatalf("after the dropped save: revision %d, %d messages, %s", got.Revision, len(got.Messages), got.Status)
	}
	s.beforeCommit = nil
	if err := s.Save(ctx, st, state.Delta{Messages: st.Messages[1:]}); err != nil {
		t.Fatalf("retried Save on a new connection: %v", err)
	}
	if got, _ := other.Load(ctx, "run_drop"); got.Revision != 2 || len(got.Messages) != 2 {
		t.Fatalf("after the retry: revision %d, %d messages", got.Revision, len(got.Messages))
	}
}

// After a server restart every pooled connection of a handle is dead, and
// the pool hands them out again (it pings only those idle for a second).
// A save, a read, a claim and a listing on such a connection are run again on a new
// one, not given up: a worker rides out a PostgreSQL restart (the soak,
// internal/soak, crashes the server under load). The server's side of the
// restart is played by terminating the handle's backends.
func TestLostConnectionsRetried(t *testing.T) {
	u := pgtest.FreshURL(t)
	s := open(t, u)
	admin, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	restart := func() {
		t.Helper()
		// Check out several connections at once, so the pool holds more
		// than one, then cut every one the handle holds.
		var held []*pgxpool.Conn
		for range 3 {
			c, err := s.pool.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, c)
		}
		var pids []uint32
		for _, c := range held {
			pids = append(pids, c.Conn().PgConn().PID())
			c.Release()
		}
		for _, pid := range pids {
			var ok bool
			if err := admin.QueryRow(ctx, `SELECT pg_terminate_backend($1, 10000)`, pid).Scan(&ok); err != nil || !ok {
				t.Fatalf("pg_terminate_backend(%d): %v %v", pid, ok, err)
			}
		}
	}
	st := sample("run_restart")
	if err := s.Create(ctx, st); err != nil {
		t.Fatal(err)
	}
	restart()
	st.Messages = append(st.Messages, state.Message{Seq: 1, Role: state.RoleAssistant, Content: "after the restart"})
	if err := s.Save(ctx, st, state.Delta{Messages: st.Messages[1:]}); err != nil {
		t.Fatalf("Save after the server restarted: %v", err)
	}
	restart()
	got, err := s.Load(ctx, "run_restart")
	if err != nil {
		t.Fatalf("Load after the server restarted: %v", err)
	}
	if got.Revision != 2 || len(got.Messages) != 2 {
		t.Fatalf("after the restart: revision %d, %d messages, want 2 and 2", got.Revision, len(got.Messages))
	}
	restart()
	if _, _, err := s.Claim(ctx, state.ClaimRequest{Owner: "w", TTL: time.Second, SourceHashes: []string{"h"}}); err != nil {
		t.Fatalf("Claim after the server restarted: %v", err)
	}
	restart()
	if runs, err := s.List(ctx, state.Filter{}); err != nil || len(runs) != 1 {
		t.Fatalf("List after the server restarted: %d runs, %v", len(runs), err)
	}
}

func TestPasswordNeverInErrors(t *testing.T) {
	base := pgtest.ServerURL(t)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	const pw = "Sekr1t-pw-for-the-test"
	u.User = url.UserPassword(u.User.Username(), pw)
	wrongPort := *u
	wrongPort.Host = u.Hostname() + ":1"
	for _, raw := range []string{
		u.String(),         // wrong password
		wrongPort.String(), // nothing listens
		strings.Replace(u.String(), "@", "@[", 1), // unparsable
		"postgres://nexa:" + pw + "@127.0.0.1:5432/db?sslmode=bogus",
	} {
		ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		_, err := Open(ctx, raw)
		cancel()
		if err == nil {
			t.Fatalf("Open with a wrong password succeeded")
		}
		if strings.Contains(err.Error(), pw) {
			t.Errorf("the error shows the password: %v", err)
		}
	}
	if r := Redact(u.String()); strings.Contains(r, pw) || !strings.Contains(r, "xxxxx") {
		t.Errorf("Redact: %s", r)
	}
}

// A serialization failure (40001) is retried: two SERIALIZABLE writers of
// one row cannot both commit, and the loser's transaction runs again.
func TestSerializationFailureRetried(t *testing.T) {
	s := open(t, pgtest.FreshURL(t))
	if err := s.Create(ctx, sample("run_ser")); err != nil {
		t.Fatal(err)
	}
	attempts := 0
	other := open(t, s.pool.Config().ConnString())
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		attempts++
		if _, err := tx.Exec(ctx, `SET TRANSACTION ISOLATION LEVEL SERIALIZABLE`); err != nil {
			return err
		}
		var rev int64
		if err := tx.QueryRow(ctx, `SELECT revision FROM nexa_runs WHERE id = 'run_ser'`).Scan(&rev); err != nil {
			return err
		}
		if attempts == 1 { // another writer commits after our snapshot
			if _, err := other.pool.Exec(ctx, `UPDATE nexa_runs SET revision = revision + 1 WHERE id = 'run_ser'`); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, `UPDATE nexa_runs SET revision = $1 + 1 WHERE id = 'run_ser'`, rev)
		return err
	})
	if err != nil || attempts != 2 {
		t.Fatalf("inTx: %v after %d attempts, want success on the second", err, attempts)
	}
}

// The password the CLI must redact is found wherever libpq conventions put
// it, not only in the URL.
func TestPasswordFromEnvironmentAndPassfile(t *testing.T) {
	t.Setenv("PGPASSWORD", "from-the-environment")
	if got := Password("postgres://u@db.example:5432/runs"); got != "from-the-environment" {
		t.Errorf("Password with PGPASSWORD = %q", got)
	}
	t.Setenv("PGPASSWORD", "")
	pass := t.TempDir() + "/pgpass"
	if err := os.WriteFile(pass, []byte("db.example:5432:runs:u:from-the-passfile\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PGPASSFILE", pass)
	if got := Password("postgresql://u@db.example:5432/runs"); got != "from-the-passfile" {
		t.Errorf("Password with a passfile = %q", got)
	}
	if got := Password("postgres://u:in-the-url@db.example/runs"); got != "in-the-url" {
		t.Errorf("Password of a URL = %q", got)
	}
	if got := Password("runs.sqlite3"); got != "" {
		t.Errorf("Password of a file name = %q", got)
	}
}

// A save must cost the same at step 1,000 as at step 10. Timing cannot
// show that on a shared machine; what would make it grow can be checked
// exactly: the header row is updated by every save, and if those updates
// were not HOT each would add an entry to every index of nexa_runs, which
// then grow with the number of steps (and every lookup by id walks the dead
// versions). The indexes must not grow at all over many saves.
func TestHeaderUpdatesDoNotGrowIndexes(t *testing.T) {
	s := open(t, pgtest.FreshURL(t))
	st := benchRun("run_flat", 10)
	st.Lease = &state.Lease{Owner: "bench", TTL: time.Minute}
	if err := s.Create(ctx, st); err != nil {
		t.Fatal(err)
	}
	indexBytes := func() int64 {
		var n int64
		if err := s.pool.QueryRow(ctx, `SELECT pg_indexes_size('nexa_runs')`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := indexBytes()
	next := 10
	for i := 0; i < 600; i++ {
		st.Usage.ToolCalls++
		if i%10 == 0 {
			if err := s.Renew(ctx, st.ID, st.Lease); err != nil {
				t.Fatal(err)
			}
		}
		err := s.Save(ctx, st, state.Delta{Messages: []state.Message{benchMessage(next)}, Journal: []state.JournalEntry{benchEntry(i%5, i)}})
		if err != nil {
			t.Fatalf("save %d: %v", i, err)
		}
		next++
	}
	if after := indexBytes(); after != before {
		t.Fatalf("the indexes of nexa_runs grew from %d to %d bytes over 600 saves of one run: header updates are not HOT", before, after)
	}
}

// A command that only looks at runs never creates the tables.
func TestWithoutCreateWritesNothing(t *testing.T) {
	u := pgtest.FreshURL(t)
	if _, err := Open(ctx, u, WithoutCreate()); !errors.Is(err, ErrNoStore) {
		t.Fatalf("Open WithoutCreate of an empty database: %v, want ErrNoStore", err)
	}
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d tables after a WithoutCreate open (%v)", n, err)
	}
	open(t, u) // a command that starts a run creates them
	if _, err := Open(ctx, u, WithoutCreate()); err != nil {
		t.Fatalf("Open WithoutCreate of a store: %v", err)
	}
}
