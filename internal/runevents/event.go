// Package runevents is the one vocabulary of a run's events: the line type
// and its JSON rendering that nexa agent --output jsonl, nexa runs watch and
// nexa serve's webhooks all print (docs/reference/events.md), and the one
// derivation of those events from a run as the store holds it (Follower),
// which runs watch and the webhooks share. It imports only state, so every
// rendering can use it without importing another.
package runevents

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/nexa-run/nexa/internal/state"
)

// The event types, as docs/reference/events.md names them.
const (
	RunStarted    = "run.started"
	RunResumed    = "run.resumed"
	ModelRequest  = "model.request"
	ModelRetry    = "model.retry"
	ModelReply    = "model.reply"
	ToolStarted   = "tool.started"
	ToolCompleted = "tool.completed"
	CallPending   = "call.pending"
	CallDecided   = "call.decided"
	// CallInputRequired: a call's MCP server asked for input before it
	// would complete it; CallResponded: a person's answer was recorded.
	CallInputRequired = "call.input_required"
	CallResponded     = "call.responded"
	RunFinished       = "run.finished"
)

// TimeLayout is how an event writes a time: RFC 3339 in UTC, always with
// milliseconds, so that times sort and compare as text.
const TimeLayout = "2006-01-02T15:04:05.000Z07:00"

// Stamp renders t as an event's time (TimeLayout, in UTC).
func Stamp(t time.Time) string { return t.UTC().Format(TimeLayout) }

// Event is one line of a run's events: the common head (type, run_id, seq,
// time) and the fields of all types, each type setting its own
// (docs/reference/events.md gives each type's schema). Empty optional
// fields are left out, so a line carries only what its type says.
type Event struct {
	Type  string `json:"type"`
	RunID string `json:"run_id"`
	Seq   int    `json:"seq"`
	Time  string `json:"time"`

	Turn       *int            `json:"turn,omitempty"`
	CallID     string          `json:"call_id,omitempty"`
	Tool       string          `json:"tool,omitempty"`
	ToolCalls  *int            `json:"tool_calls,omitempty"`
	Usage      *Usage          `json:"usage,omitempty"`
	Outcome    string          `json:"outcome,omitempty"`
	DurationMS *int64          `json:"duration_ms,omitempty"`
	Arguments  json.RawMessage `json:"arguments,omitempty"`
	Risk       string          `json:"risk_level,omitempty"`
	ExpiresAt  string          `json:"expires_at,omitempty"`
	Decision   string          `json:"decision,omitempty"`
	DecidedBy  string          `json:"decided_by,omitempty"`
	Reason     string          `json:"reason,omitempty"`
	Attempt    int             `json:"attempt,omitempty"`
	DelayMS    *int64          `json:"delay_ms,omitempty"`
	Status     string          `json:"status,omitempty"`
	Error      string          `json:"error,omitempty"`
	// Server and Requests describe an input request
	// (call.input_required); RespondedBy names who answered it
	// (call.responded). The answer itself is in the store only.
	Server      string         `json:"server,omitempty"`
	Requests    []InputRequest `json:"requests,omitempty"`
	RespondedBy string         `json:"responded_by,omitempty"`
	// URL is the run's page in nexa serve's inbox; only webhooks set it.
	URL string `json:"url,omitempty"`
}

// InputRequest is one request of call.input_required: a form (its JSON
// Schema) or a URL for a person to visit, with its domain.
type InputRequest struct {
	Key     string          `json:"key"`
	Mode    string          `json:"mode"`
	Message string          `json:"message"`
	Schema  json.RawMessage `json:"schema,omitempty"`
	URL     string          `json:"url,omitempty"`
	Domain  string          `json:"domain,omitempty"`
}

// InputRequested is the call.input_required event of a call (callID,
// tool) whose server asked in (redact replaces secret values in what is
// shown; nil replaces none). Time is left for the caller.
func InputRequested(redact func(string) string, runID, callID, tool string, in *state.InputRound) Event {
	if redact == nil {
		redact = func(s string) string { return s }
	}
	ev := Event{Type: CallInputRequired, RunID: runID, CallID: callID, Tool: tool, Requests: []InputRequest{}}
	if in == nil {
		return ev
	}
	ev.Server = redact(in.Server)
	for _, r := range in.Requests {
		q := InputRequest{Key: r.Key, Mode: r.Mode, Message: redact(r.Message), URL: redact(r.URL), Domain: r.Domain}
		if len(r.Schema) > 0 {
			q.Schema = Arguments(redact, r.Schema)
		}
		ev.Requests = append(ev.Requests, q)
	}
	return ev
}

// Usage is the tokens of one model reply (the cached and cache-writing
// ones are parts of InputTokens) and what it cost, null when its price is
// unknown.
type Usage struct {
	InputTokens              int      `json:"input_tokens"`
	CachedInputTokens        int      `json:"cached_input_tokens"`
	CacheCreationInputTokens int      `json:"cache_creation_input_tokens"`
	OutputTokens             int      `json:"output_tokens"`
	TotalTokens              int      `json:"total_tokens"`
	CostUSD                  *float64 `json:"cost_usd"`
}

// UsageOf is the reply usage of u; nil (no usage known) is all zeros, as
// for a request that failed for good, with no cost.
func UsageOf(u *state.Usage) *Usage {
	if u == nil {
		return &Usage{}
	}
	r := &Usage{InputTokens: u.InputTokens, CachedInputTokens: u.CachedInputTokens, CacheCreationInputTokens: u.CacheCreationInputTokens,
		OutputTokens: u.OutputTokens, TotalTokens: u.TotalTokens}
	if u.CostKnown {
		c := u.CostUSD
		r.CostUSD = &c
	}
	return r
}

// Int is a pointer to v, for the fields that are present even when 0.
func Int(v int) *int { return &v }

// MS is d in whole milliseconds, for duration_ms and delay_ms.
func MS(d time.Duration) *int64 {
	v := d.Milliseconds()
	return &v
}

// Marshal is ev as one compact JSON object without a newline, and without
// HTML escapes, so that a webhook's body and a line of the stream are the
// same bytes for the same event.
func Marshal(ev Event) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(ev); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// Arguments is a call's arguments with secret values replaced by redact
// (nil replaces none), kept JSON: when a replacement breaks the JSON, the
// redacted text is given as a JSON string. Redacting before the arguments
// are encoded matters: an escape in the encoding could hide a secret from
// a redactor of the output.
func Arguments(redact func(string) string, raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("null")
	}
	out := string(raw)
	if redact != nil {
		out = redact(out)
	}
	if json.Valid([]byte(out)) {
		return json.RawMessage(out)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return json.RawMessage("null")
	}
	return b
}
