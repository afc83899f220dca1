package cli

import (
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/nexa-run/nexa/internal/engine"
	"github.com/nexa-run/nexa/internal/runevents"
)

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

// observe renders one engine event; events without a line (text deltas)
// are skipped.
func (j *jsonlStream) observe(ev engine.Event) {
	l := runevents.Event{RunID: ev.RunID}
	switch ev.Kind {
	case engine.EventRunStarted:
		l.Type = runevents.RunStarted
	case engine.EventRunResumed:
		l.Type = runevents.RunResumed
	case engine.EventProviderStart:
		l.Type = runevents.ModelRequest
		l.Turn = runevents.Int(ev.Turn)
	case engine.EventProviderDone:
		l.Type = runevents.ModelReply
		l.Turn = runevents.Int(ev.Turn)
		l.DurationMS = runevents.MS(ev.Duration)
		l.Usage = runevents.UsageOf(ev.Usage)
		l.ToolCalls = runevents.Int(ev.Calls)
		if ev.Err != nil {
			l.Error = j.text(ev.Err.Error())
		}
	case engine.EventToolStart:
		l.Type = runevents.ToolStarted
		l.CallID, l.Tool = ev.CallID, ev.Tool
	case engine.EventToolDone:
		l.Type = runevents.ToolCompleted
		l.CallID, l.Tool, l.Outcome = ev.CallID, ev.Tool, ev.Outcome
		l.DurationMS = runevents.MS(ev.Duration)
		if ev.Err != nil {
			l.Error = j.text(ev.Err.Error())
		}
	case engine.EventCallPending:
		l.Type = runevents.CallPending
		l.CallID, l.Tool, l.Risk = ev.CallID, ev.Tool, ev.Risk
		l.Arguments = runevents.Arguments(j.redact, ev.Arguments)
		if ev.ExpiresAt != nil {
			l.ExpiresAt = runevents.Stamp(*ev.ExpiresAt)
		}
	case engine.EventCallDecided:
		l.Type = runevents.CallDecided
		l.CallID, l.Tool, l.Decision = ev.CallID, ev.Tool, ev.Decision
		l.DecidedBy, l.Reason = j.text(ev.By), j.text(ev.Reason)
	case engine.EventCallInputRequired:
		l = runevents.InputRequested(j.redact, ev.RunID, ev.CallID, ev.Tool, ev.Input)
	case engine.EventCallResponded:
		l.Type = runevents.CallResponded
		l.CallID, l.Tool, l.RespondedBy = ev.CallID, ev.Tool, j.text(ev.By)
	case engine.EventRunStopped:
		l.Type = runevents.RunFinished
		l.Status = string(ev.Status)
		l.Error = ev.Text
	default:
		return
	}
	j.write(l)
}

// retrying renders a provider retry (the provider's OnRetry hook, which
// does not pass through the engine's events).
func (j *jsonlStream) retrying(attempt int, err error, delay time.Duration) {
	l := runevents.Event{Type: runevents.ModelRetry, Attempt: attempt, DelayMS: runevents.MS(delay)}
	if err != nil {
		l.Error = j.text(err.Error())
	}
	j.write(l)
}

func (j *jsonlStream) write(l runevents.Event) {
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
	l.Time = runevents.Stamp(j.now())
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
