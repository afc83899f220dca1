package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/nexa-run/nexa/internal/engine"
	"github.com/nexa-run/nexa/internal/resumecmd"
	"github.com/nexa-run/nexa/internal/state"
)

// Codes the HTTP server adds to the CLI's (runtime) error codes.
const (
	// CodeUnauthorized: the request carries no valid token.
	CodeUnauthorized = "unauthorized"
	// CodeForbidden: a form without this session's CSRF token, or a
	// request sent by another site's page.
	CodeForbidden = "forbidden"
	// CodeTooLarge: a request body over MaxRequestBody (HTTP 413).
	CodeTooLarge = "request_too_large"
)

// MaxRequestBody is the largest JSON body the API reads (1 MiB): a
// decision or a resolution is a few hundred bytes, and a bound keeps a
// client from making the server hold an endless body in memory.
const MaxRequestBody = 1 << 20

// apiError is the JSON error object, the CLI's {"code","message"}.
type apiError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// httpStatus maps an error code to the HTTP status the API answers with.
func httpStatus(code string) int {
	switch code {
	case engine.CodeRunNotFound, engine.CodeNoStore, CodeNotFound:
		return http.StatusNotFound
	case CodeMethodNotAllowed:
		return http.StatusMethodNotAllowed
	case engine.CodeCheckpointConflict, engine.CodeNotWaiting, engine.CodeNotPending:
		return http.StatusConflict
	case engine.CodeUsage, engine.CodeUnknownCall, engine.CodeNotStarted, engine.CodeInvalidEdit, engine.CodeInvalidResponse:
		return http.StatusBadRequest
	case CodeUnauthorized:
		return http.StatusUnauthorized
	case CodeForbidden:
		return http.StatusForbidden
	case CodeMisdirected:
		return http.StatusMisdirectedRequest
	case CodeTooLarge:
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusInternalServerError
}

// asAPIError turns any error of a runtime call into the error object.
func asAPIError(err error) apiError {
	if re, ok := engine.AsError(err); ok {
		return apiError{Code: re.Code, Message: re.Message}
	}
	return apiError{Code: engine.CodeInternal, Message: err.Error()}
}

func (s *Server) writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":{"code":"internal_error","message":"encoding the answer failed"}}`)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(s.o.Redact(string(b))))
	_, _ = w.Write([]byte("\n"))
}

func (s *Server) writeAPIError(w http.ResponseWriter, e apiError) {
	e.Message = s.o.Redact(e.Message)
	s.writeJSON(w, httpStatus(e.Code), map[string]any{"error": e})
}

