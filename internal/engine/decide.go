package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/nexa-run/nexa/internal/state"
)

// Decision is an operator's explicit answer for one pending call. Nothing
// else authorises a call that needs approval.
type Decision struct {
	CallID  string
	Approve bool
	Reason  string
	// By names who decided (nexa serve's operator); At is when. The
	// lifecycle calls fill a zero At with their clock.
	By string
	At time.Time
	// Args, when set, are the arguments the person approves the call
	// with instead of the model's (an approval only): they are checked
	// as the model's were (EditChecker) before anything is recorded.
	Args json.RawMessage
}

// ApplyDecisions records decisions in st and returns the rows to save. All
// decisions are checked before any is applied, so a refusal changes nothing:
// the run must be waiting for approval and every call must be pending in it
// (not expired at the decision's time). Edited arguments need check; a nil
// check refuses them.
func ApplyDecisions(st *state.RunState, ds []Decision, check EditChecker) (state.Delta, error) {
	if len(ds) == 0 {
		return state.Delta{}, nil
	}
	seen := map[string]bool{}
	for _, d := range ds {
		if seen[d.CallID] {
			return state.Delta{}, refuse(CodeUsage, "call %s is named more than once; give one decision per call", d.CallID)
		}
		seen[d.CallID] = true
	}
	if st.Status != state.StatusWaitingApproval && st.Status != state.StatusWaitingInput {
		// A run that waits for input may also wait for decisions on
		// other calls of the same reply.
		return state.Delta{}, refuse(CodeNotWaiting, "run %s is %s, not waiting for approval; no decision was recorded", st.ID, st.Status)
	}
	for _, d := range ds {
		e := st.Entry(d.CallID)
		if e == nil {
			return state.Delta{}, refuse(CodeUnknownCall, "run %s has no call %s%s; no decision was recorded", st.ID, d.CallID, pendingHint(st))
		}
		if !e.Pending() {
			return state.Delta{}, refuse(CodeNotPending, "call %s of run %s is not pending approval (%s); no decision was recorded%s", d.CallID, st.ID, describeEntry(e), pendingHint(st))
		}
		if !d.At.IsZero() && e.Expired(d.At) {
			return state.Delta{}, refuse(CodeNotPending, "call %s of run %s expired at %s without a decision; no decision was recorded (a resume answers it to the model as expired)", d.CallID, st.ID, e.ExpiresAt.UTC().Format(time.RFC3339))
		}
	}
	edited := map[string]json.RawMessage{}
	for _, d := range ds {
		if d.Args == nil || sameJSON(d.Args, st.Entry(d.CallID).Arguments) {
			// No edit, or one that changes nothing (a form that
			// sends the arguments back as shown).
			continue
		}
		if !d.Approve {
			return state.Delta{}, refuse(CodeUsage, "edited arguments go with an approval; call %s is denied, so no decision was recorded", d.CallID)
		}
		if check == nil {
			return state.Delta{}, refuse(CodeInvalidEdit, "edited arguments for call %s cannot be checked here (the run's program is not at hand); no decision was recorded", d.CallID)
		}
		norm, err := check.CheckEdit(st.Entry(d.CallID), st.Config.WorkDir, d.Args)
		if err != nil {
			return state.Delta{}, err
		}
		edited[d.CallID] = norm
	}
	var delta state.Delta
	for _, d := range ds {
		e := st.Entry(d.CallID)
		v := d.Approve
		e.Decision = &v
		e.Reason = d.Reason
		e.DecidedBy = d.By
		if !d.At.IsZero() {
			at := d.At.UTC()
			e.DecidedAt = &at
		}
		if norm, ok := edited[d.CallID]; ok {
			e.ApprovedArguments = norm
			e.EditedBy = d.By
			if e.EditedBy == "" {
				e.EditedBy = "an operator"
			}
		}
		delta.Journal = append(delta.Journal, *e)
	}
	return delta, nil
}

func describeEntry(e *state.JournalEntry) string {
	switch {
	case e.Stage == state.StageCompleted && e.Outcome == "expired":
		return "its wait for a decision expired"
	case e.Stage == state.StageCompleted:
		return "it is completed: " + e.Outcome
	case e.Stage == state.StageStarted:
		return "it has started and its outcome is unknown"
	case e.Decision != nil && *e.Decision:
		return "it is already approved"
	case e.Decision != nil:
		return "it is already denied"
	case !e.NeedsApproval:
		return "it does not need approval"
	}
	return "stage " + string(e.Stage)
}

