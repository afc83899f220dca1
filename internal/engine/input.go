package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/nexa-run/nexa/internal/schemacheck"
	"github.com/nexa-run/nexa/internal/state"
)

// Input requests (docs/reference/runtime.md#input-requests). An MCP server
// may answer a call with input_required: it did not complete the call and
// asks a person for something first. The answer is known, so nothing is
// unknown: the driver journals the request on the call's entry (a new
// InputRound), moves the entry back to not_started, and the run stops
// waiting_input once the calls of the reply that could run have. A person
// answers (ApplyResponses: checked against the requested schema before
// anything is written, journaled with who and when); the next drive sends
// the call again, a new request with the answer and the server's state,
// through the usual started → completed stages. A crash before the request
// was journaled leaves the entry started (an unknown outcome, as for any
// call cut off); after, the run waits for its answer and nothing is sent
// again until a person gave one.

// askInput records the input round a call's server answered with and holds
// the entry for the drive's next write.
func (d *driver) askInput(e *state.JournalEntry, in *state.InputRound) {
	round := redactRound(d.r.redact, *in)
	round.AskedAt = d.r.now().UTC()
	round.Responses, round.RespondedBy, round.RespondedAt = nil, "", nil
	if round.Server == "" {
		if t := d.r.exposed[e.Tool]; t != nil {
			round.Server = t.Body.MCP
		}
	}
	e.Stage = state.StageNotStarted
	e.Inputs = append(e.Inputs, round)
	d.held = append(d.held, heldResult{entry: *e, silent: true})
}

// redactRound replaces secret values in what a server asked, keeping JSON
// JSON. A request state that redaction changed no longer matches what the
// server sent, so the server refuses the retry: the safe side.
func redactRound(red func(string) string, in state.InputRound) state.InputRound {
	reqs := make([]state.InputRequest, len(in.Requests))
	for i, r := range in.Requests {
		r.Message = red(r.Message)
		r.URL = red(r.URL)
		r.Domain = red(r.Domain)
		if len(r.Schema) > 0 {
			if b := red(string(r.Schema)); json.Valid([]byte(b)) {
				r.Schema = json.RawMessage(b)
			}
		}
		reqs[i] = r
	}
	in.Requests = reqs
	in.RequestState = red(in.RequestState)
	return in
}

// inputEvent reports a call waiting for input (EventCallInputRequired).
func inputEvent(runID string, e *state.JournalEntry) Event {
	return Event{Kind: EventCallInputRequired, RunID: runID, CallID: e.CallID, Tool: e.Tool, Input: e.Input()}
}

// respondedEvent reports an answer recorded on e (EventCallResponded).
func respondedEvent(runID string, e *state.JournalEntry) Event {
	in := e.Input()
	ev := Event{Kind: EventCallResponded, RunID: runID, CallID: e.CallID, Tool: e.Tool, Input: in}
	if in != nil {
		ev.By = in.RespondedBy
	}
	return ev
}

// retryInput is the answered input round e runs again with, or nil.
func retryInput(e *state.JournalEntry) *state.InputRound {
	in := e.Input()
	if in == nil || in.RespondedAt == nil {
		return nil
	}
	c := *in
	return &c
}

// Response is a person's answer to the input request of one call: Answer
// is what they gave (docs/reference/cli.md, --respond): "done" (a URL
// request was completed elsewhere), "decline" or "cancel", or JSON — the
// form's content when the call asks one thing, else an object keyed by
// request key whose values are a form's content or one of those words.
type Response struct {
	CallID string
	Answer string
	// By names who answered; At is when (filled by the lifecycle calls
	// when zero).
	By string
	At time.Time
}

// The actions of an answer (MCP's ElicitResult).
const (
	actionAccept  = "accept"
	actionDecline = "decline"
	actionCancel  = "cancel"
)

// maxResponseBytes bounds one answer, as a request body of nexa serve.
const maxResponseBytes = 1 << 20

// ApplyResponses records answers in st and returns the rows to save. Every
// answer is checked before any is applied, so a refusal changes nothing:
// the run must not be terminal, each call must wait for input, and each
// answer must fit the requests (a form's content passing its schema, after
// redact replaced any secret value; nil replaces none).
func ApplyResponses(st *state.RunState, rs []Response, redact func(string) string) (state.Delta, []Event, error) {
	wire, err := checkResponses(st, rs, redact)
	if err != nil {
		return state.Delta{}, nil, err
	}
	d, evs := applyResponses(st, rs, wire)
	return d, evs, nil
}

