package engine

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nexa-run/nexa/internal/state"
)

// A store without a tail reader is loaded whole and cut to what a
// state.TailLoader would have returned: the last rows and every open call.
func TestShowTailCutsAWholeRun(t *testing.T) {
	m := newMemStore()
	st := &state.RunState{ID: "run_1", Status: state.StatusWaitingApproval}
	for i := 0; i < 10; i++ {
		st.Messages = append(st.Messages, state.Message{Seq: i, Role: state.RoleAssistant, Content: fmt.Sprint(i)})
		e := state.JournalEntry{CallID: fmt.Sprintf("c%d", i), Seq: i, Stage: state.StageCompleted}
		if i == 1 {
			e.Stage, e.NeedsApproval = state.StageNotStarted, true
		}
		st.Journal = append(st.Journal, e)
	}
	if err := m.Create(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	got, om, err := ShowTail(context.Background(), m, "run_1", 3)
	if err != nil {
		t.Fatal(err)
	}
	var calls []string
	for _, e := range got.Journal {
		calls = append(calls, e.CallID)
	}
	if len(got.Messages) != 3 || got.Messages[0].Seq != 7 || fmt.Sprint(calls) != "[c1 c7 c8 c9]" {
		t.Fatalf("tail: messages from %d (%d), calls %v", got.Messages[0].Seq, len(got.Messages), calls)
	}
	if om != (state.Omitted{Messages: 7, Journal: 6}) {
		t.Fatalf("omitted %+v", om)
	}
	if ids := PendingCallIDs(got); fmt.Sprint(ids) != "[c1]" {
		t.Fatalf("pending calls of the tail %v", ids)
	}
	if _, _, err := ShowTail(context.Background(), m, "run_none", 3); err == nil {
		t.Fatal("ShowTail of a missing run succeeded")
	} else if re, ok := AsError(err); !ok || re.Code != CodeRunNotFound {
		t.Fatalf("ShowTail of a missing run: %v", err)
	}
}

// pagedStore lists a fixed set of runs honouring Limit and After, as the
// stores do.
type pagedStore struct {
	memStore
	runs []state.Summary // newest first
}

func (p *pagedStore) List(_ context.Context, f state.Filter) ([]state.Summary, error) {
	var out []state.Summary
	for _, r := range p.runs {
		if f.After != nil && !(r.CreatedAt.Before(f.After.CreatedAt) || r.CreatedAt.Equal(f.After.CreatedAt) && r.ID < f.After.ID) {
			continue
		}
		if f.Limit > 0 && len(out) == f.Limit {
			break
		}
		out = append(out, r)
	}
	return out, nil
}

// ListRuns pages with the token it prints, says when there is no next
// page, and refuses a token it did not make.
func TestListRunsPages(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := &pagedStore{}
	for i := 4; i >= 0; i-- {
		p.runs = append(p.runs, state.Summary{ID: fmt.Sprintf("run_%d", i), CreatedAt: t0.Add(time.Duration(i/2) * time.Second)})
	}
	var (
		got   []string
		after string
		pages int
	)
	for {
		page, err := ListRuns(context.Background(), p, state.Filter{Limit: 2}, after)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, r := range page.Runs {
			got = append(got, r.ID)
		}
		if page.Next == "" {
			break
		}
		after = page.Next
	}
	if fmt.Sprint(got) != "[run_4 run_3 run_2 run_1 run_0]" || pages != 3 {
		t.Fatalf("%d pages gave %v", pages, got)
	}
	page, err := ListRuns(context.Background(), p, state.Filter{}, "")
	if err != nil || len(page.Runs) != 5 || page.Next != "" {
		t.Fatalf("no limit: %d runs, next %q, %v", len(page.Runs), page.Next, err)
	}
	if _, err := ListRuns(context.Background(), p, state.Filter{Limit: 2}, "run_3"); err == nil {
		t.Fatal("a run id was taken as a cursor")
	} else if re, ok := AsError(err); !ok || re.Code != CodeUsage {
		t.Fatalf("bad cursor: %v", err)
	}
}
