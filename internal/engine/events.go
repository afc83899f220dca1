package engine

import (
	"time"

	"github.com/nexa-run/nexa/internal/state"
)

// EventKind says what an Event reports.
type EventKind int

// The progress events a Runner reports for display.
const (
	EventRunStarted EventKind = iota
	EventRunResumed
	EventProviderStart
	EventProviderDelta
	EventProviderRetry
	EventProviderDone
	EventToolStart
	EventToolDone
	EventRunStopped
)

// Event is one step of a run as a person watching it would want to see it.
// Events are for display only; the store is the record.
type Event struct {
	Kind     EventKind
	RunID    string
	Turn     int
	CallID   string
	Tool     string
	Text     string
	Outcome  string // ok, error, denied, unknown
	Calls    int    // tool calls in a provider reply
	Duration time.Duration
	Status   state.Status
	Err      error
}
