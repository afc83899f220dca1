package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/nexa-run/nexa/internal/tool"
	"sort"
	"strings"
	"time"

	"github.com/nexa-run/nexa/internal/ir"
	"github.com/nexa-run/nexa/internal/state"
)

// Who decides a call, and when it stops waiting (docs/runs.md,
// "Approvals"): the program says which tools need a person; policy rules
// the person wrote (--policy) may allow, deny or ask before anyone is
// asked; a pending call may expire. All of it is derived again from the
// program and the policy whenever a run is resumed, so nothing the store
// says about a call that has not run can authorise it.

// MaxCallsPerReply is how many calls of one model reply nexa journals for
// execution; the calls beyond it are refused, answered to the model and
// never run, so one reply cannot start an unbounded batch of work. A
// smaller --max-tool-calls budget still applies on top.
const MaxCallsPerReply = 64

// PolicyPrefix starts the decided_by of a decision made by a policy rule:
// "policy:<rule name>".
const PolicyPrefix = "policy:"

// Rules are the policy rules a person wrote (internal/policy behind
// --policy): they decide calls before a person is asked. The runtime sees
// only this interface, so the engine does not depend on the file format.
type Rules interface {
	// Verdict is the first matching rule's answer for a call of tool
	// (with its risk level and JSON arguments), or the zero RuleVerdict
	// when no rule matches.
	Verdict(tool, risk string, args json.RawMessage) RuleVerdict
	// Ref names the policy for the run's record (path and hash).
	Ref() state.PolicyRef
}

// The decisions of a rule.
const (
	RuleAllow = "allow"
	RuleDeny  = "deny"
	RuleAsk   = "ask"
)

// RuleVerdict is what a rule decided: Decision is RuleAllow, RuleDeny,
// RuleAsk, or "" when no rule matched (the tool's own setting applies).
type RuleVerdict struct {
	Decision string
	Rule     string
	Reason   string
}

// judge derives whether a call of t with args needs a person and what the
// rules say of it. A rule's ask makes any call wait for a person.
func (r *Runner) judge(t *ir.Tool, args json.RawMessage) (bool, RuleVerdict) {
	needs := t.NeedsApproval()
	var v RuleVerdict
	if r.rules != nil {
		v = r.rules.Verdict(t.Name, t.Risk, args)
	}
	if v.Decision == RuleAsk {
		needs = true
	}
	return needs, v
}

// applyApproval sets what the program and the rules say of a call that has
// not started: whether it needs approval, its risk, the rule's decision
// (journaled as a person's, decided_by "policy:<rule>") and, when it waits
// for a person, until when. A decision a person recorded is kept; one a rule
// recorded is replaced by what the rules say now. It reports whether it
// changed e.
func (r *Runner) applyApproval(e *state.JournalEntry, t *ir.Tool, cfg state.Config, now time.Time) bool {
	before := approvalOf(e)
	needs, v := r.judge(t, e.Arguments)
	e.NeedsApproval = needs
	e.Risk = t.Risk
	byRule := strings.HasPrefix(e.DecidedBy, PolicyPrefix)
	if byRule || e.Decision == nil {
		decided := v.Decision == RuleDeny || (v.Decision == RuleAllow && needs)
		switch {
		case !decided:
			if byRule {
				e.Decision, e.DecidedBy, e.DecidedAt, e.Reason = nil, "", nil, ""
			}
		case e.Decision == nil || e.DecidedBy != PolicyPrefix+v.Rule || *e.Decision != (v.Decision == RuleAllow) || e.Reason != v.Reason:
			ok := v.Decision == RuleAllow
			at := now.UTC()
			e.Decision, e.DecidedBy, e.DecidedAt, e.Reason = &ok, PolicyPrefix+v.Rule, &at, v.Reason
		}
	}
	e.ExpiresAt = nil
	if e.Pending() {
		e.ExpiresAt = expiry(t, cfg, e.CreatedAt)
	}
	return approvalOf(e) != before
}

// approval is what applyApproval may change of an entry, as comparable
// values (times in Unix nanoseconds, 0 when unset).
type approval struct {
	needs              bool
	risk, by, reason   string
	decided, approved  bool
	decidedAt, expires int64
}

