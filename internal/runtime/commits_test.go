package runtime_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/nexa-run/nexa/internal/ir"
	"github.com/nexa-run/nexa/internal/runtime"
	"github.com/nexa-run/nexa/internal/runtime/state"
	"github.com/nexa-run/nexa/internal/store"
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
	s, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "runs.sqlite3"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cs := &countingStore{Store: s}
	prog := echoProgram("sha256:commits", ir.BodyPython)
	const rounds = 5
	r, err := runtime.NewRunner(runtime.Config{Program: prog, Agent: prog.Agents[0], Store: cs, Provider: loopProvider{rounds: rounds},
		Executors: map[ir.BodyKind]runtime.Executor{ir.BodyPython: echoExec{}}})
	if err != nil {
		t.Fatal(err)
	}
	st, err := r.Start(context.Background(), runtime.NewRun{Task: "t", WorkDir: t.TempDir()})
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
