package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/nexa-run/nexa/internal/engine"
	"github.com/nexa-run/nexa/internal/policy"
	"github.com/nexa-run/nexa/internal/state"
)

// policyRules adapts a policy file (internal/policy) to the rules the
// runtime applies to calls.
type policyRules struct{ p *policy.Policy }

// Verdict implements engine.Rules.
func (r policyRules) Verdict(tool, risk string, args json.RawMessage) engine.RuleVerdict {
	v := r.p.Decide(policy.Call{Tool: tool, Risk: risk, Args: args})
	return engine.RuleVerdict{Decision: string(v.Decision), Rule: v.Rule, Reason: v.Reason}
}

// Ref implements engine.Rules.
func (r policyRules) Ref() state.PolicyRef {
	return state.PolicyRef{Path: r.p.Path(), Hash: r.p.Hash()}
}

// LoadPolicy reads the policy file at path (made absolute, so that the run
// records where it was) as the runtime's rules.
func LoadPolicy(path string) (engine.Rules, error) {
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
