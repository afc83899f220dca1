package session

import (
	"fmt"
	"strings"
	"time"

	"github.com/nexa-run/nexa/internal/duration"
	"github.com/nexa-run/nexa/internal/ir"
	"github.com/nexa-run/nexa/internal/provider"
	"github.com/nexa-run/nexa/internal/state"
)

// resolvedProvider is the provider of a run and the identity compared on
// resume.
type resolvedProvider struct {
	provider provider.Provider
	identity state.ProviderIdentity
}

// ProviderOptions are the choices of a model provider a command was given
// (--provider, --model, --base-url); empty fields fall back to the
// environment, the agent and the secrets.
type ProviderOptions struct {
	// Provider is openai, anthropic or script:PATH.
	Provider string
	Model    string
	BaseURL  string
	// Resume: the provider continues an existing run (a script then
	// checks its replies from the first request of this process).
	Resume bool
	// IdentifyOnly: the provider is only identified for the run's record,
	// never called in this process (nexa agent --detach: a worker calls
	// it, with its own key), so a missing key is no error here.
	IdentifyOnly bool
}

// resolveProvider applies docs/reference/runtime.md#provider-resolution: the provider kind, the
// model, then endpoint and key, first found wins. It never puts a key in an
// error message.
func resolveProvider(e Env, f ProviderOptions, prog *ir.Program, agent *ir.Agent, sec *secretSet, onRetry func(int, error, time.Duration)) (*resolvedProvider, error) {
	timeouts, err := providerTimeouts(e)
	if err != nil {
		return nil, err
	}
	kind := f.Provider
	if kind == "" {
		kind = e.getenv("NEXA_PROVIDER")
	}
	if strings.HasPrefix(kind, "script:") {
		path := strings.TrimPrefix(kind, "script:")
		if path == "" {
			return nil, fmt.Errorf("--provider script:PATH needs the path of a script file")
		}
		check := provider.CheckEveryTurn
		if f.Resume {
			// the turns before the run's next request have answered already
			check = provider.CheckFromFirstRequest
		}
		s, err := provider.NewScript(path, check)
		if err != nil {
			return nil, err
		}
		return &resolvedProvider{provider: withPolicies(s, timeouts, agent, onRetry), identity: s.Identity()}, nil
	}

	model := f.Model
	if model == "" {
		model = agent.Model
	}
	if model == "" {
		model = e.getenv("NEXA_MODEL")
	}
	if model == "" {
		model = sec.activeMapValue("MODEL_NAME", "strong")
	}
	if model == "" {
		return nil, fmt.Errorf("no model configured for agent %s: pass --model NAME, set NEXA_MODEL, give the agent a model property, or set MODEL_NAME = { \"strong\": \"…\" } in the active secrets block (or run offline with --provider script:PATH)", agent.Name)
	}
	prefix, name := "", model
	if i := strings.IndexByte(model, '/'); i > 0 {
		prefix, name = model[:i], model[i+1:]
	}
	switch kind {
	case "", "openai":
		if strings.EqualFold(prefix, "anthropic") && kind == "" {
			kind = "anthropic"
		} else {
			kind = "openai"
		}
	case "anthropic":
	default:
		return nil, fmt.Errorf("unknown provider %q: use openai, anthropic or script:PATH", kind)
	}

	baseURL, key := f.BaseURL, ""
	lookup := func(baseVar, keyVar string, get func(string) string) {
		if baseURL == "" {
			baseURL = get(baseVar)
		}
		if key == "" {
			key = get(keyVar)
		}
	}
	lookup("NEXA_BASE_URL", "NEXA_API_KEY", e.getenv)
	if prefix != "" {
		up := strings.ToUpper(prefix)
		inBlock := func(k string) string {
			// A block named after the prefix may spell its keys
			// either way: DEEPSEEK_API_KEY or API_KEY.
			if v := sec.block(prefix, k); v != "" {
				return v
			}
			return sec.block(prefix, strings.TrimPrefix(k, up+"_"))
		}
		lookup(up+"_BASE_URL", up+"_API_KEY", inBlock)
		lookup(up+"_BASE_URL", up+"_API_KEY", sec.flat)
		lookup(up+"_BASE_URL", up+"_API_KEY", e.getenv)
	}
	lookup("BASE_URL", "API_KEY", sec.active)
	var p provider.Provider
	if kind == "anthropic" {
		lookup("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", e.getenv)
		if key == "" && !f.IdentifyOnly && (baseURL == "" || baseURL == provider.DefaultAnthropicBaseURL) {
			return nil, missingKey("Anthropic", "ANTHROPIC_API_KEY", prefix)
		}
		p, err = provider.NewAnthropic(provider.AnthropicConfig{BaseURL: or(baseURL, provider.DefaultAnthropicBaseURL), APIKey: key, Model: name})
	} else {
		lookup("OPENAI_BASE_URL", "OPENAI_API_KEY", e.getenv)
		if key == "" && !f.IdentifyOnly && (baseURL == "" || baseURL == provider.DefaultOpenAIBaseURL) {
			return nil, missingKey("OpenAI", "OPENAI_API_KEY", prefix)
		}
		p, err = provider.NewOpenAI(provider.OpenAIConfig{BaseURL: or(baseURL, provider.DefaultOpenAIBaseURL), APIKey: key, Model: name})
	}
	sec.setProvider(prefix, key)
	if err != nil {
		return nil, err
	}
	return &resolvedProvider{provider: withPolicies(p, timeouts, agent, onRetry), identity: p.Identity()}, nil
}

