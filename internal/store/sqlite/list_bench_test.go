package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nexa-run/nexa/internal/state"
)

// listStoreRuns is the size of the store BenchmarkList reads: issue 14's
// 50,000 runs.
const listStoreRuns = 50_000

// fillRuns writes n run headers (no child rows: a listing reads only the
// runs table) in one transaction, shaped like real ones: 20 agents, one
// run in 100 waiting for approval, creation instants 1.5 s apart with
// every tenth one shared by two runs.
func fillRuns(b testing.TB, s *SQLite, n int) {
	b.Helper()
	ctx := context.Background()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer tx.Rollback()
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO runs (id, revision, status, agent, file, created_at, updated_at, config, task, usage)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		b.Fatal(err)
	}
	defer stmt.Close()
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < n; i++ {
		agent := fmt.Sprintf("Agent%02d", i%20)
		status := state.StatusCompleted
		if i%100 == 7 {
			status = state.StatusWaitingApproval
		}
		cfg, _ := json.Marshal(state.Config{SourceFile: "agents/" + agent + ".nx", SourceHash: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
			Agent: agent, Provider: state.ProviderIdentity{Kind: "openai", Model: "gpt-4o-mini", BaseURL: "https://api.example.com/v1"}, WorkDir: "/srv/agents"})
		usage, _ := json.Marshal(state.Usage{InputTokens: 1200, OutputTokens: 300, TotalTokens: 1500, ProviderRequests: 4, ToolCalls: 3})
		created := t0.Add(time.Duration(i-i%10/9) * 1500 * time.Millisecond).UnixNano()
		if _, err := stmt.ExecContext(ctx, fmt.Sprintf("run_%026d", i), 12, string(status), agent, "agents/"+agent+".nx",
			created, created+int64(40*time.Second), string(cfg), "summarize the open tickets of the week and draft replies", string(usage)); err != nil {
			b.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
}

// listStore opens a store of listStoreRuns runs. With NEXA_BENCH_LIST_STORE
// set to a file name, the store is kept there (made once, reused), so that
// bench/runs-list.sh can time the nexa binary on the same data.
func listStore(b *testing.B) *SQLite {
	path := os.Getenv("NEXA_BENCH_LIST_STORE")
	if path == "" {
		path = DefaultPath(b.TempDir())
	}
	_, statErr := os.Stat(path)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		b.Fatal(err)
	}
	s, err := Open(context.Background(), path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	if statErr != nil {
		fillRuns(b, s, listStoreRuns)
	}
	return s
}

// BenchmarkList lists a 50,000-run store as nexa runs list does: a page
// of 50 (one more is read to know whether another page exists) from the
// newest, from the middle by cursor, filtered by status and by agent, and
// for contrast the whole store.
func BenchmarkList(b *testing.B) {
	s := listStore(b)
	ctx := context.Background()
	mid := &state.Cursor{CreatedAt: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).Add(listStoreRuns / 2 * 1500 * time.Millisecond), ID: "run_~"}
	for _, c := range []struct {
		name string
		f    state.Filter
		want int
	}{
		{"first_page", state.Filter{Limit: 51}, 51},
		{"page_by_cursor", state.Filter{Limit: 51, After: mid}, 51},
		{"status_waiting", state.Filter{Limit: 51, Status: state.StatusWaitingApproval}, 51},
		{"agent", state.Filter{Limit: 51, Agent: "Agent07"}, 51},
		{"agent_and_status", state.Filter{Limit: 51, Agent: "Agent07", Status: state.StatusWaitingApproval}, 51},
		{"all", state.Filter{}, listStoreRuns},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				runs, err := s.List(ctx, c.f)
				if err != nil || len(runs) != c.want {
					b.Fatalf("List(%+v): %d runs, %v", c.f, len(runs), err)
				}
			}
		})
	}
}

// BenchmarkShow reads a long run (2,000 steps: 4,000 messages and 2,000
// journal entries) whole, and its tail of 20 rows as runs show --tail 20
// does.
func BenchmarkShow(b *testing.B) {
	s, _ := openTemp(b)
	ctx := context.Background()
	if err := s.Create(ctx, newRun("run_long", 4000, 2000)); err != nil {
		b.Fatal(err)
	}
	b.Run("whole", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if st, err := s.Load(ctx, "run_long"); err != nil || len(st.Messages) != 4000 {
				b.Fatal(err)
			}
		}
	})
	b.Run("tail_20", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if st, om, err := s.LoadTail(ctx, "run_long", 20); err != nil || len(st.Messages) != 20 || om.Messages != 3980 {
				b.Fatal(err)
			}
		}
	})
}
