package secrets

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

func TestIsSecretName(t *testing.T) {
	for _, name := range []string{"NEXA_API_KEY", "OPENAI_API_KEY", "deepseek_api_key", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY",
		"AWS_SESSION_TOKEN", "PGPASSWORD", "MYSQL_PWD_PASSWD", "GPG_PASSPHRASE", "CLIENT_SECRET", "GOOGLE_APPLICATION_CREDENTIALS", "SERPAPIKEY"} {
		if !IsSecretName(name) {
			t.Errorf("IsSecretName(%s) = false", name)
		}
	}
	for _, name := range []string{"PATH", "HOME", "NEXA_IDEMPOTENCY_KEY", "NEXA_STORE", "KEYBOARD", "TOKENIZERS_PARALLELISM", "LANG"} {
		if IsSecretName(name) {
			t.Errorf("IsSecretName(%s) = true", name)
		}
	}
}

func TestEnvValues(t *testing.T) {
	got := EnvValues([]string{
		"PATH=/bin", "OPENAI_API_KEY=sk-openai", "EMPTY_TOKEN=", "GITHUB_TOKEN=ghp_x",
		"DATABASE_URL=postgres://app:p%40ss@db/app?sslmode=disable", "HTTPS_PROXY=http://u:proxypw@proxy:3128",
		"NEXA_IDEMPOTENCY_KEY=run_1:c1", "NOTE=see http://example.com/@x", "MALFORMED",
	})
	want := []string{"sk-openai", "ghp_x", "p%40ss", "p@ss", "proxypw"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("EnvValues = %q, want %q", got, want)
	}
}

func TestURLPasswords(t *testing.T) {
	cases := map[string][]string{
		"postgres://user:pass@host:5432/db":  {"pass"},
		"postgresql://u:a%2Fb@h/db":          {"a%2Fb", "a/b"},
		"postgres://user@host/db":            nil,
		"postgres://host/db?password=x":      nil,
		"/var/lib/nexa/runs.sqlite3":         nil,
		"":                                   nil,
		"mysql://u:p:with:colons@h/x":        {"p:with:colons"},
		"postgres://u:@host/db":              nil,
		" postgres://u:spaced@host/db?x=@y ": {"spaced"},
	}
	for in, want := range cases {
		if got := URLPasswords(in); !reflect.DeepEqual(got, want) {
			t.Errorf("URLPasswords(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNewRedactorKnowsEveryValue(t *testing.T) {
	r := NewRedactor("sk-canary-1", "sk-canary-1-longer", "abc", "", `q"uote`)
	got := r.Redact(`a sk-canary-1-longer b sk-canary-1 c abc d {"k":"q\"uote"}`)
	want := `a [REDACTED] b [REDACTED] c abc d {"k":"[REDACTED]"}`
	if got != want {
		t.Fatalf("Redact:\n got %s\nwant %s", got, want)
	}
	var nilR *Redactor
	if nilR.Redact("x sk-canary-1") != "x sk-canary-1" || NewRedactor("", "abc").Redact("abc sk-canary-1") != "abc sk-canary-1" {
		t.Fatalf("empty redactors")
	}
}

func TestRedactorWriterForwardsProgressLinesAndNeverASecret(t *testing.T) {
	r := NewRedactor("sk-canary-STREAM")
	var out bytes.Buffer
	w := r.Writer(&out)
	// A carriage-return progress line is forwarded at once.
	_, _ = w.Write([]byte("\rasking the model"))
	_, _ = w.Write([]byte("\r"))
	if !strings.Contains(out.String(), "asking the model") {
		t.Fatalf("progress line held back: %q", out.String())
	}
	// A secret split across writes and ended by \r is still redacted.
	for _, p := range []string{"key sk-can", "ary-STR", "EAM\r", "done"} {
		_, _ = w.Write([]byte(p))
		if strings.Contains(out.String(), "sk-canary-STREAM") {
			t.Fatalf("secret forwarded: %q", out.String())
		}
	}
	_ = w.Close()
	if !strings.HasSuffix(out.String(), "key [REDACTED]\rdone") {
		t.Fatalf("got %q", out.String())
	}
}
