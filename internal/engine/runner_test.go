package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/nexa-run/nexa/internal/tool"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexa-run/nexa/internal/ir"
	"github.com/nexa-run/nexa/internal/provider"
	"github.com/nexa-run/nexa/internal/state"
)

// memStore is an in-memory state.Store with the same compare-and-set rule as
// the SQLite store, so the loop's invariants can be tested without disk.
type memStore struct {
	mu    sync.Mutex
	runs  map[string][]byte
	saves []state.Delta
	// onSave, when set, is told of every committed delta (outside the
	// store's lock, so it may load the run).
	onSave func(state.Delta)
}

func newMemStore() *memStore { return &memStore{runs: map[string][]byte{}} }

func clone(st *state.RunState) *state.RunState {
	b, _ := json.Marshal(st)
	var out state.RunState
	_ = json.Unmarshal(b, &out)
	return &out
}

func (m *memStore) Create(_ context.Context, st *state.RunState) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	st.Revision = 1
	b, _ := json.Marshal(st)
	m.runs[st.ID] = b
	return nil
}

func (m *memStore) Load(_ context.Context, id string) (*state.RunState, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.runs[id]
	if !ok {
		return nil, state.ErrNotFound
	}
	var st state.RunState
	_ = json.Unmarshal(b, &st)
	return &st, nil
}

func (m *memStore) Save(_ context.Context, st *state.RunState, d state.Delta) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var cur state.RunState
	_ = json.Unmarshal(m.runs[st.ID], &cur)
	if cur.Revision != st.Revision {
		return &state.ConflictError{RunID: st.ID, Expected: st.Revision, Actual: cur.Revision}
	}
	st.Revision++
	b, _ := json.Marshal(st)
	m.runs[st.ID] = b
	m.saves = append(m.saves, d)
	if hook := m.onSave; hook != nil {
		m.mu.Unlock()
		hook(d)
		m.mu.Lock()
	}
	return nil
}

// The memory store grants every lease and fences nothing: the runner's
// tests are about the loop; leases are the store contract's (storetest).
func (m *memStore) Acquire(_ context.Context, id, owner string, ttl time.Duration) (*state.Lease, error) {
	return &state.Lease{Owner: owner, Epoch: 1, TTL: ttl}, nil
}

func (m *memStore) Renew(context.Context, string, *state.Lease) error   { return nil }
func (m *memStore) Release(context.Context, string, *state.Lease) error { return nil }

func (m *memStore) Update(ctx context.Context, id string, fn func(*state.RunState) (state.Delta, error)) (*state.RunState, error) {
	st, err := m.Load(ctx, id)
	if err != nil {
		return nil, err
	}
	d, err := fn(st)
	if err != nil {
		return nil, err
	}
	return st, m.Save(ctx, st, d)
}

func (m *memStore) List(context.Context, state.Filter) ([]state.Summary, error) { return nil, nil }
func (m *memStore) Prune(context.Context, state.Filter) (state.PruneReport, error) {
	return state.PruneReport{}, nil
}
func (m *memStore) Close() error { return nil }

// turnsProvider replies from a fixed list, choosing the turn by the number of
// assistant messages (like the script provider), and counts requests.
type turnsProvider struct {
	turns    []state.Message
	requests int
	last     provider.Request
	err      error
}

func (p *turnsProvider) Complete(_ context.Context, req provider.Request, _ func(provider.Event)) (provider.Reply, error) {
	p.requests++
	p.last = req
	if p.err != nil {
		return provider.Reply{}, p.err
	}
	n := 0
	for _, m := range req.Messages {
		if m.Role == state.RoleAssistant {
			n++
		}
	}
	if n >= len(p.turns) {
		return provider.Reply{}, &provider.Error{Kind: "script_exhausted", Message: "no more turns"}
	}
	return provider.Reply{Message: p.turns[n], Raw: json.RawMessage(`{}`), Usage: state.Usage{InputTokens: 10, OutputTokens: 5, TotalTokens: 15}}, nil
}

func (p *turnsProvider) Identity() state.ProviderIdentity {
	return state.ProviderIdentity{Kind: "test", Model: "m"}
}

