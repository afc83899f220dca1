// Package policy reads policy files — TOML lists of rules that allow, deny
// or send to a person the tool calls of a run — and decides calls by them.
//
// A policy is checked completely when it is read (unknown keys, bad
// patterns and impossible ranges are errors with their line), so that a
// typo cannot silently switch a rule off. Deciding is then pure: the same
// policy and call always give the same verdict, from any goroutine.
package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
)

// Decision is what a rule says about a call.
type Decision string

// The three decisions a rule can make.
const (
	// Allow runs the call without asking a person.
	Allow Decision = "allow"
	// Deny refuses the call and tells the model the rule's reason.
	Deny Decision = "deny"
	// Ask sends the call to a person, as if the tool required approval.
	Ask Decision = "ask"
)

// MaxSize is the largest policy file nexa reads (1 MiB); a policy is a
// short list of rules, and a bound keeps a wrong path such as /dev/zero
// from filling memory.
const MaxSize = 1 << 20

// Policy is a checked policy file, ready to decide calls. It never changes
// after Load or Parse, so one Policy may decide calls concurrently.
type Policy struct {
	path          string
	hash          string
	allowCritical bool
	rules         []*rule
}

// Hash identifies the policy's content: "sha256:" + hex of the file's bytes.
// A run stores it so that a resume can refuse a different policy.
func (p *Policy) Hash() string {
	if p == nil {
		return ""
	}
	return p.hash
}

// Path is the file it was loaded from ("" for Parse), for messages.
func (p *Policy) Path() string {
	if p == nil {
		return ""
	}
	return p.path
}

// Rules is the number of rules, for summaries such as `nexa policy check`.
func (p *Policy) Rules() int {
	if p == nil {
		return 0
	}
	return len(p.rules)
}

// AllowCritical reports whether the file says, at its top level, that its
// allow rules may allow critical tools; without it they only ask.
func (p *Policy) AllowCritical() bool { return p != nil && p.allowCritical }

// Call is what a rule is matched against: one tool call proposed by the
// model.
type Call struct {
	// Tool is the tool's name as the model called it.
	Tool string
	// Risk is the tool's risk_level: low, medium, high or critical.
	Risk string
	// Args are the call's arguments, a JSON object.
	Args json.RawMessage
}

// Verdict is the first matching rule's answer; Decision "" means no rule
// matched and the tool's own setting applies.
type Verdict struct {
	Decision Decision
	// Rule is the deciding rule's name (journaled as "policy:<name>").
	Rule string
	// Reason is the rule's reason; for a denial, what the model is told.
	Reason string
	// Capped is set when an allow rule matched a critical tool in a policy
	// without allow_critical: the Decision is then Ask.
	Capped bool
	// Why is one human sentence saying which conditions matched, for
	// explain and logs. It quotes the policy, never the call's arguments.
	Why string
}

// Decide returns the verdict for c: the first rule, in file order, whose
// conditions all hold. A nil *Policy returns the zero Verdict.
//
// When a rule that matches the tool and risk needs the arguments and they
// are not one JSON object (or repeat a name), no rule decides: a later,
// broader allow rule must not overrule a deny rule that could not look.
func (p *Policy) Decide(c Call) Verdict {
	if p == nil {
		return Verdict{}
	}
	var (
		args    any
		argsErr error
		parsed  bool
	)
	for _, r := range p.rules {
		toolWhy, ok := r.matchTool(c.Tool)
		if !ok {
			continue
		}
		riskWhy, ok := r.matchRisk(c.Risk)
		if !ok {
			continue
		}
		parts := []string{toolWhy}
		if riskWhy != "" {
			parts = append(parts, riskWhy)
		}
		if len(r.conds) > 0 {
			if !parsed {
				args, argsErr = decodeArgs(c.Args)
				parsed = true
			}
			if argsErr != nil {
				return Verdict{Why: fmt.Sprintf("rule %s looks at the arguments, which cannot be read (%v), so no rule decides and the tool's own setting applies.", r.name, argsErr)}
			}
			matched := true
			for _, cd := range r.conds {
				why, ok := cd.match(args)
				if !ok {
					matched = false
					break
				}
				parts = append(parts, why)
			}
			if !matched {
				continue
			}
		}
		v := Verdict{Decision: r.decision, Rule: r.name, Reason: r.reason}
		why := fmt.Sprintf("rule %s matched: %s", r.name, strings.Join(parts, ", "))
		if r.decision == Allow && c.Risk == "critical" && !p.allowCritical {
			v.Decision, v.Capped = Ask, true
			why += "; but the tool is critical and the policy does not set allow_critical = true at its top level, so a person decides instead"
		}
		v.Why = why + "."
		return v
	}
	return Verdict{Why: "no rule matches, so the tool's own setting applies."}
}

// hashOf is the content hash of a policy file.
func hashOf(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// CheckArgs reports whether raw are arguments Decide can read: one JSON
// object naming no member twice (empty means {}). `nexa policy explain`
// uses it so that a typo in its ARGS_JSON is an error, not "no match".
func CheckArgs(raw json.RawMessage) error {
	_, err := decodeArgs(raw)
	return err
}

// Risks are the risk levels a tool can have, lowest first.
func Risks() []string { return append([]string(nil), risks...) }
