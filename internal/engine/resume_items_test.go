package engine_test

import (
	"context"
	"encoding/json"
	"github.com/nexa-run/nexa/internal/tool"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nexa-run/nexa/internal/engine"
	"github.com/nexa-run/nexa/internal/ir"
	"github.com/nexa-run/nexa/internal/state"
	"github.com/nexa-run/nexa/internal/store/sqlite"
)

// pausedOnSQLite starts, on a SQLite store of its own, a run of
// confirmProgram that makes rounds echo calls and then waits for the
// approval of call c3, and returns the store, the runner, the paused run
// and the request that resumes it.
func pausedOnSQLite(t *testing.T, rounds int) (*sqlite.SQLite, *engine.Runner, *state.RunState, engine.ResumeRequest) {
	t.Helper()
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "runs.sqlite3"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	prog := confirmProgram()
	r, err := engine.NewRunner(engine.Config{Program: prog, Agent: prog.Agents[0], Store: s, Provider: pausingProvider{rounds: rounds},
		Executors: map[ir.BodyKind]tool.Executor{ir.BodyPython: echoExec{}}})
	if err != nil {
		t.Fatal(err)
	}
	workDir := t.TempDir()
	paused, err := r.Start(ctx, engine.NewRun{Task: "t", WorkDir: workDir})
	if err != nil || paused.Status != state.StatusWaitingApproval {
		t.Fatalf("start: %v, status %s", err, paused.Status)
	}
	return s, r, paused, engine.ResumeRequest{Agent: "A", SourceHash: prog.Hash, Provider: pausingProvider{}.Identity(), WorkDir: workDir}
}

// TestResumeKeepsProviderItems: a resume on the SQLite store loads the run
// without the provider items' bodies (state.DriveLoader), yet the items it
// appends follow the stored ones and the stored ones keep their bodies.
func TestResumeKeepsProviderItems(t *testing.T) {
	const rounds = 3
	ctx := context.Background()
	s, r, paused, req := pausedOnSQLite(t, rounds)
	st, err := r.Resume(ctx, engine.ResumeOptions{RunID: paused.ID, Request: req,
		Decisions: []engine.Decision{{CallID: "c3", Approve: true}}})
	if err != nil || st.Status != state.StatusCompleted {
		t.Fatalf("resume: %v, status %s", err, st.Status)
	}
	stored, err := s.Load(ctx, paused.ID)
	if err != nil {
		t.Fatal(err)
	}
	// rounds echo replies, the confirm reply, the answer.
	if len(stored.ProviderItems) != rounds+2 {
		t.Fatalf("stored %d provider items, want %d", len(stored.ProviderItems), rounds+2)
	}
	for i, it := range stored.ProviderItems {
		var raw map[string]any
		if it.Seq != i || json.Unmarshal(it.Raw, &raw) != nil || raw == nil || it.CreatedAt.IsZero() {
			t.Errorf("stored item %d = seq %d raw %s created %v; want seq %d with its reply", i, it.Seq, it.Raw, it.CreatedAt, i)
		}
	}
}

