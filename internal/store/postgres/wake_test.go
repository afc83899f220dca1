package postgres

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/nexa-run/nexa/internal/state"
	"github.com/nexa-run/nexa/internal/store/postgres/pgtest"
)

// A database written before wake-ups (schema version 2) holding worker
// runs that wait for expiring approvals is upgraded so that a run whose
// wait has run out by the database clock is claimed, as one saved since
// would be; one whose wait runs on, and a run of nexa agent, are not.
func TestMigrationToWakeUps(t *testing.T) {
	u := pgtest.FreshURL(t)
	all := migrations
	t.Cleanup(func() { migrations = all })
	migrations = all[:2]
	old := open(t, u)
	var dbNow time.Time
	if err := old.pool.QueryRow(ctx, `SELECT now()`).Scan(&dbNow); err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct {
		id, driver string
		expires    time.Time
	}{
		{"fg_past", "", dbNow.Add(-time.Second)},
		{"worker_future", state.DriverWorker, dbNow.Add(time.Hour)},
		{"worker_past", state.DriverWorker, dbNow.Add(-time.Second)},
	} {
		cfg, _ := json.Marshal(state.Config{SourceFile: "a.nx", SourceHash: "sha256:p", Agent: "A", WorkDir: ".", Driver: r.driver})
		entry, _ := json.Marshal(state.JournalEntry{CallID: "call_1", Tool: "t", Turn: 1, Arguments: []byte("{}"), Valid: true,
			Stage: state.StageNotStarted, NeedsApproval: true, ExpiresAt: &r.expires})
		if _, err := old.pool.Exec(ctx, `INSERT INTO nexa_runs (id, revision, status, agent, file, created_at, updated_at, config, task, usage, source_hash)
			VALUES ($1, 1, 'waiting_approval', 'A', 'a.nx', 1, 1, $2, 'task', '{}', 'sha256:p')`, r.id, string(cfg)); err != nil {
			t.Fatal(err)
		}
		if _, err := old.pool.Exec(ctx, `INSERT INTO nexa_journal (run_id, call_id, seq, body) VALUES ($1, 'call_1', 0, $2)`, r.id, string(entry)); err != nil {
			t.Fatal(err)
		}
	}
	old.Close()

	migrations = all
	s := open(t, u)
	req := state.ClaimRequest{Owner: "w", TTL: time.Minute, SourceHashes: []string{"sha256:p"}}
	if id, _, err := s.Claim(ctx, req); err != nil || id != "worker_past" {
		t.Fatalf("Claim after the upgrade: %q, %v; want worker_past, whose wait ran out", id, err)
	}
	if id, _, err := s.Claim(ctx, req); err != nil || id != "" {
		t.Fatalf("Claim again: %q, %v; want nothing", id, err)
	}
}
