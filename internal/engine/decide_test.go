package engine

import (
	"context"
	"testing"
	"time"

	"github.com/nexa-run/nexa/internal/state"
)

// waitingRun is a run waiting for a decision on call_1.
func waitingRun(t *testing.T, s state.Store) *state.RunState {
	t.Helper()
	st := &state.RunState{ID: "run_01DECIDETEST", Status: state.StatusWaitingApproval, Task: "t",
		Journal: []state.JournalEntry{{CallID: "call_1", Tool: "t", Arguments: []byte("{}"), Valid: true,
			Stage: state.StageNotStarted, NeedsApproval: true}}}
	if err := s.Create(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	return st
}

func TestDecideAtRevisionRecordsWhoAndWhen(t *testing.T) {
	s := newMemStore()
	st := waitingRun(t, s)
	at := time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC)
	got, err := DecideAtRevision(context.Background(), s, st.ID, st.Revision, []Decision{{CallID: "call_1", Approve: true, By: "alice", At: at}})
	if err != nil {
		t.Fatal(err)
	}
	e := got.Entry("call_1")
	if e.Decision == nil || !*e.Decision || e.DecidedBy != "alice" || e.DecidedAt == nil || !e.DecidedAt.Equal(at) {
		t.Fatalf("entry: %+v", e)
	}
}

func TestDecideAtStaleRevisionWritesNothing(t *testing.T) {
	s := newMemStore()
	st := waitingRun(t, s)
	_, err := DecideAtRevision(context.Background(), s, st.ID, st.Revision+5, []Decision{{CallID: "call_1", Approve: true}})
	if re, ok := AsError(err); !ok || re.Code != CodeCheckpointConflict {
		t.Fatalf("err = %v", err)
	}
	now, _ := Show(context.Background(), s, st.ID)
	if now.Revision != st.Revision || now.Entry("call_1").Decision != nil {
		t.Fatal("a stale decision was written")
	}
	// Without a revision (nexa runs approve), the time is still stamped.
	got, err := Decide(context.Background(), s, st.ID, []Decision{{CallID: "call_1", Approve: false}})
	if err != nil || got.Entry("call_1").DecidedAt == nil || got.Entry("call_1").DecidedBy != "" {
		t.Fatalf("decide: %v %+v", err, got.Entry("call_1"))
	}
}
