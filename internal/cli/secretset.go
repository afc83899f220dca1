package cli

import (
	"strings"

	"github.com/nexa-run/nexa/internal/compile"
)

// secretSet is what the CLI knows of secrets: lookups for provider
// configuration, the map handed to tools, and redaction of every known
// secret value from what it prints.
type secretSet struct {
	activeName string
	blocks     map[string]map[string]string
	flatVals   map[string]string
	maps       map[string]map[string]map[string]string // block → key → map value
	env        map[string]string
	values     []string
}

// loadSecrets reads the program's secrets files and NEXA_SECRETS.
func loadSecrets(e *env, prog *compile.Program) (*secretSet, error) {
	s := &secretSet{activeName: prog.ActiveConfig, blocks: map[string]map[string]string{}, flatVals: map[string]string{}, env: map[string]string{}}
	return s, nil
}

func (s *secretSet) block(name, key string) string {
	if b := s.blocks[strings.ToLower(name)]; b != nil {
		return b[key]
	}
	return ""
}

func (s *secretSet) active(key string) string { return s.block(s.activeName, key) }

func (s *secretSet) flat(key string) string { return s.flatVals[key] }

func (s *secretSet) activeMapValue(key, sub string) string {
	if m := s.maps[strings.ToLower(s.activeName)]; m != nil {
		return m[key][sub]
	}
	return ""
}

// addSecret registers a value (such as an API key from the environment) to
// be redacted from output.
func (s *secretSet) addSecret(v string) {
	if len(v) >= 4 {
		s.values = append(s.values, v)
	}
}

// redact replaces every known secret value in text.
func (s *secretSet) redact(text string) string {
	if s == nil {
		return text
	}
	for _, v := range s.values {
		text = strings.ReplaceAll(text, v, "[REDACTED]")
	}
	return text
}
