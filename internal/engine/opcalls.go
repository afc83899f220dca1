package engine

import (
	"encoding/json"
	"time"

	"github.com/nexa-run/nexa/internal/state"
)

// PendingCall is a call waiting for a person's decision, in the one shape
// every front end shows it (nexa agent's result, runs show --json, the
// nexa serve API and pages), so a script reads the same fields wherever it
// looks.
type PendingCall struct {
	CallID           string          `json:"call_id"`
	Tool             string          `json:"tool"`
	Arguments        json.RawMessage `json:"arguments"`
	Description      string          `json:"description"`
	RiskLevel        string          `json:"risk_level"`
	RequiresApproval bool            `json:"requires_approval"`
	Sandbox          bool            `json:"sandbox"`
	// ExpiresAt is when the call stops waiting (approval_timeout,
	// --approval-timeout); absent when it waits as long as the run.
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
}

// UnknownCall is a call whose execution began and whose result was never
// saved: an operator must find out what happened and resolve it.
type UnknownCall struct {
	CallID    string          `json:"call_id"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	StartedAt *time.Time      `json:"started_at"`
}

// OperatorCalls lists what an operator acts on, in journal order: the
// calls waiting for a decision (none once the run is terminal — a
// timed-out or exhausted run never executes them) with the metadata the
// journal recorded, and the calls with unknown outcomes. Neither list is
// nil, so JSON shows [] rather than null.
func OperatorCalls(st *state.RunState) ([]PendingCall, []UnknownCall) {
	pending, unknown := []PendingCall{}, []UnknownCall{}
	if !st.Status.Terminal() {
		for _, id := range PendingCallIDs(st) {
			e := st.Entry(id)
			pending = append(pending, PendingCall{CallID: e.CallID, Tool: e.Tool, Arguments: e.Arguments,
				Description: e.Description, RiskLevel: e.Risk, RequiresApproval: true, Sandbox: e.Sandbox, ExpiresAt: e.ExpiresAt})
		}
	}
	for _, e := range UnknownCalls(st) {
		unknown = append(unknown, UnknownCall{CallID: e.CallID, Tool: e.Tool, Arguments: e.RunArguments(), StartedAt: e.StartedAt})
	}
	return pending, unknown
}