func approvalOf(e *state.JournalEntry) approval {
	nanos := func(t *time.Time) int64 {
		if t == nil {
			return 0
		}
		return t.UnixNano()
	}
	a := approval{needs: e.NeedsApproval, risk: e.Risk, by: e.DecidedBy, reason: e.Reason,
		decidedAt: nanos(e.DecidedAt), expires: nanos(e.ExpiresAt)}
	if e.Decision != nil {
		a.decided, a.approved = true, *e.Decision
	}
	return a
}

// expiry is when a call of t journaled at created stops waiting for a
// decision: the shorter of the tool's approval_timeout and the run's
// --approval-timeout, never after the run's deadline; nil when neither
// bounds it (the deadline alone ends the run, and so the wait).
func expiry(t *ir.Tool, cfg state.Config, created time.Time) *time.Time {
	var bound time.Duration
	if t.ApprovalTimeout > 0 {
		bound = time.Duration(t.ApprovalTimeout) * time.Second
	}
	if rt := cfg.ApprovalTimeout.Duration(); rt > 0 && (bound == 0 || rt < bound) {
		bound = rt
	}
	if bound == 0 {
		return nil
	}
	at := created.UTC().Add(bound)
	if dl := cfg.Deadline; dl != nil && dl.Before(at) {
		at = dl.UTC()
	}
	return &at
}

// rederive applies the program and the rules again to every call of st
// that has not started (the store's needs_approval, risk and rule
// decisions are never trusted) and returns the entries it changed.
func (r *Runner) rederive(st *state.RunState, now time.Time) []state.JournalEntry {
	var changed []state.JournalEntry
	for i := range st.Journal {
		e := &st.Journal[i]
		if e.Stage != state.StageNotStarted || e.Stub {
			continue
		}
		t := r.exposed[e.Tool]
		if t == nil {
			// Journaled for a tool the agent no longer offers: nothing
			// can say it is safe, so a person decides.
			byRule := strings.HasPrefix(e.DecidedBy, PolicyPrefix)
			if byRule {
				e.Decision, e.DecidedBy, e.DecidedAt, e.Reason = nil, "", nil, ""
			}
			if byRule || !e.NeedsApproval {
				e.NeedsApproval = true
				changed = append(changed, *e)
			}
			continue
		}
		if r.applyApproval(e, t, st.Config, now) {
			changed = append(changed, *e)
		}
	}
	return changed
}

// ExpireApprovals completes every pending call of st whose wait for a
// decision ran out at now with outcome "expired" (never "denied": nobody
// refused it) and returns the entries it changed, for the caller to save
// when it holds the run, or to show. The completion time is the stored
// expiry, so any process that evaluates it records the same entry.
func ExpireApprovals(st *state.RunState, now time.Time) []state.JournalEntry {
	var changed []state.JournalEntry
	for i := range st.Journal {
		e := &st.Journal[i]
		if !e.Expired(now) {
			continue
		}
		at := e.ExpiresAt.UTC()
		e.Stage = state.StageCompleted
		e.Outcome = "expired"
		e.Success = false
		e.Result = fmt.Sprintf("the request for approval expired at %s without a decision; the call was not executed", at.Format(time.RFC3339))
		e.CompletedAt = &at
		st.Usage.RefusedCalls++
		changed = append(changed, *e)
	}
	return changed
}

// DeniedCall is a call a run did not execute because a person or a rule
// refused it, or because nobody decided in time: the final object lists
// them so that a pipeline never takes a run whose work was refused for one
// whose work was done.
type DeniedCall struct {
	CallID  string `json:"call_id"`
	Tool    string `json:"tool"`
	Outcome string `json:"outcome"` // denied or expired
	// DecidedBy is who refused it: a person, or "policy:<rule>"; empty
	// for an expired call.
	DecidedBy string     `json:"decided_by,omitempty"`
	Reason    string     `json:"reason,omitempty"`
	At        *time.Time `json:"at,omitempty"`
}

