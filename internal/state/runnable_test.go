package state

import (
	"testing"
	"time"
)

// TestRunnable: a worker takes only runs handed to workers, and of those
// only the ones that can go on without a person.
func TestRunnable(t *testing.T) {
	yes := true
	pending := JournalEntry{CallID: "c1", Stage: StageNotStarted, NeedsApproval: true}
	decided := JournalEntry{CallID: "c1", Stage: StageNotStarted, NeedsApproval: true, Decision: &yes}
	started := JournalEntry{CallID: "c2", Stage: StageStarted}
	resolved := JournalEntry{CallID: "c2", Stage: StageCompleted, Outcome: "resolved"}
	asked := JournalEntry{CallID: "c3", Stage: StageNotStarted, Inputs: []InputRound{{Server: "stdio:s"}}}
	answered := asked
	answered.Inputs = []InputRound{{Server: "stdio:s", Responses: []byte(`{}`), RespondedAt: new(time.Time)}}
	cases := []struct {
		name    string
		driver  string
		status  Status
		journal []JournalEntry
		want    bool
	}{
		{"queued worker run", DriverWorker, StatusQueued, nil, true},
		{"queued run of nexa agent", "", StatusQueued, nil, false},
		{"running worker run (its holder may have died)", DriverWorker, StatusRunning, []JournalEntry{started}, true},
		{"drained worker run", DriverWorker, StatusInterrupted, nil, true},
		{"interrupted run of nexa agent", "", StatusInterrupted, nil, false},
		{"waiting with a pending call", DriverWorker, StatusWaitingApproval, []JournalEntry{pending}, false},
		{"waiting with every call decided", DriverWorker, StatusWaitingApproval, []JournalEntry{decided}, true},
		{"unknown outcome not resolved", DriverWorker, StatusUnknownOutcome, []JournalEntry{decided, started}, false},
		{"unknown outcome resolved", DriverWorker, StatusUnknownOutcome, []JournalEntry{resolved}, true},
		{"waiting for input not answered", DriverWorker, StatusWaitingInput, []JournalEntry{decided, asked}, false},
		{"waiting for input answered", DriverWorker, StatusWaitingInput, []JournalEntry{decided, answered}, true},
		{"waiting for input with a pending call", DriverWorker, StatusWaitingInput, []JournalEntry{pending, answered}, false},
		{"waiting for input, run of nexa agent", "", StatusWaitingInput, []JournalEntry{answered}, false},
		{"failed", DriverWorker, StatusFailed, nil, false},
		{"completed", DriverWorker, StatusCompleted, nil, false},
		{"timed out", DriverWorker, StatusTimedOut, nil, false},
		{"budget exhausted", DriverWorker, StatusBudgetExhausted, nil, false},
	}
	for _, c := range cases {
		st := &RunState{Status: c.status, Config: Config{Driver: c.driver}, Journal: c.journal}
		if got := Runnable(st); got != c.want {
			t.Errorf("%s: Runnable = %t, want %t", c.name, got, c.want)
		}
	}
	if Runnable(nil) {
		t.Error("Runnable(nil) = true")
	}
	if !StatusWaitingInput.Valid() || StatusWaitingInput.Terminal() {
		t.Error("waiting_input must be a valid, non-terminal status")
	}
	if !StatusQueued.Valid() || StatusQueued.Terminal() {
		t.Error("queued must be a valid, non-terminal status")
	}
}
