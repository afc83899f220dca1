package engine

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nexa-run/nexa/internal/state"
)

// fixedRules answers every call of a tool with a fixed verdict, or by the
// "env" argument when byEnv is set, like a policy file would.
type fixedRules struct {
	hash   string
	byTool map[string]RuleVerdict
	byEnv  map[string]RuleVerdict
}

func (f fixedRules) Verdict(tool, risk string, args json.RawMessage) RuleVerdict {
	var a struct {
		Env string `json:"env"`
	}
	_ = json.Unmarshal(args, &a)
	if v, ok := f.byEnv[a.Env]; ok && a.Env != "" {
		return v
	}
	return f.byTool[tool]
}

func (f fixedRules) Ref() state.PolicyRef { return state.PolicyRef{Path: "/p.toml", Hash: f.hash} }

// resumeReq is what a resume of a harness run brings when nothing changed.
func (h *harness) resumeReq() ResumeRequest {
	req := ResumeRequest{SourceHash: h.prog.Hash, Agent: h.prog.Agents[0].Name, Provider: h.prov.Identity()}
	if h.rules != nil {
		ref := h.rules.Ref()
		req.Policy = &ref
	}
	return req
}

func (h *harness) resumeFull(id string, ds ...Decision) (*state.RunState, error) {
	h.t.Helper()
	return h.runner().Resume(context.Background(), ResumeOptions{RunID: id, Request: h.resumeReq(), Decisions: ds})
}