// checkResponses is ApplyResponses' check: it changes nothing and returns
// each answer as it will be sent.
func checkResponses(st *state.RunState, rs []Response, redact func(string) string) ([]json.RawMessage, error) {
	if len(rs) == 0 {
		return nil, nil
	}
	if redact == nil {
		redact = func(s string) string { return s }
	}
	if st.Status.Terminal() {
		return nil, refuse(CodeNotWaiting, "run %s is %s; there is nothing to answer", st.ID, st.Status)
	}
	seen := map[string]bool{}
	wire := make([]json.RawMessage, len(rs))
	for i, r := range rs {
		if seen[r.CallID] {
			return nil, refuse(CodeUsage, "call %s is answered more than once; give one answer per call", r.CallID)
		}
		seen[r.CallID] = true
		e := st.Entry(r.CallID)
		if e == nil {
			return nil, refuse(CodeUnknownCall, "run %s has no call %s; nothing was written%s", st.ID, r.CallID, inputHint(st))
		}
		if !e.AwaitingInput() {
			return nil, refuse(CodeNotPending, "call %s of run %s does not wait for input (%s); nothing was written%s", r.CallID, st.ID, describeInput(e), inputHint(st))
		}
		b, err := responsesFor(e, redact(r.Answer))
		if err != nil {
			return nil, refuse(CodeInvalidResponse, "the answer to call %s of run %s %v; nothing was written", r.CallID, st.ID, err)
		}
		wire[i] = b
	}
	return wire, nil
}

// applyResponses records checked answers (wire, from checkResponses).
func applyResponses(st *state.RunState, rs []Response, wire []json.RawMessage) (state.Delta, []Event) {
	var delta state.Delta
	var evs []Event
	for i, r := range rs {
		e := st.Entry(r.CallID)
		in := e.Input()
		in.Responses = wire[i]
		in.RespondedBy = r.By
		if in.RespondedBy == "" {
			in.RespondedBy = "an operator"
		}
		at := r.At.UTC()
		in.RespondedAt = &at
		delta.Journal = append(delta.Journal, *e)
		evs = append(evs, respondedEvent(st.ID, e))
	}
	return delta, evs
}

// describeInput says why an entry takes no answer.
func describeInput(e *state.JournalEntry) string {
	if in := e.Input(); in != nil && in.RespondedAt != nil && e.Stage == state.StageNotStarted {
		return "it was answered by " + in.RespondedBy + " already"
	}
	return describeEntry(e)
}

// inputHint names the calls that wait for input, for a refusal.
func inputHint(st *state.RunState) string {
	ids := InputCallIDs(st)
	if len(ids) == 0 {
		return ""
	}
	return "; calls waiting for input: " + strings.Join(ids, ", ")
}

// InputCallIDs lists the calls waiting for input, in call order.
func InputCallIDs(st *state.RunState) []string {
	return callIDs(st, (*state.JournalEntry).AwaitingInput)
}

// responsesFor turns an answer to e's latest round into MCP's
// inputResponses, or says what is wrong with it.
func responsesFor(e *state.JournalEntry, answer string) (json.RawMessage, error) {
	in := e.Input()
	if len(answer) > maxResponseBytes {
		return nil, fmt.Errorf("is larger than %d bytes", maxResponseBytes)
	}
	answer = strings.TrimSpace(answer)
	out := map[string]any{}
	if word, ok := answerWord(answer); ok {
		for _, r := range in.Requests {
			v, err := wordResponse(r, word)
			if err != nil {
				return nil, err
			}
			out[r.Key] = v
		}
		return json.Marshal(out)
	}
	v, err := schemacheck.Decode([]byte(answer))
	if err != nil {
		return nil, fmt.Errorf("is neither JSON nor one of done, decline or cancel (%v)", err)
	}
	if len(in.Requests) == 1 {
		r, err := oneResponse(in.Requests[0], v)
		if err != nil {
			return nil, err
		}
		out[in.Requests[0].Key] = r
		return json.Marshal(out)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("must be an object keyed by request (%s), since the call asks for %d things", requestKeys(in), len(in.Requests))
	}
	for k := range obj {
		if !hasRequest(in, k) {
			return nil, fmt.Errorf("names request %q, which the server did not make (it asked for %s)", k, requestKeys(in))
		}
	}
	for _, req := range in.Requests {
		a, ok := obj[req.Key]
		if !ok {
			return nil, fmt.Errorf("gives nothing for request %q (give each of %s)", req.Key, requestKeys(in))
		}
		r, err := oneResponse(req, a)
		if err != nil {
			return nil, fmt.Errorf("for request %q: %w", req.Key, err)
		}
		out[req.Key] = r
	}
	return json.Marshal(out)
}