// countingExec records every execution.
type countingExec struct {
	mu    sync.Mutex
	calls []string
	fn    func(inv tool.Invocation) (tool.Outcome, error)
}

func (c *countingExec) Execute(_ context.Context, inv tool.Invocation) (tool.Outcome, error) {
	c.mu.Lock()
	c.calls = append(c.calls, inv.CallID)
	c.mu.Unlock()
	if c.fn != nil {
		return c.fn(inv)
	}
	return tool.Outcome{Output: "ok:" + string(inv.Arguments), Success: true}, nil
}

func schema(props string, required ...string) json.RawMessage {
	req, _ := json.Marshal(required)
	if required == nil {
		req = []byte("[]")
	}
	return json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{%s},"required":%s,"additionalProperties":false}`, props, req))
}

func testProgram() *ir.Program {
	return &ir.Program{
		Hash: "sha256:test",
		Tools: []*ir.Tool{
			{Name: "record_review", Description: "Record reviewed text", Parameters: schema(`"content":{"type":"string"}`, "content"), Risk: "high", RequiresApproval: true, Timeout: 30, Body: ir.Body{Kind: ir.BodyPython}},
			{Name: "lookup", Description: "Look up", Parameters: schema(`"q":{"type":"string"}`, "q"), Risk: "low", Timeout: 30, Body: ir.Body{Kind: ir.BodyPython}},
			{Name: "hidden", Description: "Not exposed", Parameters: schema(``), Risk: "low", Timeout: 30, Body: ir.Body{Kind: ir.BodyPython}},
			{Name: "charge", Description: "Idempotent charge", Parameters: schema(`"n":{"type":"integer"}`, "n"), Risk: "low", Idempotent: true, Timeout: 30, Body: ir.Body{Kind: ir.BodyPython}},
		},
		Agents: []*ir.Agent{{Name: "Reviewer", Prompt: "Review.", Tools: []string{"charge", "lookup", "record_review"}, Retry: -1}},
	}
}

func call(id, name, args string) state.ToolCall {
	return state.ToolCall{ID: id, Name: name, Arguments: args}
}

func assistant(calls ...state.ToolCall) state.Message {
	return state.Message{Role: state.RoleAssistant, ToolCalls: calls}
}

func answer(text string) state.Message {
	return state.Message{Role: state.RoleAssistant, Content: text}
}

type harness struct {
	t     *testing.T
	store *memStore
	prov  *turnsProvider
	exec  *countingExec
	prog  *ir.Program
	now   time.Time
	rules Rules
	// parallel is the runner's MaxParallelTools (0: the default).
	parallel int
	// stop is the runner's stop channel (nil: none).
	stop chan struct{}
	// log is the runner's tool log (nil: none).
	log ToolLog
}

func newHarness(t *testing.T, turns ...state.Message) *harness {
	return &harness{t: t, store: newMemStore(), prov: &turnsProvider{turns: turns}, exec: &countingExec{}, prog: testProgram(), now: time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)}
}

func (h *harness) runner() *Runner {
	h.t.Helper()
	r, err := NewRunner(Config{
		Program: h.prog, Agent: h.prog.Agents[0], Store: h.store, Provider: h.prov,
		Executors: map[ir.BodyKind]tool.Executor{ir.BodyPython: h.exec},
		Now:       func() time.Time { return h.now },
		Rules:     h.rules,

		MaxParallelTools: h.parallel,
		Stop:             h.stop,
		ToolLog:          h.toolLog(),
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return r
}

// toolLog opens h.log for every run, or nothing.
func (h *harness) toolLog() func(string) ToolLog {
	if h.log == nil {
		return nil
	}
	return func(string) ToolLog { return h.log }
}

func (h *harness) start(nr NewRun) *state.RunState {
	h.t.Helper()
	if nr.Task == "" {
		nr.Task = "Review the supplied change"
	}
	st, err := h.runner().Start(context.Background(), nr)
	if err != nil {
		h.t.Fatalf("start: %v", err)
	}
	return st
}

// resume loads the run fresh (as a new process would), records decisions
// and continues.
func (h *harness) resume(id string, ds ...Decision) (*state.RunState, error) {
	h.t.Helper()
	st, err := h.store.Load(context.Background(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	if len(ds) > 0 {
		delta, err := ApplyDecisions(st, ds, nil)
		if err != nil {
			return st, err
		}
		if err := h.store.Save(context.Background(), st, delta); err != nil {
			return st, err
		}
	}
	return h.runner().Continue(context.Background(), st)
}

func TestApproveFlowExecutesOnceAfterApproval(t *testing.T) {
	h := newHarness(t,
		assistant(call("c1", "record_review", `{"content":"LGTM"}`)),
		answer("Recorded."),
	)
	st := h.start(NewRun{})
	if st.Status != state.StatusWaitingApproval {
		t.Fatalf("status = %s, want waiting_approval", st.Status)
	}
	if ids := PendingCallIDs(st); len(ids) != 1 || ids[0] != "c1" {
		t.Fatalf("pending = %v", ids)
	}
	if len(h.exec.calls) != 0 {
		t.Fatalf("tool executed before approval: %v", h.exec.calls)
	}
	st, err := h.resume(st.ID, Decision{CallID: "c1", Approve: true})
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != state.StatusCompleted || string(st.Output) != `"Recorded."` {
		t.Fatalf("status %s output %s", st.Status, st.Output)
	}
	if len(h.exec.calls) != 1 {
		t.Fatalf("executions = %v, want exactly one", h.exec.calls)
	}
	if h.prov.requests != 2 {
		t.Fatalf("provider requests = %d, want 2 (a saved reply is never requested again)", h.prov.requests)
	}
	// Resuming a completed run executes nothing.
	st2, _ := h.store.Load(context.Background(), st.ID)
	if !st2.Status.Terminal() {
		t.Fatal("completed run is not terminal")
	}
}

func TestDenyAnswersModelWithReason(t *testing.T) {
	h := newHarness(t,
		assistant(call("c1", "record_review", `{"content":"x"}`)),
		answer("ok"),
	)
	st := h.start(NewRun{})
	st, err := h.resume(st.ID, Decision{CallID: "c1", Approve: false, Reason: "wrong target"})
	if err != nil {
		t.Fatal(err)
	}
	if len(h.exec.calls) != 0 {
		t.Fatal("denied call executed")
	}
	var toolMsg state.Message
	for _, m := range st.Messages {
		if m.Role == state.RoleTool {
			toolMsg = m
		}
	}
	if toolMsg.Content != "denied by the operator: wrong target" || !toolMsg.IsError {
		t.Fatalf("tool message = %+v", toolMsg)
	}
}

func TestApprovalFreeCallsRunWhileOthersWait(t *testing.T) {
	h := newHarness(t,
		assistant(call("a", "record_review", `{"content":"1"}`), call("b", "lookup", `{"q":"x"}`), call("c", "record_review", `{"content":"2"}`)),
		answer("done"),
	)
	st := h.start(NewRun{})
	if st.Status != state.StatusWaitingApproval {
		t.Fatalf("status %s", st.Status)
	}
	if got := strings.Join(h.exec.calls, ","); got != "b" {
		t.Fatalf("executed %q, want only the approval-free call b", got)
	}
	if ids := PendingCallIDs(st); strings.Join(ids, ",") != "a,c" {
		t.Fatalf("pending %v", ids)
	}
	// Approve one, deny the other, in one resume.
	st, err := h.resume(st.ID, Decision{CallID: "a", Approve: true}, Decision{CallID: "c", Approve: false})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(h.exec.calls, ","); got != "b,a" {
		t.Fatalf("executions %q", got)
	}
	// Tool messages follow the order of the calls.
	var order []string
	for _, m := range st.Messages {
		if m.Role == state.RoleTool {
			order = append(order, m.ToolCallID)
		}
	}
	if strings.Join(order, ",") != "a,b,c" || st.Status != state.StatusCompleted {
		t.Fatalf("tool message order %v, status %s", order, st.Status)
	}
}

func TestRefusedCallsAreAnsweredNotExecuted(t *testing.T) {
	cases := map[string]struct {
		call state.ToolCall
		want string
	}{
		"unexposed":     {call("c1", "hidden", `{}`), `tool "hidden" is not available`},
		"nonexistent":   {call("c1", "rm_rf", `{}`), `tool "rm_rf" is not available`},
		"missing field": {call("c1", "lookup", `{}`), "invalid arguments for lookup"},
		"extra field":   {call("c1", "lookup", `{"q":"x","z":1}`), "invalid arguments for lookup"},
		"wrong type":    {call("c1", "lookup", `{"q":3}`), "invalid arguments for lookup"},
		"malformed":     {call("c1", "lookup", `{"q": "x"`), "not valid JSON"},
		"not object":    {call("c1", "lookup", `["x"]`), "must be a JSON object"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, assistant(tc.call), answer("fine"))
			st := h.start(NewRun{})
			if len(h.exec.calls) != 0 {
				t.Fatal("refused call executed")
			}
			e := st.Entry("c1")
			if e.Stage != state.StageCompleted || e.Success || e.Outcome != "refused" || !strings.Contains(e.Result, tc.want) {
				t.Fatalf("entry %+v", e)
			}
			if st.Status != state.StatusCompleted {
				t.Fatalf("status %s", st.Status)
			}
		})
	}
}

// One call after another (--max-parallel-tools 1): after an unknown
// outcome, no later call of the reply starts.
func TestUnknownOutcomeStopsAndResolveContinuesWithoutExecution(t *testing.T) {
	h := newHarness(t, assistant(call("c1", "lookup", `{"q":"x"}`), call("c2", "lookup", `{"q":"y"}`)), answer("done"))
	h.parallel = 1
	h.exec.fn = func(inv tool.Invocation) (tool.Outcome, error) {
		return tool.Outcome{}, fmt.Errorf("killed after timeout: %w", tool.ErrUnknownOutcome)
	}
	st := h.start(NewRun{})
	if st.Status != state.StatusUnknownOutcome {
		t.Fatalf("status %s", st.Status)
	}
	if u := UnknownCalls(st); len(u) != 1 || u[0].CallID != "c1" {
		t.Fatalf("unknown calls %+v", u)
	}
	if len(h.exec.calls) != 1 {
		t.Fatalf("after an unknown outcome nothing else may run; executed %v", h.exec.calls)
	}
	// Resuming without resolution stays unknown and executes nothing.
	h.exec.fn = nil
	st, err := h.resume(st.ID)
	if err != nil || st.Status != state.StatusUnknownOutcome || len(h.exec.calls) != 1 {
		t.Fatalf("resume before resolve: %v %s %v", err, st.Status, h.exec.calls)
	}
	// Resolve, then resume: c1 is not executed again, c2 runs.
	_, err = h.store.Update(context.Background(), st.ID, func(s *state.RunState) (state.Delta, error) {
		return Resolve(s, "c1", "verified: done", true, "ops", h.now)
	})
	if err != nil {
		t.Fatal(err)
	}
	st, err = h.resume(st.ID)
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != state.StatusCompleted || strings.Join(h.exec.calls, ",") != "c1,c2" {
		t.Fatalf("status %s executions %v", st.Status, h.exec.calls)
	}
	if e := st.Entry("c1"); e.Outcome != "resolved" || e.Result != "verified: done" {
		t.Fatalf("c1 %+v", e)
	}
}

func TestResolveRefusedUnlessStarted(t *testing.T) {
	h := newHarness(t, assistant(call("c1", "lookup", `{"q":"x"}`)), answer("done"))
	st := h.start(NewRun{})
	rev := st.Revision
	if _, err := Resolve(st, "c1", "x", true, "ops", h.now); err == nil {
		t.Fatal("resolve of a completed call accepted")
	}
	if _, err := Resolve(st, "nope", "x", true, "ops", h.now); err == nil {
		t.Fatal("resolve of an unknown call accepted")
	}
	if st.Revision != rev {
		t.Fatal("refusal changed the run")
	}
}

func TestIdempotentToolRunsAgainAfterCrash(t *testing.T) {
	h := newHarness(t, assistant(call("c1", "charge", `{"n":5}`)), answer("charged"))
	st := h.start(NewRun{})
	// Simulate a crash after started was saved: put the entry back to
	// started, as a killed process would have left it.
	_, err := h.store.Update(context.Background(), st.ID, func(s *state.RunState) (state.Delta, error) {
		s.Status = state.StatusRunning
		s.Messages = s.Messages[:len(s.Messages)-2] // drop tool message and answer
		e := s.Entry("c1")
		e.Stage, e.Result, e.Outcome, e.CompletedAt = state.StageStarted, "", "", nil
		return state.Delta{Journal: []state.JournalEntry{*e}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	st, err = h.resume(st.ID)
	if err != nil || st.Status != state.StatusCompleted {
		t.Fatalf("%v %s", err, st.Status)
	}
	if len(h.exec.calls) != 2 || st.Entry("c1").Attempts != 2 {
		t.Fatalf("idempotent tool should run again: %v attempts %d", h.exec.calls, st.Entry("c1").Attempts)
	}
}

func TestDecisionRefusalsWriteNothing(t *testing.T) {
	h := newHarness(t, assistant(call("c1", "record_review", `{"content":"x"}`), call("c2", "lookup", `{"q":"x"}`)), answer("ok"))
	st := h.start(NewRun{})
	for _, ds := range [][]Decision{
		{{CallID: "nope", Approve: true}},
		{{CallID: "c2", Approve: true}},                                  // not pending: no approval needed
		{{CallID: "c1", Approve: true}, {CallID: "nope", Approve: true}}, // one bad decision refuses all
		{{CallID: "c1", Approve: true}, {CallID: "c1", Approve: false}},
	} {
		before := clone(st)
		_, err := ApplyDecisions(st, ds, nil)
		e, ok := AsError(err)
		if !ok || !e.Refusal {
			t.Fatalf("decisions %+v: err %v, want a refusal", ds, err)
		}
		a, _ := json.Marshal(before)
		b, _ := json.Marshal(st)
		if string(a) != string(b) {
			t.Fatalf("refused decisions %+v changed the state", ds)
		}
	}
	// A run that is not waiting refuses decisions.
	st, _ = h.resume(st.ID, Decision{CallID: "c1", Approve: true})
	if _, err := ApplyDecisions(st, []Decision{{CallID: "c1", Approve: true}}, nil); err == nil {
		t.Fatal("decision on a completed run accepted")
	}
}

func TestDeadlinePassedWhileWaiting(t *testing.T) {
	h := newHarness(t, assistant(call("c1", "record_review", `{"content":"x"}`)), answer("ok"))
	dl := h.now.Add(15 * time.Minute)
	st := h.start(NewRun{Deadline: &dl})
	if st.Status != state.StatusWaitingApproval {
		t.Fatal(st.Status)
	}
	h.now = h.now.Add(16 * time.Minute)
	st, _ = h.store.Load(context.Background(), st.ID)
	if !ExpireDeadline(st, h.now) || st.Status != state.StatusTimedOut {
		t.Fatal("deadline not expired")
	}
	// Even an approved call does not run once the deadline has passed.
	st2, _ := h.store.Load(context.Background(), st.ID)
	if _, err := ApplyDecisions(st2, []Decision{{CallID: "c1", Approve: true}}, nil); err != nil {
		t.Fatal(err)
	}
	st2, err := h.runner().Continue(context.Background(), st2)
	if err != nil || st2.Status != state.StatusTimedOut || len(h.exec.calls) != 0 {
		t.Fatalf("%v %s %v", err, st2.Status, h.exec.calls)
	}
}

func TestBudgets(t *testing.T) {
	t.Run("max tool calls", func(t *testing.T) {
		h := newHarness(t, assistant(call("c1", "lookup", `{"q":"1"}`), call("c2", "lookup", `{"q":"2"}`)), answer("ok"))
		st := h.start(NewRun{Budgets: state.Budgets{MaxToolCalls: 1}})
		if st.Status != state.StatusBudgetExhausted || len(h.exec.calls) != 1 || st.Entry("c2").Stage != state.StageNotStarted {
			t.Fatalf("status %s executed %v", st.Status, h.exec.calls)
		}
	})
	t.Run("max turns", func(t *testing.T) {
		h := newHarness(t, assistant(call("c1", "lookup", `{"q":"1"}`)), answer("ok"))
		st := h.start(NewRun{Budgets: state.Budgets{MaxTurns: 1}})
		if st.Status != state.StatusBudgetExhausted || h.prov.requests != 1 {
			t.Fatalf("status %s requests %d", st.Status, h.prov.requests)
		}
	})
	t.Run("max tokens", func(t *testing.T) {
		h := newHarness(t, assistant(call("c1", "lookup", `{"q":"1"}`)), answer("ok"))
		st := h.start(NewRun{Budgets: state.Budgets{MaxTokens: 10}})
		if st.Status != state.StatusBudgetExhausted || h.prov.requests != 1 {
			t.Fatalf("status %s requests %d", st.Status, h.prov.requests)
		}
	})
}

func TestTwoExecutorsRacingExecuteOnce(t *testing.T) {
	h := newHarness(t, assistant(call("c1", "record_review", `{"content":"x"}`)), answer("ok"))
	st := h.start(NewRun{})
	a, _ := h.store.Load(context.Background(), st.ID)
	b, _ := h.store.Load(context.Background(), st.ID)
	da, _ := ApplyDecisions(a, []Decision{{CallID: "c1", Approve: true}}, nil)
	db, _ := ApplyDecisions(b, []Decision{{CallID: "c1", Approve: true}}, nil)
	errA := h.store.Save(context.Background(), a, da)
	errB := h.store.Save(context.Background(), b, db)
	var ce *state.ConflictError
	if errA != nil || !errors.As(errB, &ce) {
		t.Fatalf("errA %v errB %v", errA, errB)
	}
	if _, err := h.runner().Continue(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	if len(h.exec.calls) != 1 {
		t.Fatalf("executed %d times", len(h.exec.calls))
	}
}

func TestProviderErrorFailsResumably(t *testing.T) {
	h := newHarness(t, answer("ok"))
	h.prov.err = &provider.Error{Kind: "auth", Status: 401, Message: "the API key was rejected"}
	st := h.start(NewRun{})
	if st.Status != state.StatusFailed || st.Error.Code != CodeProviderError {
		t.Fatalf("status %s error %+v", st.Status, st.Error)
	}
	h.prov.err = nil
	st, err := h.resume(st.ID)
	if err != nil || st.Status != state.StatusCompleted {
		t.Fatalf("%v %s", err, st.Status)
	}
}

func TestCheckResumeNamesWhatDiffers(t *testing.T) {
	h := newHarness(t, answer("ok"))
	st := h.start(NewRun{WorkDir: "/w", Budgets: state.Budgets{MaxTurns: 5}})
	ok := ResumeRequest{SourceHash: st.Config.SourceHash, Agent: "Reviewer", Provider: st.Config.Provider, WorkDir: "/w"}
	if err := CheckResume(st, ok); err != nil {
		t.Fatal(err)
	}
	five, six := 5, 6
	sameTurns := ok
	sameTurns.Budgets.MaxTurns = &five
	if err := CheckResume(st, sameTurns); err != nil {
		t.Fatal(err)
	}
	mut := map[string]func(r *ResumeRequest){
		CodeTaskWithResume:  func(r *ResumeRequest) { r.HasTask = true },
		CodeSourceChanged:   func(r *ResumeRequest) { r.SourceHash = "sha256:other" },
		CodeAgentChanged:    func(r *ResumeRequest) { r.Agent = "Other" },
		CodeProviderChanged: func(r *ResumeRequest) { r.Provider.BaseURL = "http://elsewhere" },
		CodeBudgetsChanged:  func(r *ResumeRequest) { r.Budgets.MaxTurns = &six },
		CodeWorkDirChanged:  func(r *ResumeRequest) { r.WorkDir = "/x" },
	}
	codes := make([]string, 0, len(mut))
	for c := range mut {
		codes = append(codes, c)
	}
	sort.Strings(codes)
	for _, code := range codes {
		req := ok
		mut[code](&req)
		err := CheckResume(st, req)
		e, isErr := AsError(err)
		if !isErr || e.Code != code || !e.Refusal {
			t.Errorf("%s: got %v", code, err)
		}
	}
}

func TestMaxToolCallsSettingAsksForAnswerWithoutTools(t *testing.T) {
	h := newHarness(t, assistant(call("c1", "lookup", `{"q":"1"}`)), answer("final"))
	h.prog.Agents[0].MaxToolCalls = 1
	st := h.start(NewRun{})
	if st.Status != state.StatusCompleted {
		t.Fatal(st.Status)
	}
	if len(h.prov.last.Tools) != 0 {
		t.Fatalf("tools offered after max_tool_calls rounds: %d", len(h.prov.last.Tools))
	}
}

func TestDuplicateCallIDsAreMadeUnique(t *testing.T) {
	h := newHarness(t,
		assistant(call("call_0", "lookup", `{"q":"1"}`)),
		assistant(call("call_0", "lookup", `{"q":"2"}`), call("call_0", "lookup", `{"q":"3"}`)),
		answer("ok"))
	st := h.start(NewRun{})
	if st.Status != state.StatusCompleted || len(st.Journal) != 3 {
		t.Fatalf("status %s journal %d", st.Status, len(st.Journal))
	}
	seen := map[string]bool{}
	for _, e := range st.Journal {
		if seen[e.CallID] {
			t.Fatalf("duplicate call id %s", e.CallID)
		}
		seen[e.CallID] = true
	}
}

func TestModelRepliesAreRedactedBeforeTheyAreSavedSentOrExecuted(t *testing.T) {
	const key = "sk-canary-REPLY-0001"
	h := newHarness(t,
		assistant(call("c1", "lookup", `{"q":"`+key+`"}`)),
		answer("the key is "+key))
	var got []string
	h.exec.fn = func(inv tool.Invocation) (tool.Outcome, error) {
		got = append(got, string(inv.Arguments))
		return tool.Outcome{Output: "looked up", Success: true}, nil
	}
	r, err := NewRunner(Config{
		Program: h.prog, Agent: h.prog.Agents[0], Store: h.store, Provider: h.prov,
		Executors: map[ir.BodyKind]tool.Executor{ir.BodyPython: h.exec},
		Redact:    func(s string) string { return strings.ReplaceAll(s, key, "[REDACTED]") },
	})
	if err != nil {
		t.Fatal(err)
	}
	st, err := r.Start(context.Background(), NewRun{Task: "find it"})
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != state.StatusCompleted {
		t.Fatalf("status %s", st.Status)
	}
	if len(got) != 1 || got[0] != `{"q":"[REDACTED]"}` {
		t.Errorf("the tool got %q, want the redacted arguments", got)
	}
	if out := string(st.Output); !strings.Contains(out, "the key is [REDACTED]") {
		t.Errorf("output %s", out)
	}
	for id, b := range h.store.runs {
		if strings.Contains(string(b), key) {
			t.Errorf("run %s saved the key: %s", id, b)
		}
	}
	req, _ := json.Marshal(h.prov.last)
	if strings.Contains(string(req), key) {
		t.Errorf("the key was sent back to the model: %s", req)
	}
}

// TestTimeoutFullPrecision: the deadline is start + timeout to the
// nanosecond, not truncated to the second (--timeout 1 once left 2 ms).
func TestTimeoutFullPrecision(t *testing.T) {
	h := newHarness(t, answer("ok"))
	h.now = time.Date(2026, 12, 2, 10, 0, 0, 998_000_000, time.UTC)
	st := h.start(NewRun{Timeout: time.Second})
	if dl := st.Config.Deadline; dl == nil || !dl.Equal(h.now.Add(time.Second)) {
		t.Fatalf("deadline %v, want %v", dl, h.now.Add(time.Second))
	}
	loaded, _ := h.store.Load(context.Background(), st.ID)
	if !loaded.Config.Deadline.Equal(h.now.Add(time.Second)) {
		t.Fatalf("stored deadline %v", loaded.Config.Deadline)
	}
	// Without --timeout the agent's timeout applies, in full as well.
	h.prog.Agents[0].Timeout = 600
	st = h.start(NewRun{})
	if dl := st.Config.Deadline; dl == nil || !dl.Equal(h.now.Add(600*time.Second)) {
		t.Fatalf("agent timeout deadline %v", dl)
	}
}
