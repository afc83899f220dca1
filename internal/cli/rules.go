package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/nexa-run/nexa/internal/policy"
	"github.com/nexa-run/nexa/internal/runtime"
	"github.com/nexa-run/nexa/internal/runtime/state"
)

// policyRules adapts a policy file (internal/policy) to the rules the
// runtime applies to calls.
type policyRules struct{ p *policy.Policy }

// Verdict implements runtime.Rules.
func (r policyRules) Verdict(tool, risk string, args json.RawMessage) runtime.RuleVerdict {
	v := r.p.Decide(policy.Call{Tool: tool, Risk: risk, Args: args})
	return runtime.RuleVerdict{Decision: string(v.Decision), Rule: v.Rule, Reason: v.Reason}
}

// Ref implements runtime.Rules.
func (r policyRules) Ref() state.PolicyRef {
	return state.PolicyRef{Path: r.p.Path(), Hash: r.p.Hash()}
}

// loadRules reads the policy file at path (made absolute, so that the run
// records where it was) as the runtime's rules.
func loadRules(path string) (runtime.Rules, error) {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	p, err := policy.Load(path)
	var es policy.Errors
	if errors.As(err, &es) && len(es) > 1 {
		// The run's error object names the first; nexa policy check
		// lists them all.
		return nil, fmt.Errorf("%w (and %d more errors: run nexa policy check %s)", es[0], len(es)-1, path)
	}
	if err != nil {
		return nil, err
	}
	return policyRules{p}, nil
}

// policyFlags are the flags a resume of a run under rules must repeat
// (recorded with the run's provider flags, for its resume commands and
// nexa serve --execute, which run in the run's working directory wd): the
// policy's path, relative to wd when the policy is inside it.
func policyFlags(rules runtime.Rules, wd string) []string {
	if rules == nil {
		return nil
	}
	p := rules.Ref().Path
	if rel, err := filepath.Rel(wd, p); err == nil && filepath.IsLocal(rel) {
		p = rel
	}
	return []string{"--policy", p}
}