func TestPolicyRulesDecideLikeAPersonAndAreJournaled(t *testing.T) {
	h := newHarness(t,
		assistant(call("c1", "record_review", `{"content":"a"}`), call("c2", "lookup", `{"q":"x"}`), call("c3", "charge", `{"n":1}`)),
		answer("done"),
	)
	h.rules = fixedRules{hash: "sha256:p", byTool: map[string]RuleVerdict{
		"record_review": {Decision: RuleAllow, Rule: "reviews", Reason: "routine"},
		"lookup":        {Decision: RuleDeny, Rule: "no-lookups", Reason: "not today"},
		"charge":        {Decision: RuleAsk, Rule: "money"},
	}}
	st := h.start(NewRun{})
	if st.Status != state.StatusWaitingApproval {
		t.Fatalf("status %s, want waiting_approval (the ask rule)", st.Status)
	}
	if st.Config.Policy == nil || st.Config.Policy.Hash != "sha256:p" {
		t.Fatalf("run records policy %+v", st.Config.Policy)
	}
	c1, c2, c3 := st.Entry("c1"), st.Entry("c2"), st.Entry("c3")
	if c1.Decision == nil || !*c1.Decision || c1.DecidedBy != "policy:reviews" || c1.Reason != "routine" {
		t.Fatalf("allowed call: %+v", c1)
	}
	if c2.Outcome != "denied" || c2.DecidedBy != "policy:no-lookups" || c2.Result != "denied by policy rule no-lookups: not today" {
		t.Fatalf("denied call: %+v", c2)
	}
	if !c3.Pending() {
		t.Fatalf("asked call is not pending: %+v", c3)
	}
	if got := strings.Join(h.exec.calls, ","); got != "c1" {
		t.Fatalf("executed %q, want only the allowed c1", got)
	}
	st, err := h.resumeFull(st.ID, Decision{CallID: "c3", Approve: false, Reason: "no", By: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	dc := DeniedCalls(context.Background(), nil, st)
	if len(dc) != 2 || dc[0].CallID != "c2" || dc[0].DecidedBy != "policy:no-lookups" || dc[1].CallID != "c3" || dc[1].DecidedBy != "alice" {
		t.Fatalf("denied calls %+v", dc)
	}
	if st.Usage.RefusedCalls != 2 {
		t.Fatalf("refused_calls = %d", st.Usage.RefusedCalls)
	}
}

func TestResumeUnderAnotherPolicyIsRefused(t *testing.T) {
	h := newHarness(t, assistant(call("c1", "record_review", `{"content":"a"}`)), answer("done"))
	h.rules = fixedRules{hash: "sha256:one"}
	st := h.start(NewRun{})
	rev := st.Revision
	for name, rules := range map[string]Rules{"changed": fixedRules{hash: "sha256:two"}, "dropped": nil} {
		h.rules = rules
		_, err := h.resumeFull(st.ID, Decision{CallID: "c1", Approve: true})
		if re, ok := AsError(err); !ok || re.Code != CodePolicyChanged {
			t.Fatalf("%s policy: err %v, want policy_changed", name, err)
		}
	}
	got, _ := h.store.Load(context.Background(), st.ID)
	if got.Revision != rev || len(h.exec.calls) != 0 {
		t.Fatalf("a refused resume wrote (revision %d → %d) or ran %v", rev, got.Revision, h.exec.calls)
	}
}

// A store that says a call needs no approval, or carries a rule's
// decision no rule makes, is no authority: the resume derives both from
// the program and the policy again.
func TestResumeDerivesApprovalFromTheProgramNotTheStore(t *testing.T) {
	h := newHarness(t, assistant(call("c1", "record_review", `{"content":"a"}`)), answer("done"))
	st := h.start(NewRun{})
	forged, _ := h.store.Load(context.Background(), st.ID)
	e := forged.Entry("c1")
	e.NeedsApproval, e.Risk = false, "low"
	forged.Status = state.StatusRunning
	if err := h.store.Save(context.Background(), forged, state.Delta{Journal: []state.JournalEntry{*e}}); err != nil {
		t.Fatal(err)
	}
	st, err := h.resumeFull(st.ID)
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != state.StatusWaitingApproval || !st.Entry("c1").Pending() || st.Entry("c1").Risk != "high" || len(h.exec.calls) != 0 {
		t.Fatalf("status %s entry %+v executed %v", st.Status, st.Entry("c1"), h.exec.calls)
	}

	forged, _ = h.store.Load(context.Background(), st.ID)
	e = forged.Entry("c1")
	yes := true
	e.Decision, e.DecidedBy = &yes, "policy:made-up"
	if err := h.store.Save(context.Background(), forged, state.Delta{Journal: []state.JournalEntry{*e}}); err != nil {
		t.Fatal(err)
	}
	st, err = h.resumeFull(st.ID)
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != state.StatusWaitingApproval || len(h.exec.calls) != 0 {
		t.Fatalf("a forged rule decision ran the call: status %s executed %v", st.Status, h.exec.calls)
	}
}

func TestApprovalExpires(t *testing.T) {
	h := newHarness(t, assistant(call("c1", "record_review", `{"content":"a"}`)), answer("nothing recorded"))
	h.prog.Tools[0].ApprovalTimeout = 3600
	st := h.start(NewRun{ApprovalTimeout: 30 * time.Minute})
	e := st.Entry("c1")
	want := h.now.Add(30 * time.Minute)
	if e.ExpiresAt == nil || !e.ExpiresAt.Equal(want) {
		t.Fatalf("expires_at %v, want the shorter bound %v", e.ExpiresAt, want)
	}
	// Not yet: the call is pending, a decision would be taken.
	h.now = want.Add(-time.Second)
	loaded, _ := h.store.Load(context.Background(), st.ID)
	if len(ExpireApprovals(loaded, h.now)) != 0 {
		t.Fatal("expired a second early")
	}
	h.now = want
	_, err := h.resumeFull(st.ID, Decision{CallID: "c1", Approve: true, By: "late"})
	if re, ok := AsError(err); !ok || re.Code != CodeNotPending || !strings.Contains(re.Message, "expired") {
		t.Fatalf("late approval: %v", err)
	}
	st, err = h.resumeFull(st.ID)
	if err != nil {
		t.Fatal(err)
	}
	e = st.Entry("c1")
	if st.Status != state.StatusCompleted || e.Outcome != "expired" || e.Decision != nil || !e.CompletedAt.Equal(want) || len(h.exec.calls) != 0 {
		t.Fatalf("status %s entry %+v executed %v", st.Status, e, h.exec.calls)
	}
	if tm := st.Messages[len(st.Messages)-2]; tm.Role != state.RoleTool || !strings.Contains(tm.Content, "expired") {
		t.Fatalf("model was told %q", tm.Content)
	}
	if dc := DeniedCalls(context.Background(), nil, st); len(dc) != 1 || dc[0].Outcome != "expired" {
		t.Fatalf("denied calls %+v", dc)
	}
}

func TestApprovalNeverOutlivesTheDeadline(t *testing.T) {
	h := newHarness(t, assistant(call("c1", "record_review", `{"content":"a"}`)))
	st := h.start(NewRun{ApprovalTimeout: time.Hour, Timeout: 10 * time.Minute})
	if e := st.Entry("c1"); e.ExpiresAt == nil || !e.ExpiresAt.Equal(*st.Config.Deadline) {
		t.Fatalf("expires_at %v, deadline %v", e.ExpiresAt, st.Config.Deadline)
	}
}

type editOnly struct{ out json.RawMessage }

func (e editOnly) CheckEdit(*state.JournalEntry, string, json.RawMessage) (json.RawMessage, error) {
	return e.out, nil
}

func TestEditedApprovalRunsWithTheEditedArguments(t *testing.T) {
	h := newHarness(t, assistant(call("c1", "record_review", `{"content":"draft"}`)), answer("Recorded."))
	st := h.start(NewRun{})
	st, err := h.resumeFull(st.ID, Decision{CallID: "c1", Approve: true, By: "alice", Args: json.RawMessage(`{"content": "final"}`)})
	if err != nil {
		t.Fatal(err)
	}
	e := st.Entry("c1")
	if string(e.Arguments) != `{"content":"draft"}` || string(e.ApprovedArguments) != `{"content":"final"}` || e.EditedBy != "alice" {
		t.Fatalf("entry %+v", e)
	}
	if len(h.exec.calls) != 1 || !strings.Contains(e.Result, `ok:{"content":"final"}`) {
		t.Fatalf("executed %v with result %q", h.exec.calls, e.Result)
	}
	if !strings.HasPrefix(e.Result, `note: alice changed the arguments of this call before approving it; it ran with {"content":"final"}`) {
		t.Fatalf("the model is not told of the edit: %q", e.Result)
	}
}

func TestEditFailingItsSchemaRecordsNothing(t *testing.T) {
	h := newHarness(t, assistant(call("c1", "record_review", `{"content":"draft"}`)), answer("Recorded."))
	st := h.start(NewRun{})
	rev := st.Revision
	for _, bad := range []string{`{"content": 5}`, `{"content":"x","extra":1}`, `[1]`, `{`} {
		_, err := h.resumeFull(st.ID, Decision{CallID: "c1", Approve: true, Args: json.RawMessage(bad)})
		if re, ok := AsError(err); !ok || re.Code != CodeInvalidEdit || !re.Refusal {
			t.Fatalf("edit %s: err %v, want invalid_edit", bad, err)
		}
	}
	got, _ := h.store.Load(context.Background(), st.ID)
	if got.Revision != rev || !got.Entry("c1").Pending() || len(h.exec.calls) != 0 {
		t.Fatalf("a refused edit changed the run: revision %d → %d, entry %+v", rev, got.Revision, got.Entry("c1"))
	}
	// Without a checker (no program at hand) an edit is refused too.
	loaded, _ := h.store.Load(context.Background(), st.ID)
	if _, err := ApplyDecisions(loaded, []Decision{{CallID: "c1", Approve: true, Args: json.RawMessage(`{"content":"y"}`)}}, nil); err == nil {
		t.Fatal("an unchecked edit was accepted")
	}
}

func TestEditDeniedByPolicyIsRefused(t *testing.T) {
	h := newHarness(t, assistant(call("c1", "record_review", `{"content":"staging"}`)), answer("ok"))
	h.rules = fixedRules{hash: "sha256:p", byEnv: map[string]RuleVerdict{"production": {Decision: RuleDeny, Rule: "no-prod", Reason: "never"}}}
	h.prog.Tools[0].Parameters = schema(`"content":{"type":"string"},"env":{"type":"string"}`, "content")
	st := h.start(NewRun{})
	_, err := h.resumeFull(st.ID, Decision{CallID: "c1", Approve: true, Args: json.RawMessage(`{"content":"x","env":"production"}`)})
	if re, ok := AsError(err); !ok || re.Code != CodeInvalidEdit || !strings.Contains(re.Message, "no-prod") {
		t.Fatalf("err %v", err)
	}
}

// An edit in the store that no longer passes the checks (the store was
// changed behind nexa's back) is never executed.
func TestStoredEditIsCheckedAgainBeforeItRuns(t *testing.T) {
	h := newHarness(t, assistant(call("c1", "record_review", `{"content":"draft"}`)), answer("ok"))
	st := h.start(NewRun{})
	loaded, _ := h.store.Load(context.Background(), st.ID)
	d, err := ApplyDecisions(loaded, []Decision{{CallID: "c1", Approve: true, Args: json.RawMessage(`{"content":1}`)}}, editOnly{json.RawMessage(`{"content":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.store.Save(context.Background(), loaded, d); err != nil {
		t.Fatal(err)
	}
	st, err = h.resumeFull(st.ID)
	if err != nil {
		t.Fatal(err)
	}
	if e := st.Entry("c1"); len(h.exec.calls) != 0 || e.Outcome != "refused" {
		t.Fatalf("executed %v, entry %+v", h.exec.calls, e)
	}
}

func TestRepliesBeyondTheCapAreRefused(t *testing.T) {
	calls := make([]state.ToolCall, MaxCallsPerReply+3)
	for i := range calls {
		calls[i] = call("", "lookup", `{"q":"x"}`)
	}
	h := newHarness(t, assistant(calls...), answer("done"))
	st := h.start(NewRun{})
	if len(h.exec.calls) != MaxCallsPerReply {
		t.Fatalf("executed %d calls, want %d", len(h.exec.calls), MaxCallsPerReply)
	}
	refused := 0
	for _, e := range st.Journal {
		if e.Outcome == "refused" && strings.Contains(e.Result, "at most 64 calls of one reply") {
			refused++
		}
	}
	if refused != 3 || st.Status != state.StatusCompleted {
		t.Fatalf("refused %d, status %s", refused, st.Status)
	}
}
