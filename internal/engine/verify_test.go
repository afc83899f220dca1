package engine

import (
	"context"
	"github.com/nexa-run/nexa/internal/tool"
	"testing"

	"github.com/nexa-run/nexa/internal/ir"
	"github.com/nexa-run/nexa/internal/state"
)

// confinedExec is an executor whose calls cannot reach the store (a native
// body, a sandboxed tool).
type confinedExec struct{ countingExec }

func (*confinedExec) ReachesStore(*ir.Tool) bool { return false }

// verified returns the statuses of the saves that asked the store for its
// whole-file check.
func verified(m *memStore, statuses []state.Status) []state.Status {
	var out []state.Status
	for i, d := range m.saves {
		if d.Verify {
			out = append(out, statuses[i])
		}
	}
	return out
}

// statusStore records the run's status at every save, beside its Delta.
type statusStore struct {
	*memStore
	statuses []state.Status
}

func (s *statusStore) Save(ctx context.Context, st *state.RunState, d state.Delta) error {
	s.statuses = append(s.statuses, st.Status)
	return s.memStore.Save(ctx, st, d)
}

// TestWholeStoreCheckOnlyAfterToolsThatReachIt: the save that stops a run
// asks for SQLite's whole-file check (docs/runs.md, "The store") when a
// tool that runs with the user's rights ran in that drive, or when the
// drive picked up a run whose last process died mid-drive; a run of
// confined tools only never pays for a check whose cost grows with the
// whole store.
func TestWholeStoreCheckOnlyAfterToolsThatReachIt(t *testing.T) {
	turns := []state.Message{assistant(call("c1", "lookup", `{"q":"x"}`)), answer("done")}
	run := func(t *testing.T, exec tool.Executor) ([]state.Status, *statusStore) {
		t.Helper()
		h := newHarness(t, turns...)
		s := &statusStore{memStore: h.store}
		r, err := NewRunner(Config{Program: h.prog, Agent: h.prog.Agents[0], Store: s, Provider: h.prov,
			Executors: map[ir.BodyKind]tool.Executor{ir.BodyPython: exec}})
		if err != nil {
			t.Fatal(err)
		}
		st, err := r.Start(context.Background(), NewRun{Task: "t"})
		if err != nil || st.Status != state.StatusCompleted {
			t.Fatalf("start: %v, status %s", err, st.Status)
		}
		return verified(h.store, s.statuses), s
	}
	t.Run("confined tools", func(t *testing.T) {
		if got, _ := run(t, &confinedExec{}); len(got) != 0 {
			t.Errorf("saves that asked for the whole-file check: %v; want none", got)
		}
	})
	t.Run("a tool that reaches the store", func(t *testing.T) {
		// countingExec does not say what it reaches: taken to reach the store.
		got, s := run(t, &countingExec{})
		if len(got) != 1 || got[0] != state.StatusCompleted {
			t.Errorf("saves that asked for the whole-file check: %v; want only the final one (completed)", got)
		}
		if last := s.saves[len(s.saves)-1]; !last.Verify {
			t.Error("the save that completed the run did not ask for the check")
		}
	})
}

// TestWholeStoreCheckAfterACrash: a resume that finds the run running (its
// process died mid-drive, after tools it never checked the store against)
// checks the store when it stops the run, even with confined tools only; a
// resume of a run that stopped cleanly does not.
func TestWholeStoreCheckAfterACrash(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status state.Status
		decide []Decision
		end    state.Status
		want   bool
	}{
		// Nothing to decide for a crashed run: the drive finds the call
		// still pending and stops again, waiting.
		{"found running", state.StatusRunning, nil, state.StatusWaitingApproval, true},
		{"found waiting", state.StatusWaitingApproval, []Decision{{CallID: "c1", Approve: true}}, state.StatusCompleted, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, assistant(call("c1", "record_review", `{"content":"LGTM"}`)), answer("done"))
			h.exec = nil
			exec := &confinedExec{}
			r, err := NewRunner(Config{Program: h.prog, Agent: h.prog.Agents[0], Store: h.store, Provider: h.prov,
				Executors: map[ir.BodyKind]tool.Executor{ir.BodyPython: exec}})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			paused, err := r.Start(ctx, NewRun{Task: "t", WorkDir: "/w"})
			if err != nil || paused.Status != state.StatusWaitingApproval {
				t.Fatalf("start: %v, status %s", err, paused.Status)
			}
			if tc.status != paused.Status {
				paused.Status = tc.status
				if err := h.store.Save(ctx, paused, state.Delta{}); err != nil {
					t.Fatal(err)
				}
			}
			h.store.saves = nil
			req := ResumeRequest{Agent: "Reviewer", SourceHash: paused.Config.SourceHash, Provider: paused.Config.Provider, WorkDir: "/w"}
			st, err := r.Resume(ctx, ResumeOptions{RunID: paused.ID, Request: req, Decisions: tc.decide})
			if err != nil || st.Status != tc.end {
				t.Fatalf("resume: %v, status %s", err, st.Status)
			}
			last := h.store.saves[len(h.store.saves)-1]
			if last.Verify != tc.want {
				t.Errorf("the save that stopped the resumed run asked for the whole-file check: %v; want %v", last.Verify, tc.want)
			}
			for _, d := range h.store.saves[:len(h.store.saves)-1] {
				if d.Verify {
					t.Error("a save that did not stop the run asked for the whole-file check")
				}
			}
		})
	}
}