func pendingHint(st *state.RunState) string {
	ids := PendingCallIDs(st)
	if len(ids) == 0 {
		return ""
	}
	return "; pending calls: " + strings.Join(ids, ", ")
}

// PendingCallIDs lists the calls waiting for a decision, in call order.
func PendingCallIDs(st *state.RunState) []string {
	return callIDs(st, (*state.JournalEntry).Pending)
}

// callIDs lists the calls of st that keep says yes to, in call order.
func callIDs(st *state.RunState, keep func(*state.JournalEntry) bool) []string {
	var es []state.JournalEntry
	for i := range st.Journal {
		if keep(&st.Journal[i]) {
			es = append(es, st.Journal[i])
		}
	}
	sort.Slice(es, func(i, j int) bool { return es[i].Seq < es[j].Seq })
	ids := make([]string, len(es))
	for i, e := range es {
		ids[i] = e.CallID
	}
	return ids
}

// UnknownCalls are the calls whose execution began and whose result was
// never saved. A call handed to a server's task (TaskID) is not among them
// while the run can still poll it: only once the run stopped with an
// unknown outcome (the server lost the task) or for good.
func UnknownCalls(st *state.RunState) []state.JournalEntry {
	var es []state.JournalEntry
	polled := st.Status != state.StatusUnknownOutcome && !st.Status.Terminal()
	for _, e := range st.Journal {
		if e.Stage == state.StageStarted && !(e.TaskID != "" && polled) {
			es = append(es, e)
		}
	}
	sort.Slice(es, func(i, j int) bool { return es[i].Seq < es[j].Seq })
	return es
}

// Resolve writes an operator-verified result into a call whose outcome is
// unknown. It is refused for any entry that is not started.
func Resolve(st *state.RunState, callID, output string, success bool, by string, now time.Time) (state.Delta, error) {
	e := st.Entry(callID)
	if e == nil {
		return state.Delta{}, refuse(CodeUnknownCall, "run %s has no call %s; nothing was written", st.ID, callID)
	}
	if e.Stage != state.StageStarted {
		return state.Delta{}, refuse(CodeNotStarted, "call %s of run %s has no unknown outcome to resolve (stage %s); nothing was written", callID, st.ID, e.Stage)
	}
	t := now.UTC()
	e.Stage = state.StageCompleted
	e.Result = output
	e.Success = success
	e.Outcome = "resolved"
	e.ResolvedBy = by
	e.CompletedAt = &t
	return state.Delta{Journal: []state.JournalEntry{*e}}, nil
}

// BudgetFlags are the budgets given on a command line; nil means omitted.
type BudgetFlags struct {
	MaxTurns, MaxToolCalls, MaxTokens *int
	// MaxCost may be raised by a resume (never lowered): see
	// raiseMaxCost.
	MaxCost *float64
}

// ResumeRequest is what a resuming process found: it must match the run.
type ResumeRequest struct {
	HasTask    bool
	SourceHash string
	Agent      string
	Provider   state.ProviderIdentity
	Budgets    BudgetFlags
	WorkDir    string
	// MCPServers are the servers as connected by this process.
	MCPServers []state.MCPServer
	// Policy is the policy this process was given (--policy), or nil.
	Policy *state.PolicyRef
}

// CheckResume applies docs/reference/runtime.md#resume-checks before anything is written and
// names what differs. Terminal runs and passed deadlines are the caller's
// to handle after this passes.
func CheckResume(st *state.RunState, req ResumeRequest) error {
	c := st.Config
	if req.HasTask {
		return refuse(CodeTaskWithResume, "--resume continues run %s with its own task; a new task needs a new run (drop --resume)", st.ID)
	}
	if req.Agent != c.Agent {
		return refuse(CodeAgentChanged, "run %s belongs to agent %s, not %s", st.ID, c.Agent, req.Agent)
	}
	if req.SourceHash != c.SourceHash {
		return refuse(CodeSourceChanged, "the program changed since run %s started (source hash %s, run has %s); restore the original sources or start a new run", st.ID, req.SourceHash, c.SourceHash)
	}
	if err := samePolicy(st, c.Policy, req.Policy); err != nil {
		return err
	}
	if req.Provider != c.Provider {
		return refuse(CodeProviderChanged, "run %s uses provider %s; this resume resolves to %s", st.ID, describeProvider(c.Provider), describeProvider(req.Provider))
	}
	check := func(flag string, given *int, have int) error {
		if given != nil && *given != have {
			return refuse(CodeBudgetsChanged, "run %s has %s %d, this resume gives %d; a resume cannot change budgets (omit the flag to keep the run's)", st.ID, flag, have, *given)
		}
		return nil
	}
	if err := check("--max-turns", req.Budgets.MaxTurns, c.Budgets.MaxTurns); err != nil {
		return err
	}
	if err := check("--max-tool-calls", req.Budgets.MaxToolCalls, c.Budgets.MaxToolCalls); err != nil {
		return err
	}
	if err := check("--max-tokens", req.Budgets.MaxTokens, c.Budgets.MaxTokens); err != nil {
		return err
	}
	if err := checkMaxCost(st, req.Budgets.MaxCost); err != nil {
		return err
	}
	if !sameServers(req.MCPServers, c.MCPServers) {
		return refuse(CodeToolsChanged, "the tools of an MCP server changed since run %s started (%s); a resume needs the same tools", st.ID, describeServers(c.MCPServers, req.MCPServers))
	}
	if req.WorkDir != c.WorkDir {
		return refuse(CodeWorkDirChanged, "run %s works in %s; resume it from that directory (this one is %s)", st.ID, c.WorkDir, req.WorkDir)
	}
	return nil
}