// TestResumeKeepsJournalBodies: a resume on the SQLite store loads the
// completed calls of earlier replies as stubs (state.DriveLoader), yet the
// run it saves keeps every stored entry whole, and a decision on such a
// call is refused with how the call completed.
func TestResumeKeepsJournalBodies(t *testing.T) {
	const rounds = 3
	ctx := context.Background()
	s, r, paused, req := pausedOnSQLite(t, rounds)
	before, err := s.Load(ctx, paused.ID)
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Resume(ctx, engine.ResumeOptions{RunID: paused.ID, Request: req,
		Decisions: []engine.Decision{{CallID: "c1", Approve: true}}})
	if err == nil || !strings.Contains(err.Error(), "call c1 of run "+paused.ID+" is not pending approval (it is completed: executed)") {
		t.Fatalf("approving a completed call: %v", err)
	}

	st, err := r.Resume(ctx, engine.ResumeOptions{RunID: paused.ID, Request: req,
		Decisions: []engine.Decision{{CallID: "c3", Approve: true}}})
	if err != nil || st.Status != state.StatusCompleted {
		t.Fatalf("resume: %v, status %s", err, st.Status)
	}
	stored, err := s.Load(ctx, paused.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(stored.Journal) != rounds+1 {
		t.Fatalf("stored %d journal entries, want %d", len(stored.Journal), rounds+1)
	}
	for i, e := range before.Journal[:rounds] {
		got, _ := json.Marshal(stored.Journal[i])
		want, _ := json.Marshal(e)
		if string(got) != string(want) || e.Result == "" {
			t.Errorf("stored entry %d after the resume\n%s\nwant it as it was\n%s", i, got, want)
		}
	}
	if c := stored.Journal[rounds]; c.CallID != "c3" || c.Stage != state.StageCompleted || c.Result == "" || c.Decision == nil || !*c.Decision {
		t.Errorf("approved call stored as %+v", c)
	}
	// The model was sent every tool result of the earlier rounds: the
	// resumed run's tool messages are the journal's results.
	for _, m := range stored.Messages {
		if m.Role == state.RoleTool && (m.Content == "" || m.Content != stored.Entry(m.ToolCallID).Result) {
			t.Errorf("tool message %d = %q, want the result of %s", m.Seq, m.Content, m.ToolCallID)
		}
	}
}

// TestResumeLoadsWholeWhenTheLatestCallIsAStub: the store's drive load
// keeps whole only the entries of the journal's largest turn. In a run
// whose latest reply's call carries a smaller turn than an earlier call
// (as an imported or hand-made journal may), that call would come as a
// stub; the resume then loads the run whole, so the tool message it
// appends carries the call's stored result.
func TestResumeLoadsWholeWhenTheLatestCallIsAStub(t *testing.T) {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "runs.sqlite3"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	prog := confirmProgram()
	workDir := t.TempDir()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	entry := func(id string, seq, turn int, result string) state.JournalEntry {
		return state.JournalEntry{CallID: id, Tool: "echo", Seq: seq, Turn: turn, Arguments: json.RawMessage(`{"text":"x"}`), Valid: true,
			Stage: state.StageCompleted, Result: result, Success: true, Outcome: "executed", CreatedAt: at, CompletedAt: &at}
	}
	run := &state.RunState{
		ID: "run_stub_latest", Status: state.StatusInterrupted, CreatedAt: at, UpdatedAt: at, Task: "t",
		Config: state.Config{SourceHash: prog.Hash, Agent: "A", Provider: pausingProvider{}.Identity(), WorkDir: workDir},
		Messages: []state.Message{
			{Seq: 0, Role: state.RoleUser, Content: "t"},
			{Seq: 1, Role: state.RoleAssistant, ToolCalls: []state.ToolCall{{ID: "c0", Name: "echo", Arguments: `{"text":"x"}`}}},
			{Seq: 2, Role: state.RoleTool, ToolCallID: "c0", Name: "echo", Content: "first result"},
			{Seq: 3, Role: state.RoleAssistant, ToolCalls: []state.ToolCall{{ID: "c1", Name: "echo", Arguments: `{"text":"x"}`}}},
		},
		Journal: []state.JournalEntry{entry("c0", 0, 5, "first result"), entry("c1", 1, 1, "second result")},
	}
	if err := s.Create(ctx, run); err != nil {
		t.Fatal(err)
	}
	r, err := engine.NewRunner(engine.Config{Program: prog, Agent: prog.Agents[0], Store: s, Provider: pausingProvider{rounds: 0},
		Executors: map[ir.BodyKind]tool.Executor{ir.BodyPython: echoExec{}}})
	if err != nil {
		t.Fatal(err)
	}
	req := engine.ResumeRequest{Agent: "A", SourceHash: prog.Hash, Provider: pausingProvider{}.Identity(), WorkDir: workDir}
	st, err := r.Resume(ctx, engine.ResumeOptions{RunID: run.ID, Request: req})
	if err != nil || st.Status != state.StatusCompleted {
		t.Fatalf("resume: %v, status %v", err, st)
	}
	stored, err := s.Load(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if m := stored.Messages[4]; m.Role != state.RoleTool || m.ToolCallID != "c1" || m.Content != "second result" {
		t.Fatalf("tool message after the resume = %+v, want c1's stored result", m)
	}
}

// A run read ahead (Preload) is used by Resume only while it is current:
// a decision recorded between the read and the resume is seen, and the
// resume executes the approved call instead of finding it pending.
func TestResumeReadsAgainARunChangedSincePreload(t *testing.T) {
	ctx := context.Background()
	s, r, paused, req := pausedOnSQLite(t, 2)
	pre := engine.Preload(ctx, s, paused.ID)
	pre.Wait()
	if _, err := engine.Decide(ctx, s, paused.ID, []engine.Decision{{CallID: "c2", Approve: true}}); err != nil {
		t.Fatal(err)
	}
	st, err := r.Resume(ctx, engine.ResumeOptions{RunID: paused.ID, Request: req, Preloaded: pre})
	if err != nil || st.Status != state.StatusCompleted {
		t.Fatalf("resume after a decision made since the read ahead: %v, status %s", err, st.Status)
	}
	if e := st.Entry("c2"); e == nil || e.Stage != state.StageCompleted || e.Decision == nil || !*e.Decision {
		t.Fatalf("the approved call: %+v", e)
	}
}

// A run read ahead and still current is what Resume continues.
func TestResumeUsesACurrentPreload(t *testing.T) {
	ctx := context.Background()
	s, r, paused, req := pausedOnSQLite(t, 2)
	pre := engine.Preload(ctx, s, paused.ID)
	st, err := r.Resume(ctx, engine.ResumeOptions{RunID: paused.ID, Request: req, Preloaded: pre,
		Decisions: []engine.Decision{{CallID: "c2", Approve: true}}})
	if err != nil || st.Status != state.StatusCompleted {
		t.Fatalf("resume from a current read ahead: %v, status %s", err, st.Status)
	}
}
