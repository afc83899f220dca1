package secrets

import (
	"net/url"
	"strings"
)

// secretSuffixes end the names of environment variables that hold
// credentials by convention: provider keys (OPENAI_API_KEY,
// DEEPSEEK_API_KEY), tokens (GITHUB_TOKEN), passwords (PGPASSWORD).
var secretSuffixes = []string{"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIALS", "APIKEY"}

// notSecret are names with a secret-looking suffix that nexa itself sets
// and that carry nothing secret.
var notSecret = map[string]bool{"NEXA_IDEMPOTENCY_KEY": true}

// IsSecretName reports whether an environment variable's name says it
// holds a credential (case-insensitive suffix KEY, TOKEN, SECRET,
// PASSWORD, PASSWD, PASSPHRASE or CREDENTIALS). Such variables never reach
// a tool, and their values are redacted wherever nexa shows text, whether
// or not this run uses them.
func IsSecretName(name string) bool {
	up := strings.ToUpper(name)
	if notSecret[up] {
		return false
	}
	for _, s := range secretSuffixes {
		if strings.HasSuffix(up, s) {
			return true
		}
	}
	return false
}

// EnvValues returns what an environment (KEY=VALUE entries, as from
// os.Environ) holds that must be redacted: the value of every variable
// named like a secret (IsSecretName) and the password of every URL value
// (DATABASE_URL=postgres://user:pass@host/db, a proxy with credentials).
func EnvValues(environ []string) []string {
	var out []string
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || v == "" {
			continue
		}
		if IsSecretName(k) {
			out = append(out, v)
		}
		out = append(out, URLPasswords(v)...)
	}
	return out
}

// URLPasswords returns the password of a URL with credentials
// (postgres://user:pass@host/db) as written and, when it differs,
// percent-decoded; nil when s holds no such URL.
func URLPasswords(s string) []string {
	_, rest, ok := strings.Cut(strings.TrimSpace(s), "://")
	if !ok {
		return nil
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	at := strings.LastIndexByte(rest, '@')
	if at < 0 {
		return nil
	}
	_, written, ok := strings.Cut(rest[:at], ":")
	if !ok || written == "" {
		return nil
	}
	out := []string{written}
	if decoded, err := url.PathUnescape(written); err == nil && decoded != written {
		out = append(out, decoded)
	}
	return out
}
