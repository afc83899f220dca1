package cli

import (
	"fmt"
	"strings"

	"github.com/nexa-run/nexa/internal/compile"
	"github.com/nexa-run/nexa/internal/secrets"
)

// secretSet is what the CLI knows of secrets: lookups for provider
// configuration, the map handed to tools, and redaction of every known
// secret value from what it prints.
type secretSet struct {
	set        *secrets.Set
	activeName string
	env        map[string]string
	redactor   func(string) string
	extra      []string
}

// loadSecrets reads the program's secrets files (secrets.nxs beside the main
// file and included .nxs files, as the compiler found them) and then
// NEXA_SECRETS, which wins key by key.
func loadSecrets(e *env, prog *compile.Program) (*secretSet, error) {
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
	return &secretSet{set: set, activeName: active, env: set.Env(prog.ActiveConfig), redactor: set.Redactor()}, nil
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

// addSecret registers a value that is not in a secrets file (an API key from
// the environment) to be redacted too.
func (s *secretSet) addSecret(v string) {
	if len(v) >= secrets.MinRedactLen {
		s.extra = append(s.extra, v)
	}
}

// redact replaces every known secret value in text.
func (s *secretSet) redact(text string) string {
	if s == nil {
		return text
	}
	if s.redactor != nil {
		text = s.redactor(text)
	}
	for _, v := range s.extra {
		text = strings.ReplaceAll(text, v, "[REDACTED]")
	}
	return text
}