// api wraps an API handler with the token check and, for writes, the
// same-origin and content-type checks that keep other sites' pages from
// posting to a loopback server.
func (s *Server) api(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.apiAuth(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="nexa"`)
			s.writeAPIError(w, apiError{Code: CodeUnauthorized, Message: "this server needs a token: send Authorization: Bearer TOKEN"})
			return
		}
		if r.Method == http.MethodPost {
			if !s.sameOrigin(r) {
				s.writeAPIError(w, apiError{Code: CodeForbidden, Message: "refused: the request came from a page of another site"})
				return
			}
			ct := r.Header.Get("Content-Type")
			if !strings.HasPrefix(ct, "application/json") {
				s.writeAPIError(w, apiError{Code: engine.CodeUsage, Message: "send the request body as JSON with Content-Type: application/json"})
				return
			}
		}
		h(w, r)
	}
}

func notRunID(id string) apiError {
	return apiError{Code: engine.CodeRunNotFound, Message: fmt.Sprintf("%q is not a run id (run ids look like run_01JD7…)", id)}
}

// listFilter reads ?status=, ?agent= and ?limit= as `nexa runs list`
// reads its flags (?after= is the cursor, read by apiList).
func listFilter(r *http.Request) (state.Filter, *apiError) {
	q := r.URL.Query()
	f := state.Filter{Agent: q.Get("agent")}
	if st := q.Get("status"); st != "" {
		f.Status = state.Status(st)
		if !f.Status.Valid() {
			return f, &apiError{Code: engine.CodeUsage, Message: fmt.Sprintf("unknown status %q: use queued, running, waiting_approval, waiting_input, unknown_outcome, interrupted, failed, completed, timed_out or budget_exhausted", st)}
		}
	}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 0 {
			return f, &apiError{Code: engine.CodeUsage, Message: fmt.Sprintf("limit takes a number, not %q", l)}
		}
		f.Limit = n
	}
	return f, nil
}

func (s *Server) apiList(w http.ResponseWriter, r *http.Request) {
	f, aerr := listFilter(r)
	if aerr != nil {
		s.writeAPIError(w, *aerr)
		return
	}
	page, err := engine.ListRuns(r.Context(), s.o.Store, f, r.URL.Query().Get("after"))
	if err != nil {
		s.writeAPIError(w, asAPIError(err))
		return
	}
	// next is the cursor of the following page (?after=), null on the
	// last one, as in `nexa runs list --json`.
	var next any
	if page.Next != "" {
		next = page.Next
	}
	s.writeJSON(w, http.StatusOK, map[string]any{"runs": page.Runs, "next": next})
}

func (s *Server) apiShow(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !engine.ValidRunID(id) {
		s.writeAPIError(w, notRunID(id))
		return
	}
	st, err := engine.Show(r.Context(), s.o.Store, id)
	if err != nil {
		s.writeAPIError(w, asAPIError(err))
		return
	}
	s.writeJSON(w, http.StatusOK, s.view(st))
}

// decideRequest is the body of POST /api/runs/{id}/decide.
type decideRequest struct {
	// Revision is the revision the caller looked at; when the run has
	// moved on since, nothing is recorded (checkpoint_conflict). 0 skips
	// the check.
	Revision  int64 `json:"revision"`
	Decisions []struct {
		CallID   string `json:"call_id"`
		Approved *bool  `json:"approved"`
		Reason   string `json:"reason"`
		// Args, with an approval, are the arguments to run the call
		// with instead of the model's.
		Args jsontext.Value `json:"args,omitempty"`
	} `json:"decisions"`
}

// readJSON decodes a request body strictly, so that what a person meant is
// never guessed: a name the type does not have (a misspelt "approved" must
// not read as a denial), a name that matches only when case is ignored
// ("Approved"), a name given twice (which of two "approved" counts?),
// anything after the object, text that is not UTF-8, or a body over
// MaxRequestBody is refused, and nothing is recorded.
func readJSON(w http.ResponseWriter, r *http.Request, v any) *apiError {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRequestBody))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return &apiError{Code: CodeTooLarge, Message: fmt.Sprintf("the request body is over %d bytes; nothing was recorded", MaxRequestBody)}
	}
	if err != nil {
		return &apiError{Code: engine.CodeUsage, Message: fmt.Sprintf("reading the request body: %v", err)}
	}
	// The v2 decoder refuses duplicate names, invalid UTF-8 and trailing
	// data, and matches names case-sensitively, by default.
	if err := jsonv2.Unmarshal(body, v, jsonv2.RejectUnknownMembers(true)); err != nil {
		return &apiError{Code: engine.CodeUsage, Message: fmt.Sprintf("the request body is not the expected JSON (names are case-sensitive, each given once, and nothing may follow the object): %v", err)}
	}
	return nil
}

func (s *Server) apiDecide(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !engine.ValidRunID(id) {
		s.writeAPIError(w, notRunID(id))
		return
	}
	var req decideRequest
	if e := readJSON(w, r, &req); e != nil {
		s.writeAPIError(w, *e)
		return
	}
	if len(req.Decisions) == 0 {
		s.writeAPIError(w, apiError{Code: engine.CodeUsage, Message: `give at least one decision: {"decisions": [{"call_id": "call_1", "approved": true}]}`})
		return
	}
	var ds []engine.Decision
	for _, d := range req.Decisions {
		if d.CallID == "" || d.Approved == nil {
			s.writeAPIError(w, apiError{Code: engine.CodeUsage, Message: `every decision needs "call_id" and an explicit "approved": true or false`})
			return
		}
		dec := engine.Decision{CallID: d.CallID, Approve: *d.Approved, Reason: d.Reason}
		if len(d.Args) > 0 {
			dec.Args = json.RawMessage(d.Args)
		}
		ds = append(ds, dec)
	}
	st, executing, err := s.decide(r.Context(), id, req.Revision, ds)
	if err != nil {
		s.writeAPIError(w, asAPIError(err))
		return
	}
	s.writeJSON(w, http.StatusOK, map[string]any{"run": s.view(st), "executing": executing})
}

// resolveRequest is the body of POST /api/runs/{id}/resolve.
type resolveRequest struct {
	Revision int64   `json:"revision"`
	CallID   string  `json:"call_id"`
	Output   *string `json:"output"`
	Success  *bool   `json:"success"`
}

func (s *Server) apiResolve(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !engine.ValidRunID(id) {
		s.writeAPIError(w, notRunID(id))
		return
	}
	var req resolveRequest
	if e := readJSON(w, r, &req); e != nil {
		s.writeAPIError(w, *e)
		return
	}
	if req.CallID == "" || req.Output == nil || req.Success == nil {
		s.writeAPIError(w, apiError{Code: engine.CodeUsage, Message: `give "call_id", the verified "output" and an explicit "success": true or false`})
		return
	}
	st, executing, err := s.resolve(r.Context(), id, req.Revision, req.CallID, *req.Output, *req.Success)
	if err != nil {
		s.writeAPIError(w, asAPIError(err))
		return
	}
	s.writeJSON(w, http.StatusOK, map[string]any{"run": s.view(st), "executing": executing})
}

// respondRequest is the body of POST /api/runs/{id}/respond: the answer to
// the input request of one call, as nexa runs respond takes it. Response
// is the form's content (a JSON object; an object keyed by request when
// the call asks for several things), or the string "done" (a URL request
// completed elsewhere), "decline" or "cancel".
type respondRequest struct {
	Revision int64          `json:"revision"`
	CallID   string         `json:"call_id"`
	Response jsontext.Value `json:"response"`
}

func (s *Server) apiRespond(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !engine.ValidRunID(id) {
		s.writeAPIError(w, notRunID(id))
		return
	}
	var req respondRequest
	if e := readJSON(w, r, &req); e != nil {
		s.writeAPIError(w, *e)
		return
	}
	if req.CallID == "" || len(req.Response) == 0 {
		s.writeAPIError(w, apiError{Code: engine.CodeUsage, Message: `give "call_id" and the "response": the form's content as an object, or "done", "decline" or "cancel"`})
		return
	}
	answer := string(req.Response)
	if req.Response.Kind() == '"' {
		var word string
		if err := json.Unmarshal(req.Response, &word); err == nil {
			answer = word
		}
	}
	st, executing, err := s.respond(r.Context(), id, req.Revision, req.CallID, answer)
	if err != nil {
		s.writeAPIError(w, asAPIError(err))
		return
	}
	s.writeJSON(w, http.StatusOK, map[string]any{"run": s.view(st), "executing": executing})
}

