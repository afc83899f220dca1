package cli

import (
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/nexa-run/nexa/internal/engine"
	"github.com/nexa-run/nexa/internal/state"
)

// eventTime is how the stream writes an event's time: RFC 3339 in UTC,
// always with milliseconds, so that lines sort and compare as text.
const eventTime = "2006-01-02T15:04:05.000Z07:00"

// jsonlStream renders a run's events as JSON lines on stdout (--output
// jsonl): the same events the progress lines show, for programs. Every
// line is one object with type, run_id, seq and time; the command's final
// object follows as the last line (finishAgent). The schemas of the lines
// are in docs/reference/events.md, which a test checks them against.
type jsonlStream struct {
	mu  sync.Mutex
	w   io.Writer
	now func() time.Time
	// redact removes secret values from texts (error messages,
	// arguments) before they are encoded, where an escape could hide
	// them from the redacting writer; nil redacts nothing here.
	redact func(string) string
	seq    int
	runID  string
	closed bool
}

func newJSONLStream(w io.Writer, now func() time.Time, redact func(string) string) *jsonlStream {
	if now == nil {
		now = time.Now
	}
	return &jsonlStream{w: w, now: now, redact: redact}
}

// eventLine is the common head of every line, and the fields of all event
// types (each type sets its own; docs/reference/events.md).
type eventLine struct {
	Type  string `json:"type"`
	RunID string `json:"run_id"`
	Seq   int    `json:"seq"`
	Time  string `json:"time"`

	Turn       *int            `json:"turn,omitempty"`
	CallID     string          `json:"call_id,omitempty"`
	Tool       string          `json:"tool,omitempty"`
	ToolCalls  *int            `json:"tool_calls,omitempty"`
	Usage      *replyUsage     `json:"usage,omitempty"`
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
}

// replyUsage is the usage of one provider reply: its tokens (the cached
// and cache-writing ones are parts of input_tokens) and what it cost, null
// when its price is unknown.
type replyUsage struct {
	InputTokens              int      `json:"input_tokens"`
	CachedInputTokens        int      `json:"cached_input_tokens"`
	CacheCreationInputTokens int      `json:"cache_creation_input_tokens"`
	OutputTokens             int      `json:"output_tokens"`
	TotalTokens              int      `json:"total_tokens"`
	CostUSD                  *float64 `json:"cost_usd"`
}

func usageOf(u *state.Usage) *replyUsage {
	if u == nil {
		return &replyUsage{}
	}
	r := &replyUsage{InputTokens: u.InputTokens, CachedInputTokens: u.CachedInputTokens, CacheCreationInputTokens: u.CacheCreationInputTokens,
		OutputTokens: u.OutputTokens, TotalTokens: u.TotalTokens}
	if u.CostKnown {
		c := u.CostUSD
		r.CostUSD = &c
	}
	return r
}

func ms(d time.Duration) *int64 {
	v := d.Milliseconds()
	return &v
}

// observe renders one engine event; events without a line (text deltas)
// are skipped.
func (j *jsonlStream) observe(ev engine.Event) {
	l := eventLine{RunID: ev.RunID}
	switch ev.Kind {
	case engine.EventRunStarted:
		l.Type = "run.started"
	case engine.EventRunResumed:
		l.Type = "run.resumed"
	case engine.EventProviderStart:
		l.Type = "model.request"
		l.Turn = &ev.Turn
	case engine.EventProviderDone:
		l.Type = "model.reply"
		l.Turn = &ev.Turn
		l.DurationMS = ms(ev.Duration)
		l.Usage = usageOf(ev.Usage)
		calls := ev.Calls
		l.ToolCalls = &calls
		if ev.Err != nil {
			l.Error = j.text(ev.Err.Error())
		}
	case engine.EventToolStart:
		l.Type = "tool.started"
		l.CallID, l.Tool = ev.CallID, ev.Tool
	case engine.EventToolDone:
		l.Type = "tool.completed"
		l.CallID, l.Tool, l.Outcome = ev.CallID, ev.Tool, ev.Outcome
		l.DurationMS = ms(ev.Duration)
		if ev.Err != nil {
			l.Error = j.text(ev.Err.Error())
		}
	case engine.EventCallPending:
		l.Type = "call.pending"
		l.CallID, l.Tool, l.Risk = ev.CallID, ev.Tool, ev.Risk
		l.Arguments = j.json(ev.Arguments)
		if ev.ExpiresAt != nil {
			l.ExpiresAt = ev.ExpiresAt.UTC().Format(eventTime)
		}
	case engine.EventCallDecided:
		l.Type = "call.decided"
		l.CallID, l.Tool, l.Decision = ev.CallID, ev.Tool, ev.Decision
		l.DecidedBy, l.Reason = j.text(ev.By), j.text(ev.Reason)
	case engine.EventRunStopped:
		l.Type = "run.finished"
		l.Status = string(ev.Status)
	default:
		return
	}
	j.write(l)
}

// retrying renders a provider retry (the provider's OnRetry hook, which
// does not pass through the engine's events).
func (j *jsonlStream) retrying(attempt int, err error, delay time.Duration) {
	l := eventLine{Type: "model.retry", Attempt: attempt, DelayMS: ms(delay)}
	if err != nil {
		l.Error = j.text(err.Error())
	}
	j.write(l)
}

func (j *jsonlStream) write(l eventLine) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return
	}
	if l.RunID == "" {
		l.RunID = j.runID // a retry knows no run; the stream does
	} else {
		j.runID = l.RunID
	}
	j.seq++
	l.Seq = j.seq
	l.Time = j.now().UTC().Format(eventTime)
	writeJSONLine(j.w, l)
}

// close ends the stream of events: the final object comes next, and
// nothing may follow it.
func (j *jsonlStream) close() {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.closed = true
}

func (j *jsonlStream) text(s string) string {
	if j.redact == nil {
		return s
	}
	return j.redact(s)
}

// json redacts arguments and keeps them JSON (as a string when the
// replacement broke them).
func (j *jsonlStream) json(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("null")
	}
	out := j.text(string(raw))
	if json.Valid([]byte(out)) {
		return json.RawMessage(out)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return json.RawMessage("null")
	}
	return b
}

// writeJSONLine writes v as one compact line of JSON, escaped as
// writeJSON escapes (no HTML escapes), so the final object on the last
// line is the object --output json prints, without its indentation.
func writeJSONLine(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// writeResult prints the command's one object: indented for --output json;
// for --output jsonl, after closing the stream of events, as its last line.
func (f *agentFlags) writeResult(w io.Writer, res *runResult) {
	if f.output != "jsonl" {
		writeJSON(w, res)
		return
	}
	if f.stream != nil {
		f.stream.close()
	}
	writeJSONLine(w, res)
}