// DeniedCalls lists the denied and expired calls of st in call order,
// never nil. A run loaded for a drive holds earlier calls as stubs: when
// its count of refused calls says some are among them, the journal is read
// whole from s (nil s: only what st holds).
func DeniedCalls(ctx context.Context, s state.Store, st *state.RunState) []DeniedCall {
	out := deniedIn(st)
	if len(out) < st.Usage.RefusedCalls && s != nil {
		if whole, err := s.Load(ctx, st.ID); err == nil {
			out = deniedIn(whole)
		}
	}
	return out
}

func deniedIn(st *state.RunState) []DeniedCall {
	var es []*state.JournalEntry
	for i := range st.Journal {
		e := &st.Journal[i]
		if e.Stage == state.StageCompleted && (e.Outcome == "denied" || e.Outcome == "expired") {
			es = append(es, e)
		}
	}
	sort.Slice(es, func(i, j int) bool { return es[i].Seq < es[j].Seq })
	out := make([]DeniedCall, 0, len(es))
	for _, e := range es {
		dc := DeniedCall{CallID: e.CallID, Tool: e.Tool, Outcome: e.Outcome, Reason: e.Reason, At: e.CompletedAt}
		if e.Outcome == "denied" {
			dc.DecidedBy = e.DecidedBy
		} else {
			dc.Reason = "no decision before the approval timeout"
		}
		out = append(out, dc)
	}
	return out
}

// EditChecker checks arguments a person approves a call with instead of
// the model's, exactly as the model's were checked: the tool's schema,
// the executor's pre-approval checks (std.fs confinement) and the policy's
// deny rules. It returns the arguments as they will run (defaults filled).
type EditChecker interface {
	CheckEdit(e *state.JournalEntry, workDir string, args json.RawMessage) (json.RawMessage, error)
}

// MaxEditBytes bounds edited arguments, wherever they come from.
const MaxEditBytes = 1 << 20

// CheckEdit implements EditChecker for the runner's program, agent,
// executors and rules. Its errors are refusals worded for the person.
func (r *Runner) CheckEdit(e *state.JournalEntry, workDir string, args json.RawMessage) (json.RawMessage, error) {
	if len(args) > MaxEditBytes {
		return nil, refuse(CodeInvalidEdit, "the edited arguments of call %s are %d bytes; at most %d are accepted", e.CallID, len(args), MaxEditBytes)
	}
	t := r.exposed[e.Tool]
	if t == nil {
		return nil, refuse(CodeInvalidEdit, "tool %s of call %s is not offered by the agent now; its arguments cannot be checked", e.Tool, e.CallID)
	}
	norm, why := r.checkCall(state.ToolCall{ID: e.CallID, Name: e.Tool, Arguments: string(args)})
	if why != "" {
		return nil, refuse(CodeInvalidEdit, "the edited arguments of call %s were not recorded: %s", e.CallID, strings.TrimPrefix(why, "error: "))
	}
	if pc, ok := r.executors[t.Body.Kind].(tool.Prechecker); ok {
		if err := pc.Precheck(tool.Invocation{RunID: "", CallID: e.CallID, Tool: t, Arguments: norm, WorkDir: workDir}); err != nil {
			return nil, refuse(CodeInvalidEdit, "the edited arguments of call %s were not recorded: %s would refuse them: %v", e.CallID, t.Name, err)
		}
	}
	if _, v := r.judge(t, norm); v.Decision == RuleDeny {
		return nil, refuse(CodeInvalidEdit, "the edited arguments of call %s were not recorded: policy rule %s denies them: %s", e.CallID, v.Rule, v.Reason)
	}
	return norm, nil
}

// editNote is what the model reads before the result of a call a person
// approved with other arguments than it proposed.
func editNote(e *state.JournalEntry) string {
	who := "a person"
	if e.EditedBy != "" {
		who = e.EditedBy
	}
	var compact bytes.Buffer
	if json.Compact(&compact, e.ApprovedArguments) != nil {
		compact.Reset()
		compact.Write(e.ApprovedArguments)
	}
	return fmt.Sprintf("note: %s changed the arguments of this call before approving it; it ran with %s\n", who, compact.String())
}
