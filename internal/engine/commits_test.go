package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/nexa-run/nexa/internal/tool"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nexa-run/nexa/internal/engine"
	"github.com/nexa-run/nexa/internal/ir"
	"github.com/nexa-run/nexa/internal/provider"
	"github.com/nexa-run/nexa/internal/state"
	"github.com/nexa-run/nexa/internal/store/sqlite"
)

// countingStore counts the durable writes a run makes (every Save is one
// committed transaction).
type countingStore struct {
	state.Store
	saves int
}

func (c *countingStore) Save(ctx context.Context, st *state.RunState, d state.Delta) error {
	c.saves++
	return c.Store.Save(ctx, st, d)
}

// A tool round with one call costs three commits: the reply with its
// journal entry, started, and the result with the tool message. The final
// answer is one more. The journal's order is unchanged: the result and the
// tool message are in the run when it completes.
func TestOneCallStepMakesThreeCommits(t *testing.T) {
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "runs.sqlite3"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cs := &countingStore{Store: s}
	prog := echoProgram("sha256:commits", ir.BodyPython)
	const rounds = 5
	r, err := engine.NewRunner(engine.Config{Program: prog, Agent: prog.Agents[0], Store: cs, Provider: loopProvider{rounds: rounds},
		Executors: map[ir.BodyKind]tool.Executor{ir.BodyPython: echoExec{}}})
	if err != nil {
		t.Fatal(err)
	}
	st, err := r.Start(context.Background(), engine.NewRun{Task: "t", WorkDir: t.TempDir()})
	if err != nil || st.Status != state.StatusCompleted {
		t.Fatalf("run: %v, status %s", err, st.Status)
	}
	if want := 3*rounds + 1; cs.saves != want {
		t.Fatalf("a run of %d one-call rounds made %d commits, want %d (3 per round, 1 for the answer)", rounds, cs.saves, want)
	}
	got, err := s.Load(context.Background(), st.ID)
	if err != nil {
		t.Fatal(err)
	}
	// system, user, then (assistant, tool) per round, then the answer.
	if len(got.Messages) != 2+2*rounds+1 {
		t.Fatalf("stored %d messages, want %d", len(got.Messages), 2+2*rounds+1)
	}
	for i := 0; i < rounds; i++ {
		m := got.Messages[3+2*i]
		if m.Role != state.RoleTool || m.ToolCallID != got.Journal[i].CallID || m.Content != got.Journal[i].Result {
			t.Fatalf("message %d is %+v, want the tool message of %s", 3+2*i, m, got.Journal[i].CallID)
		}
	}
}

// threeCallProvider replies once with three echo calls, then answers.
type threeCallProvider struct{}

func (threeCallProvider) Complete(_ context.Context, req provider.Request, _ func(provider.Event)) (provider.Reply, error) {
	for _, m := range req.Messages {
		if m.Role == state.RoleAssistant {
			return provider.Reply{Message: state.Message{Role: state.RoleAssistant, Content: "done"}, Raw: json.RawMessage(`{}`)}, nil
		}
	}
	var calls []state.ToolCall
	for i := 1; i <= 3; i++ {
		calls = append(calls, state.ToolCall{ID: fmt.Sprintf("c%d", i), Name: "echo", Arguments: fmt.Sprintf(`{"text":"t%d"}`, i)})
	}
	return provider.Reply{Message: state.Message{Role: state.RoleAssistant, ToolCalls: calls}, Raw: json.RawMessage(`{}`)}, nil
}

func (threeCallProvider) Identity() state.ProviderIdentity {
	return state.ProviderIdentity{Kind: "bench", Model: "m"}
}

// journalWatch records, at every save, the stage of each call the save
// writes, so a test can check what was durable when.
type journalWatch struct {
	state.Store
	saves [][]string // per save: "CALL:STAGE" of its journal rows
}

func (w *journalWatch) Save(ctx context.Context, st *state.RunState, d state.Delta) error {
	var rows []string
	for _, e := range d.Journal {
		rows = append(rows, e.CallID+":"+string(e.Stage))
	}
	w.saves = append(w.saves, rows)
	return w.Store.Save(ctx, st, d)
}

// With --max-parallel-tools 1 the calls of one reply run one after
// another, and each result shares the write of the next call's started: a reply with three calls costs
// five commits (the reply, started of c1, result of c1 with started of
// c2, result of c2 with started of c3, result of c3 with the tool
// messages) and the answer one more, where each call used to commit its
// own started and its own result (eight). Every started is durable before
// its tool runs: the executor sees it in the store.
func TestThreeCallReplySharesWrites(t *testing.T) {
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "runs.sqlite3"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	w := &journalWatch{Store: s}
	prog := echoProgram("sha256:commits3", ir.BodyPython)
	var seen []string
	exec := execFunc(func(inv tool.Invocation) {
		// What the store holds while the tool runs.
		st, err := s.Load(context.Background(), inv.RunID)
		if err != nil {
			t.Error(err)
			return
		}
		for _, e := range st.Journal {
			seen = append(seen, fmt.Sprintf("%s:%s", e.CallID, e.Stage))
		}
		seen = append(seen, "|")
	})
	r, err := engine.NewRunner(engine.Config{Program: prog, Agent: prog.Agents[0], Store: w, Provider: threeCallProvider{},
		Executors: map[ir.BodyKind]tool.Executor{ir.BodyPython: exec}, MaxParallelTools: 1})
	if err != nil {
		t.Fatal(err)
	}
	st, err := r.Start(context.Background(), engine.NewRun{Task: "t", WorkDir: t.TempDir()})
	if err != nil || st.Status != state.StatusCompleted {
		t.Fatalf("run: %v, status %s", err, st.Status)
	}
	want := [][]string{
		{"c1:not_started", "c2:not_started", "c3:not_started"},
		{"c1:started"},
		{"c1:completed", "c2:started"},
		{"c2:completed", "c3:started"},
		{"c3:completed"},
		nil,
	}
	if fmt.Sprint(w.saves) != fmt.Sprint(want) {
		t.Fatalf("journal rows per commit:\n%v\nwant\n%v", w.saves, want)
	}
	// While each tool ran, its own entry was started and every earlier
	// one completed in the store.
	wantSeen := "c1:started c2:not_started c3:not_started | c1:completed c2:started c3:not_started | c1:completed c2:completed c3:started |"
	if got := strings.Join(seen, " "); got != wantSeen {
		t.Fatalf("stored journal while each tool ran:\n%s\nwant\n%s", got, wantSeen)
	}
	got, err := s.Load(context.Background(), st.ID)
	if err != nil {
		t.Fatal(err)
	}
	// system, user, assistant, three tool messages in call order, answer.
	if len(got.Messages) != 7 {
		t.Fatalf("stored %d messages, want 7", len(got.Messages))
	}
	for i := 0; i < 3; i++ {
		if m := got.Messages[3+i]; m.Role != state.RoleTool || m.ToolCallID != fmt.Sprintf("c%d", i+1) {
			t.Fatalf("message %d is %+v, want the tool message of c%d", 3+i, m, i+1)
		}
	}
}
