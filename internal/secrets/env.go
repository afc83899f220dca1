package secrets

import (
	"net/url"
	"strings"
	"unicode"
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
	start, end, ok := URLPasswordSpan(s)
	if !ok {
		return nil
	}
	written := s[start:end]
	out := []string{written}
	if decoded, err := url.PathUnescape(written); err == nil && decoded != written {
		out = append(out, decoded)
	}
	return out
}

// URLPasswordSpan locates the password of a URL with credentials in s
// (postgres://user:pass@host/db): s[start:end] is the password as written.
// ok is false when s holds no such URL. It lets a caller blank the password
// where it sits (the process's environment block) without parsing the URL
// itself.
func URLPasswordSpan(s string) (start, end int, ok bool) {
	lead := len(s) - len(strings.TrimLeftFunc(s, unicode.IsSpace))
	trimmed := strings.TrimSpace(s)
	scheme, rest, found := strings.Cut(trimmed, "://")
	if !found {
		return 0, 0, false
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	at := strings.LastIndexByte(rest, '@')
	if at < 0 {
		return 0, 0, false
	}
	colon := strings.IndexByte(rest[:at], ':')
	if colon < 0 || colon+1 == at {
		return 0, 0, false
	}
	start = lead + len(scheme) + len("://") + colon + 1
	return start, lead + len(scheme) + len("://") + at, true
}