// respond records an answer to a call's input request as nexa runs
// respond does, naming who and when, and with --execute continues the run
// once nothing is left for a person.
func (s *Server) respond(ctx context.Context, id string, revision int64, callID, answer string) (*state.RunState, bool, error) {
	rs := []engine.Response{{CallID: callID, Answer: answer, By: s.who(), At: s.o.Now()}}
	st, err := engine.Respond(ctx, s.o.Store, id, revision, rs, s.o.Redact, s.o.Now())
	if err != nil {
		return nil, false, err
	}
	s.logf("input of call %s of run %s answered by %s (revision %d)", callID, id, s.who(), st.Revision)
	return st, s.continueIfReady(st), nil
}

// resolve records an operator's verified outcome as `nexa runs resolve`
// does, naming who, and with --execute continues the run once nothing is
// left for a person.
func (s *Server) resolve(ctx context.Context, id string, revision int64, callID, output string, success bool) (*state.RunState, bool, error) {
	st, err := engine.ResolveAtRevision(ctx, s.o.Store, id, revision, callID, output, success, s.who())
	if err != nil {
		return nil, false, err
	}
	s.logf("call %s of run %s resolved (success=%t) by %s (revision %d)", callID, id, success, s.who(), st.Revision)
	return st, s.continueIfReady(st), nil
}

// decide records decisions as `nexa runs approve` does, naming who and
// when, and with --execute continues the run once nothing is pending.
func (s *Server) decide(ctx context.Context, id string, revision int64, ds []engine.Decision) (*state.RunState, bool, error) {
	now := s.o.Now()
	for i := range ds {
		ds[i].By, ds[i].At = s.who(), now
	}
	st, err := engine.DecideWith(ctx, s.o.Store, id, ds, engine.DecideOptions{Revision: revision, Check: s.o.EditChecker, Now: now})
	if err != nil {
		return nil, false, err
	}
	for _, d := range ds {
		verb := "approved"
		if !d.Approve {
			verb = "denied"
		} else if e := st.Entry(d.CallID); e != nil && e.ApprovedArguments != nil {
			verb = "approved with edited arguments"
		}
		s.logf("call %s of run %s %s by %s (revision %d)", d.CallID, id, verb, d.By, st.Revision)
	}
	return st, s.continueIfReady(st), nil
}

