package session

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/nexa-run/nexa/internal/ir"
)

func TestToolSecretsNeverHoldAProviderKey(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/secrets.nxs"
	writeFile(t, path, `
API_KEY = "flat-provider-key"
SERPER_API_KEY = "serper-tool-key"
DEEPSEEK_API_KEY = "deepseek-key-in-file"
config default {
    GITHUB_TOKEN = "ghp-tool-token"
    COPY_OF_KEY = "sk-the-model-key"
    NEXA_API_KEY = "nexa-key-in-file"
    OPENAI_API_KEY = "openai-key-in-file"
    anthropic_api_key = "anthropic-key-in-file"
}
`)
	e := Env{Getenv: func(string) string { return "" }, Environ: func() []string {
		return []string{"PATH=/bin", "OTHER_API_KEY=env-other-key", "DATABASE_URL=postgres://u:db-password@h/db"}
	}}
	sec, err := loadSecrets(e, &ir.Program{SecretFiles: []string{path}})
	if err != nil {
		t.Fatal(err)
	}
	sec.setProvider("deepseek", "sk-the-model-key")
	want := map[string]string{"SERPER_API_KEY": "serper-tool-key", "GITHUB_TOKEN": "ghp-tool-token"}
	if got := sec.toolSecrets(); !reflect.DeepEqual(got, want) {
		t.Fatalf("toolSecrets = %v, want %v", got, want)
	}
	if v, ok := sec.lookupToolSecret()("COPY_OF_KEY"); ok || v != "" {
		t.Fatalf("the model key was resolvable for an MCP server")
	}

	// One redactor knows every value: secrets files, the model key,
	// secret-named variables and URL passwords of the environment.
	text := "sk-the-model-key serper-tool-key env-other-key db-password deepseek-key-in-file plain"
	if got := sec.redact(text); got != strings.Repeat("[REDACTED] ", 5)+"plain" {
		t.Fatalf("redact = %q", got)
	}
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}