// samePolicy refuses a resume under another policy than the run's: the
// rules decided its earlier calls, and will decide its next ones.
func samePolicy(st *state.RunState, had, given *state.PolicyRef) error {
	switch {
	case had == nil && given == nil:
		return nil
	case had == nil:
		return refuse(CodePolicyChanged, "run %s was started without a policy; a resume cannot add one (drop --policy and NEXA_POLICY, or start a new run)", st.ID)
	case given == nil:
		return refuse(CodePolicyChanged, "run %s was started under policy %s (%s); resume it with --policy naming that policy", st.ID, had.Path, had.Hash)
	case had.Hash != given.Hash:
		return refuse(CodePolicyChanged, "the policy changed since run %s started (%s has %s, the run has %s from %s); restore the original policy or start a new run", st.ID, given.Path, given.Hash, had.Hash, had.Path)
	}
	return nil
}

func describeProvider(p state.ProviderIdentity) string {
	s := p.Kind + " model " + p.Model
	if p.BaseURL != "" {
		s += " at " + p.BaseURL
	}
	if p.Digest != "" {
		s += " (" + p.Digest + ")"
	}
	return s
}

// ExpireDeadline marks a run whose deadline has passed as timed_out; the
// caller saves it. It reports whether it did.
func ExpireDeadline(st *state.RunState, now time.Time) bool {
	dl := st.Config.Deadline
	if dl == nil || now.Before(*dl) {
		return false
	}
	st.Status = state.StatusTimedOut
	st.Error = &state.RunError{Code: CodeDeadlineExceeded, Message: fmt.Sprintf("the run's deadline %s passed; nothing was executed", dl.UTC().Format(time.RFC3339Nano))}
	return true
}

func sameServers(a, b []state.MCPServer) bool {
	if len(a) != len(b) {
		return false
	}
	m := map[string]string{}
	for _, s := range a {
		m[s.Spec] = s.SchemaHash
	}
	for _, s := range b {
		if h, ok := m[s.Spec]; !ok || h != s.SchemaHash {
			return false
		}
	}
	return true
}

func describeServers(had, now []state.MCPServer) string {
	m := map[string]string{}
	for _, s := range now {
		m[s.Spec] = s.SchemaHash
	}
	var diffs []string
	for _, s := range had {
		h, ok := m[s.Spec]
		switch {
		case !ok:
			diffs = append(diffs, s.Spec+" is no longer connected")
		case h != s.SchemaHash:
			diffs = append(diffs, s.Spec+" offers different tools")
		}
		delete(m, s.Spec)
	}
	for spec := range m {
		diffs = append(diffs, spec+" is new")
	}
	sort.Strings(diffs)
	return strings.Join(diffs, "; ")
}

// sameJSON reports whether a and b are the same JSON value, whatever their
// spacing and member order.
func sameJSON(a, b json.RawMessage) bool {
	norm := func(r json.RawMessage) ([]byte, bool) {
		var v any
		dec := json.NewDecoder(bytes.NewReader(r))
		dec.UseNumber()
		if dec.Decode(&v) != nil || dec.More() {
			return nil, false
		}
		out, err := json.Marshal(v)
		return out, err == nil
	}
	na, oka := norm(a)
	nb, okb := norm(b)
	return oka && okb && bytes.Equal(na, nb)
}
