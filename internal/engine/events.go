package engine

import (
	"encoding/json"
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
	// EventCallPending reports a call that waits for a person's decision,
	// once the run has stopped waiting for it (saved as waiting_approval).
	EventCallPending
	// EventCallDecided reports a decision recorded on a call: a person's
	// (--approve/--deny of a resume), a policy rule's, or an expiry.
	EventCallDecided
	// EventCallInputRequired reports a call whose MCP server asked for
	// input before it would complete it, once the run has stopped
	// waiting for the answer (saved as waiting_input).
	EventCallInputRequired
	// EventCallResponded reports a person's answer recorded on a call
	// that waited for input (--respond of a resume).
	EventCallResponded
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

	// Usage is what one provider reply used (EventProviderDone of a
	// reply), so a reader can follow the spend as it happens.
	Usage *state.Usage
	// Arguments, Risk and ExpiresAt describe a pending call
	// (EventCallPending): what a person is asked to decide on.
	Arguments json.RawMessage
	Risk      string
	ExpiresAt *time.Time
	// Decision is approved, denied or expired (EventCallDecided); By is
	// who decided (a person, or policy:RULE) and Reason why.
	Decision string
	By       string
	Reason   string
	// Input is the call's input round (EventCallInputRequired: what the
	// server asks; EventCallResponded: with the answer recorded).
	Input *state.InputRound
}