// answerWord reads the words an answer may be instead of JSON.
func answerWord(s string) (string, bool) {
	switch s {
	case "done", "accept":
		return actionAccept, true
	case actionDecline, actionCancel:
		return s, true
	}
	return "", false
}

// wordResponse is the response to r that a word gives: a URL request is
// accepted by "done"; any request may be declined or cancelled.
func wordResponse(r state.InputRequest, action string) (map[string]any, error) {
	if action == actionAccept && r.Mode != state.InputURL {
		return nil, fmt.Errorf("says done, but request %q is a form: give its content as JSON", r.Key)
	}
	return map[string]any{"action": action}, nil
}

// oneResponse checks one request's answer (decoded JSON) and returns its
// response.
func oneResponse(r state.InputRequest, v any) (map[string]any, error) {
	if s, ok := v.(string); ok {
		if word, ok := answerWord(s); ok {
			return wordResponse(r, word)
		}
	}
	if r.Mode == state.InputURL {
		return nil, fmt.Errorf("is JSON, but request %q asks the person to visit %s: answer done once it is completed there (or decline)", r.Key, r.URL)
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, fmt.Errorf("must be a JSON object with the form's fields")
	}
	schema, err := schemacheck.Compile(r.Schema)
	if err != nil {
		return nil, fmt.Errorf("cannot be checked: the form's schema does not compile (%v)", err)
	}
	if ps := schema.Validate(v); len(ps) > 0 {
		return nil, fmt.Errorf("does not match the form of request %q: %s", r.Key, schemacheck.Explain(ps, 5))
	}
	return map[string]any{"action": actionAccept, "content": v}, nil
}

func hasRequest(in *state.InputRound, key string) bool {
	for _, r := range in.Requests {
		if r.Key == key {
			return true
		}
	}
	return false
}

func requestKeys(in *state.InputRound) string {
	keys := make([]string, len(in.Requests))
	for i, r := range in.Requests {
		keys[i] = r.Key
	}
	return strings.Join(keys, ", ")
}

// Respond records answers to input requests of a run without continuing
// it (nexa runs respond, the serve API): lease, load, check, save,
// release. A worker run whose every wait is answered becomes runnable.
// revision, when not 0, is the revision the run was shown at: a run that
// changed since is refused (checkpoint_conflict). redact replaces secret
// values in the answers (nil: none).
func Respond(ctx context.Context, s state.Store, runID string, revision int64, rs []Response, redact func(string) string, now time.Time) (*state.RunState, error) {
	if now.IsZero() {
		now = time.Now()
	}
	return operatorWrite(ctx, s, runID, revision, func(st *state.RunState) (state.Delta, error) {
		d, _, err := ApplyResponses(st, stampResponses(rs, now), redact)
		return d, err
	})
}

// PendingInput is a call waiting for a person's answer to its MCP
// server's input request, in the one shape every front end shows it
// (nexa agent's result, runs show --json, the serve API).
type PendingInput struct {
	CallID   string                `json:"call_id"`
	Tool     string                `json:"tool"`
	Server   string                `json:"server"`
	AskedAt  time.Time             `json:"asked_at"`
	Requests []PendingInputRequest `json:"requests"`
}

// PendingInputRequest is one request of a PendingInput: a form (its JSON
// Schema) or a URL for the person to visit, with its domain.
type PendingInputRequest struct {
	Key     string          `json:"key"`
	Mode    string          `json:"mode"`
	Message string          `json:"message"`
	Schema  json.RawMessage `json:"schema,omitempty"`
	URL     string          `json:"url,omitempty"`
	Domain  string          `json:"domain,omitempty"`
}

// PendingInputs lists the calls waiting for input, in call order; none
// once the run is terminal. Never nil, so JSON shows [].
func PendingInputs(st *state.RunState) []PendingInput {
	out := []PendingInput{}
	if st.Status.Terminal() {
		return out
	}
	for _, id := range InputCallIDs(st) {
		e := st.Entry(id)
		in := e.Input()
		p := PendingInput{CallID: e.CallID, Tool: e.Tool, Server: in.Server, AskedAt: in.AskedAt, Requests: []PendingInputRequest{}}
		for _, r := range in.Requests {
			p.Requests = append(p.Requests, PendingInputRequest{Key: r.Key, Mode: r.Mode, Message: r.Message,
				Schema: bytes.TrimSpace(r.Schema), URL: r.URL, Domain: r.Domain})
		}
		out = append(out, p)
	}
	return out
}