// missingKey explains how to give a key for a hosted API (local servers,
// reached through a base URL, may do without one).
func missingKey(service, envVar, prefix string) error {
	where := "NEXA_API_KEY or " + envVar
	if prefix != "" {
		up := strings.ToUpper(prefix)
		where = fmt.Sprintf("NEXA_API_KEY, %s_API_KEY (environment, or API_KEY in a `config %s { … }` block of secrets.nxs) or %s", up, prefix, envVar)
	}
	return fmt.Errorf("no API key for the %s API: set %s, or API_KEY in the active block of secrets.nxs; for a local server give its --base-url", service, where)
}

// or returns s, or def when s is empty.
func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// withPolicies bounds each request of p by timeouts, then retries
// transient failures (a timeout included) by the agent's retry policy.
func withPolicies(p provider.Provider, timeouts provider.Timeouts, agent *ir.Agent, onRetry func(int, error, time.Duration)) provider.Provider {
	return provider.WithRetry(provider.WithTimeouts(p, timeouts), retryPolicy(agent, onRetry))
}

// providerTimeouts reads the per-request bounds (docs/providers.md,
// "Timeouts"): NEXA_PROVIDER_TIMEOUT for a whole reply and
// NEXA_PROVIDER_IDLE_TIMEOUT for the silence of a stream, each in seconds
// ("600") or as a duration ("10m"); "0" or "off" turns one off, unset
// keeps its default.
func providerTimeouts(e Env) (provider.Timeouts, error) {
	read := func(name string) (time.Duration, error) {
		v := strings.TrimSpace(e.getenv(name))
		switch v {
		case "":
			return 0, nil
		case "0", "off":
			return -1, nil
		}
		if d, err := duration.Parse(v); err == nil && d > 0 {
			return d, nil
		}
		return 0, fmt.Errorf("%s takes %s (positive), or off, not %q", name, duration.Forms, v)
	}
	var t provider.Timeouts
	var err error
	if t.Request, err = read("NEXA_PROVIDER_TIMEOUT"); err != nil {
		return t, err
	}
	t.Idle, err = read("NEXA_PROVIDER_IDLE_TIMEOUT")
	return t, err
}

// retryPolicy takes the agent's retry setting (default 3 retries).
func retryPolicy(agent *ir.Agent, onRetry func(int, error, time.Duration)) provider.RetryPolicy {
	p := provider.RetryPolicy{OnRetry: onRetry}
	if agent.Retry == 0 {
		p.Attempts = -1
	} else if agent.Retry > 0 {
		p.Attempts = agent.Retry
	}
	return p
}
