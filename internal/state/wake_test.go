package state

import (
	"testing"
	"time"
)

// TestWakeAt: a worker run waiting for approval wakes at the earliest
// expiry of its pending calls; a call without a bound, a decided call, a
// run of nexa agent or a run in another status never wakes one.
func TestWakeAt(t *testing.T) {
	yes := true
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	early, late := t0.Add(time.Minute), t0.Add(time.Hour)
	pendingLate := JournalEntry{CallID: "c1", Stage: StageNotStarted, NeedsApproval: true, ExpiresAt: &late}
	pendingEarly := JournalEntry{CallID: "c2", Stage: StageNotStarted, NeedsApproval: true, ExpiresAt: &early}
	unbounded := JournalEntry{CallID: "c3", Stage: StageNotStarted, NeedsApproval: true}
	decidedEarly := JournalEntry{CallID: "c4", Stage: StageNotStarted, NeedsApproval: true, Decision: &yes, ExpiresAt: &early}
	cases := []struct {
		name    string
		driver  string
		status  Status
		journal []JournalEntry
		want    *time.Time
	}{
		{"earliest pending expiry", DriverWorker, StatusWaitingApproval, []JournalEntry{pendingLate, unbounded, pendingEarly}, &early},
		{"a decided call's expiry does not count", DriverWorker, StatusWaitingApproval, []JournalEntry{decidedEarly, pendingLate}, &late},
		{"unbounded waits never wake", DriverWorker, StatusWaitingApproval, []JournalEntry{unbounded}, nil},
		{"a run of nexa agent is its starter's", "", StatusWaitingApproval, []JournalEntry{pendingEarly}, nil},
		{"an unknown outcome waits for a person", DriverWorker, StatusUnknownOutcome, []JournalEntry{pendingEarly}, nil},
		{"a queued run is runnable already", DriverWorker, StatusQueued, nil, nil},
		{"completed", DriverWorker, StatusCompleted, nil, nil},
	}
	for _, c := range cases {
		st := &RunState{Status: c.status, Config: Config{Driver: c.driver}, Journal: c.journal}
		got := WakeAt(st)
		if (got == nil) != (c.want == nil) || got != nil && !got.Equal(*c.want) {
			t.Errorf("%s: WakeAt = %v, want %v", c.name, got, c.want)
		}
	}
	if WakeAt(nil) != nil {
		t.Error("WakeAt(nil) != nil")
	}
}

// TestClaimable: a worker run waiting for approval is claimable from its
// wake-up on, as a runnable run always is.
func TestClaimable(t *testing.T) {
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	st := &RunState{Status: StatusWaitingApproval, Config: Config{Driver: DriverWorker},
		Journal: []JournalEntry{{CallID: "c1", Stage: StageNotStarted, NeedsApproval: true, ExpiresAt: &t0}}}
	if Claimable(st, t0.Add(-time.Nanosecond)) {
		t.Error("claimable before its wait ran out")
	}
	if !Claimable(st, t0) {
		t.Error("not claimable when its wait ran out")
	}
	if !Claimable(&RunState{Status: StatusQueued, Config: Config{Driver: DriverWorker}}, t0) {
		t.Error("a queued worker run is not claimable")
	}
	if Claimable(nil, t0) {
		t.Error("Claimable(nil) = true")
	}
}
