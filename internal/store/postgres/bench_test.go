package postgres

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nexa-run/nexa/internal/state"
	"github.com/nexa-run/nexa/internal/store/postgres/pgtest"
)

// benchRun is shaped like the SQLite store's benchmark run: n messages
// and n/2 journal entries of a few hundred bytes each.
func benchRun(id string, n int) *state.RunState {
	st := &state.RunState{ID: id, Status: state.StatusRunning, Task: "do the thing",
		Config: state.Config{SourceFile: "agents/demo.nx", Agent: "demo", WorkDir: "/work"}}
	for i := 0; i < n; i++ {
		st.Messages = append(st.Messages, benchMessage(i))
	}
	for i := 0; i < n/2; i++ {
		st.Journal = append(st.Journal, benchEntry(i, 1))
	}
	return st
}

func benchMessage(seq int) state.Message {
	return state.Message{Seq: seq, Role: state.RoleAssistant,
		Content:   fmt.Sprintf("message %d: %s", seq, strings.Repeat("lorem ipsum ", 20)),
		ToolCalls: []state.ToolCall{{ID: fmt.Sprintf("call-%d", seq), Name: "file_read", Arguments: `{"path":"a.txt"}`}}}
}

func benchEntry(seq, attempts int) state.JournalEntry {
	at := time.Date(2025, 3, 1, 12, 0, 1, 0, time.UTC)
	return state.JournalEntry{CallID: fmt.Sprintf("call-%d", seq), Tool: "file_read", Seq: seq, Turn: 1,
		Arguments: json.RawMessage(`{"path":"a.txt"}`), Valid: true, Stage: state.StageCompleted,
		Result: strings.Repeat("result ", 30), Success: true, Outcome: "executed", Attempts: attempts,
		CreatedAt: at, StartedAt: &at}
}

// BenchmarkSaveStep saves one agent step (two new messages, one journal
// upsert and the header, one transaction committed with
// synchronous_commit=on) on a run of N messages and N/2 journal entries,
// as the SQLite store's benchmark of the same name does. The cost must not
// grow with N.
func BenchmarkSaveStep(b *testing.B) {
	for _, n := range []int{10, 1000, 10000} {
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
			s := open(b, pgtest.FreshURL(b))
			var sc string
			if err := s.pool.QueryRow(ctx, `SHOW synchronous_commit`).Scan(&sc); err != nil || sc != "on" {
				b.Fatalf("synchronous_commit is %q (%v), want on", sc, err)
			}
			st := benchRun("bench", n)
			if err := s.Create(ctx, st); err != nil {
				b.Fatal(err)
			}
			next := n
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				m1, m2 := benchMessage(next), benchMessage(next+1)
				next += 2
				st.Usage.ToolCalls++
				if err := s.Save(ctx, st, state.Delta{
					Messages: []state.Message{m1, m2},
					Journal:  []state.JournalEntry{benchEntry(i%(n/2), i)},
				}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkLoad reads a whole run of 1,000 messages and 500 journal entries.
func BenchmarkLoad(b *testing.B) {
	s := open(b, pgtest.FreshURL(b))
	if err := s.Create(ctx, benchRun("bench", 1000)); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		st, err := s.Load(ctx, "bench")
		if err != nil || len(st.Messages) != 1000 {
			b.Fatal(err)
		}
	}
}

// BenchmarkList lists 50,000 runs as the SQLite store's benchmark of the
// same name does (same shapes: 20 agents, one run in 100 waiting): a page
// of 51 from the newest, by cursor from the middle, by status, by agent.
func BenchmarkList(b *testing.B) {
	s := open(b, pgtest.FreshURL(b))
	if _, err := s.pool.Exec(ctx, `INSERT INTO nexa_runs (id, revision, status, agent, file, created_at, updated_at, config, task, usage)
		SELECT 'run_' || lpad(i::text, 26, '0'), 12,
			CASE WHEN i % 100 = 7 THEN 'waiting_approval' ELSE 'completed' END,
			'Agent' || lpad((i % 20)::text, 2, '0'), 'agents/Agent' || lpad((i % 20)::text, 2, '0') || '.nx',
			1735689600000000000 + (i - (i % 10) / 9) * 1500000000::bigint,
			1735689600000000000 + (i - (i % 10) / 9) * 1500000000::bigint + 40000000000,
			'{"source_file":"agents/demo.nx","agent":"demo","provider":{"kind":"openai","model":"gpt-4o-mini"},"budgets":{},"work_dir":"/srv"}',
			'summarize the open tickets of the week and draft replies',
			'{"input_tokens":1200,"output_tokens":300,"total_tokens":1500,"provider_requests":4,"tool_calls":3}'
		FROM generate_series(0, 49999) AS i`); err != nil {
		b.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `ANALYZE nexa_runs`); err != nil {
		b.Fatal(err)
	}
	mid := &state.Cursor{CreatedAt: time.Unix(0, 1735689600000000000+25000*1500000000).UTC(), ID: "run_~"}
	for _, c := range []struct {
		name string
		f    state.Filter
	}{
		{"first_page", state.Filter{Limit: 51}},
		{"page_by_cursor", state.Filter{Limit: 51, After: mid}},
		{"status_waiting", state.Filter{Limit: 51, Status: state.StatusWaitingApproval}},
		{"agent", state.Filter{Limit: 51, Agent: "Agent07"}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				runs, err := s.List(ctx, c.f)
				if err != nil || len(runs) != 51 {
					b.Fatalf("List(%+v): %d runs, %v", c.f, len(runs), err)
				}
			}
		})
	}
}