// continueIfReady starts the run again in the background (--execute) once
// an operator's write left nothing for a person to do: no call waits for a
// decision and none has an unknown outcome. It reports whether it did.
func (s *Server) continueIfReady(st *state.RunState) bool {
	pending, unknown := engine.OperatorCalls(st)
	if s.o.Execute == nil || len(pending) > 0 || len(unknown) > 0 || len(engine.PendingInputs(st)) > 0 || st.Status.Terminal() {
		return false
	}
	id, run := st.ID, *st
	s.running.Add(1)
	go func() {
		defer s.running.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 24*time.Hour)
		defer cancel()
		s.logf("resuming run %s", id)
		if err := s.o.Execute.Resume(ctx, &run); err != nil {
			s.logf("resuming run %s: %v", id, err)
			return
		}
		s.logf("run %s resumed", id)
	}()
	return true
}

// runView is a run as the API and the pages show it: the stored state,
// redacted, with the lists an operator acts on.
type runView struct {
	*state.RunState
	PendingCalls []engine.PendingCall `json:"pending_calls"`
	// PendingInputs are the calls waiting for an answer to their MCP
	// server's input request.
	PendingInputs []engine.PendingInput `json:"pending_inputs"`
	UnknownCalls  []engine.UnknownCall  `json:"unknown_calls"`
	DeniedCalls   []engine.DeniedCall   `json:"denied_calls"`
	// Resume are the commands that continue the run, as nexa runs show
	// --json gives them (with the server's --store when it was given).
	Resume map[string]string `json:"resume,omitempty"`
}

// view redacts a run and derives its pending and unknown calls.
// A wait for a decision that ran out is shown as expired (the next
// process that holds the run records it).
func (s *Server) view(st *state.RunState) runView {
	engine.ExpireApprovals(st, s.o.Now())
	v := viewOf(s.o.Redact, st)
	v.Resume = resumecmd.Commands(v.RunState, "", resumecmd.Flags(v.RunState, nil, s.o.StoreFlag), v.PendingCalls, v.UnknownCalls)
	for k, c := range v.Resume {
		v.Resume[k] = s.o.Redact(c)
	}
	return v
}

// viewOf is view with the redactor given, for the notifier, which has no
// Server.
func viewOf(red func(string) string, st *state.RunState) runView {
	r := redactRun(red, st)
	v := runView{RunState: r}
	v.PendingCalls, v.UnknownCalls = engine.OperatorCalls(r)
	v.PendingInputs = engine.PendingInputs(r)
	v.DeniedCalls = engine.DeniedCalls(context.Background(), nil, r)
	return v
}

// redactRun copies a run with every text an operator sees passed through
// red. The store holds no secrets (the runtime redacts before it saves);
// this also covers values the server knows and the run does not.
func redactRun(red func(string) string, st *state.RunState) *state.RunState {
	c := *st
	c.Task = red(st.Task)
	c.Messages = make([]state.Message, len(st.Messages))
	for i, m := range st.Messages {
		m.Content = red(m.Content)
		calls := make([]state.ToolCall, len(m.ToolCalls))
		for j, tc := range m.ToolCalls {
			tc.Arguments = red(tc.Arguments)
			calls[j] = tc
		}
		m.ToolCalls = calls
		c.Messages[i] = m
	}
	c.Journal = make([]state.JournalEntry, len(st.Journal))
	for i, e := range st.Journal {
		e.Arguments = redactRaw(red, e.Arguments)
		e.ApprovedArguments = redactRaw(red, e.ApprovedArguments)
		e.RawArgs = red(e.RawArgs)
		e.Result = red(e.Result)
		e.Reason = red(e.Reason)
		if len(e.Inputs) > 0 {
			rounds := make([]state.InputRound, len(e.Inputs))
			for j, in := range e.Inputs {
				reqs := make([]state.InputRequest, len(in.Requests))
				for k, q := range in.Requests {
					q.Message, q.URL = red(q.Message), red(q.URL)
					q.Schema = redactRaw(red, q.Schema)
					reqs[k] = q
				}
				in.Requests = reqs
				in.Responses = redactRaw(red, in.Responses)
				in.RequestState = red(in.RequestState)
				rounds[j] = in
			}
			e.Inputs = rounds
		}
		c.Journal[i] = e
	}
	c.ProviderItems = make([]state.ProviderItem, len(st.ProviderItems))
	for i, p := range st.ProviderItems {
		p.Raw = redactRaw(red, p.Raw)
		c.ProviderItems[i] = p
	}
	c.Output = redactRaw(red, st.Output)
	if st.Error != nil {
		e := *st.Error
		e.Message = red(e.Message)
		c.Error = &e
	}
	return &c
}

// redactRaw redacts JSON text, keeping it JSON.
func redactRaw(red func(string) string, raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return raw
	}
	out := red(string(raw))
	if out == string(raw) {
		return raw
	}
	if json.Valid([]byte(out)) {
		return json.RawMessage(out)
	}
	b, _ := json.Marshal(out)
	return b
}
