package session

import (
	"fmt"
	"strings"

	"github.com/nexa-run/nexa/internal/ir"
	"github.com/nexa-run/nexa/internal/secrets"
	"github.com/nexa-run/nexa/internal/store/postgres"
)

// secretSet is what the CLI knows of secrets: lookups for provider
// configuration, the secrets handed to tools, and the one redactor that
// knows every secret value of the run.
type secretSet struct {
	set        *secrets.Set
	activeName string
	// env is the active view of the secrets files (flat keys, default
	// block, active block), before provider keys are taken out.
	env map[string]string
	// values are every value to redact: the secrets files, the
	// environment's secret-named variables and URL passwords, the
	// provider key, a --store password.
	values   []string
	redactor *secrets.Redactor
	// providerKey and providerPrefix are the run's model key and the
	// upper-cased prefix of a prefixed model ("DEEPSEEK").
	providerKey    string
	providerPrefix string
}

// loadSecrets reads the program's secrets files (secrets.nxs beside the main
// file and included .nxs files, as the compiler found them) and then
// NEXA_SECRETS, which wins key by key.
func loadSecrets(e Env, prog *ir.Program) (*secretSet, error) {
	paths := append([]string{}, prog.SecretFiles...)
	if p := e.getenv("NEXA_SECRETS"); p != "" {
		paths = append(paths, p)
	}
	set, err := secrets.Load(paths...)
	if err != nil {
		return nil, fmt.Errorf("secrets: %w", err)
	}
	active := prog.ActiveConfig
	if active == "" {
		active = secrets.DefaultBlock
	}
	s := &secretSet{set: set, activeName: active, env: set.Env(prog.ActiveConfig)}
	s.values = append(set.Strings(), environSecrets(e)...)
	s.redactor = secrets.NewRedactor(s.values...)
	return s, nil
}

// environSecrets are the values of the environment that must never be
// shown: every secret-named variable (used by this run or not) and every
// URL password.
func environSecrets(e Env) []string {
	if e.Environ == nil {
		return nil
	}
	return secrets.EnvValues(e.Environ())
}

func (s *secretSet) block(name, key string) string {
	v, _ := s.set.Lookup(name, key)
	return v
}

func (s *secretSet) active(key string) string { return s.block(s.activeName, key) }

func (s *secretSet) flat(key string) string { return s.block("", key) }

// activeMapValue reads KEY.sub of the active block (MODEL_NAME.strong).
func (s *secretSet) activeMapValue(key, sub string) string {
	return s.block(s.activeName, key+"."+sub)
}

// addSecret registers values that are not in a secrets file nor a
// secret-named variable (a --store URL password) to be redacted too.
func (s *secretSet) addSecret(vs ...string) {
	var add []string
	for _, v := range vs {
		if len(v) >= secrets.MinRedactLen {
			add = append(add, v)
		}
	}
	if len(add) == 0 {
		return
	}
	s.values = append(s.values, add...)
	s.redactor = secrets.NewRedactor(s.values...)
}

// setProvider records the run's provider key (redacted everywhere and
// withheld from tools) and the prefix of a prefixed model, whose
// PREFIX_API_KEY tools never see either.
func (s *secretSet) setProvider(prefix, key string) {
	s.providerKey = key
	s.providerPrefix = strings.ToUpper(prefix)
	s.addSecret(key)
}

// redact replaces every known secret value in text.
func (s *secretSet) redact(text string) string {
	if s == nil {
		return text
	}
	return s.redactor.Redact(text)
}

// isProviderKeyName reports whether a secrets-file key names a model
// provider's key: API_KEY and NEXA_API_KEY (nexa's own), OPENAI_API_KEY and
// ANTHROPIC_API_KEY (the two protocols), and PREFIX_API_KEY of the run's
// prefixed model.
func (s *secretSet) isProviderKeyName(name string) bool {
	switch up := strings.ToUpper(name); up {
	case "API_KEY", "NEXA_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY":
		return true
	default:
		return s.providerPrefix != "" && up == s.providerPrefix+"_API_KEY"
	}
}

// toolSecrets are the secrets tools may read (nexa_secrets in Python, $NAME
// in an MCP server's VAR=value assignments): the active view of the
// secrets files without provider keys, by name (isProviderKeyName) or by
// value (whatever name holds the run's provider key).
func (s *secretSet) toolSecrets() map[string]string {
	out := map[string]string{}
	if s == nil {
		return out
	}
	for k, v := range s.env {
		if s.isProviderKeyName(k) || (s.providerKey != "" && v == s.providerKey) {
			continue
		}
		out[k] = v
	}
	return out
}

// lookupToolSecret resolves a $NAME of an MCP server's spec from
// toolSecrets.
func (s *secretSet) lookupToolSecret() func(string) (string, bool) {
	ts := s.toolSecrets()
	return func(name string) (string, bool) {
		v, ok := ts[name]
		return v, ok
	}
}

// ServeRedactor is the redactor of nexa serve: the values of secret-named
// environment variables, NEXA_SECRETS, the store's password, and the
// server's own token and webhook secret (extra).
func ServeRedactor(e Env, storeFlag string, extra ...string) (func(string) string, error) {
	values := append(environSecrets(e), storeSecrets(e, storeFlag)...)
	values = append(values, extra...)
	if p := e.getenv("NEXA_SECRETS"); p != "" {
		set, err := secrets.Load(p)
		if err != nil {
			return nil, fmt.Errorf("NEXA_SECRETS: %w", err)
		}
		values = append(values, set.Strings()...)
	}
	red := secrets.NewRedactor(values...)
	return red.Redact, nil
}

// storeSecrets are the passwords of the store a command names: in the
// --store flag as given, and in the URL it resolves to (NEXA_STORE).
func storeSecrets(e Env, storeFlag string) []string {
	return append(secrets.URLPasswords(storeFlag), postgres.Password(StoreName(e, storeFlag)))
}
