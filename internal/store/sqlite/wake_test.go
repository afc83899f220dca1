package sqlite

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/nexa-run/nexa/internal/state"
)

// A store written before wake-ups (schema version 4) holding a worker run
// that waits for an expiring approval is upgraded so that the run wakes
// when its wait runs out, as one saved since would; a run of nexa agent
// waiting the same way does not.
func TestMigrationToWakeUps(t *testing.T) {
	ctx := context.Background()
	path := tempFile(t, "runs.sqlite3")
	db := atVersion(t, path, 4)
	expires := time.Date(2030, 1, 2, 3, 4, 5, 123456789, time.UTC)
	entry, err := json.Marshal(state.JournalEntry{CallID: "call_1", Tool: "t", Turn: 1, Arguments: []byte("{}"), Valid: true,
		Stage: state.StageNotStarted, NeedsApproval: true, ExpiresAt: &expires})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct{ id, driver string }{{"fg", ""}, {"worker", state.DriverWorker}} {
		cfg, _ := json.Marshal(state.Config{SourceFile: "a.nx", SourceHash: "sha256:p", Agent: "A", WorkDir: ".", Driver: r.driver})
		if _, err := db.Exec(`INSERT INTO runs (id, revision, status, agent, file, created_at, updated_at, config, task, usage, runnable, source_hash)
			VALUES (?, 1, 'waiting_approval', 'A', 'a.nx', 1, 1, ?, 'task', '{}', 0, 'sha256:p')`, r.id, string(cfg)); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(`INSERT INTO journal (run_id, call_id, seq, stage, turn, body) VALUES (?, 'call_1', 0, 'not_started', 1, ?)`, r.id, string(entry)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	now := expires.Add(-time.Millisecond)
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	s, err := Open(ctx, path, WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	req := state.ClaimRequest{Owner: "w", TTL: time.Minute, SourceHashes: []string{"sha256:p"}}
	if id, _, err := s.Claim(ctx, req); err != nil || id != "" {
		t.Fatalf("Claim before the expiry: %q, %v; want nothing", id, err)
	}
	mu.Lock()
	now = expires.Add(time.Millisecond)
	mu.Unlock()
	if id, _, err := s.Claim(ctx, req); err != nil || id != "worker" {
		t.Fatalf("Claim after the expiry: %q, %v; want the worker run", id, err)
	}
	if id, _, err := s.Claim(ctx, req); err != nil || id != "" {
		t.Fatalf("Claim again: %q, %v; want nothing (the run of nexa agent is its starter's)", id, err)
	}
}
