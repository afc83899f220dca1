package cli

import (
	"strings"
	"testing"
	"time"
)

// TestDurationFlagsShareOneGrammar: --timeout, --older-than and the timeout
// variables read the same forms (package duration), each with its own range.
func TestDurationFlagsShareOneGrammar(t *testing.T) {
	forms := []struct {
		in   string
		want time.Duration
	}{
		{"900", 900 * time.Second},
		{"15m", 15 * time.Minute},
		{"1h30m", 90 * time.Minute},
		{"2d", 48 * time.Hour},
		{"1w 1d", 8 * 24 * time.Hour},
		{"90 minutes", 90 * time.Minute},
	}
	env := func(name, v string) *env {
		return &env{getenv: func(k string) string {
			if k == name {
				return v
			}
			return ""
		}}
	}
	for _, f := range forms {
		if d, err := parseTimeout(f.in); err != nil || d != f.want {
			t.Errorf("--timeout %q = %v, %v; want %v", f.in, d, err, f.want)
		}
		if d, err := parseAge(f.in); err != nil || d != f.want {
			t.Errorf("--older-than %q = %v, %v; want %v", f.in, d, err, f.want)
		}
		if d, err := mcpConnectTimeout(env("NEXA_MCP_CONNECT_TIMEOUT", f.in)); err != nil || d != f.want {
			t.Errorf("NEXA_MCP_CONNECT_TIMEOUT %q = %v, %v; want %v", f.in, d, err, f.want)
		}
		if to, err := providerTimeouts(env("NEXA_PROVIDER_TIMEOUT", f.in)); err != nil || to.Request != f.want {
			t.Errorf("NEXA_PROVIDER_TIMEOUT %q = %v, %v; want %v", f.in, to.Request, err, f.want)
		}
	}
	// The ranges: a timeout is positive, an age may be zero, neither negative.
	for _, in := range []string{"0", "-5m", "soon", "15 parsecs"} {
		if _, err := parseTimeout(in); err == nil || !strings.Contains(err.Error(), "--timeout takes seconds (900) or a duration such as 15m, 1h30m, 2d or 1w (positive), not ") {
			t.Errorf("--timeout %q: err = %v", in, err)
		}
	}
	if d, err := parseAge("0"); err != nil || d != 0 {
		t.Errorf("--older-than 0 = %v, %v", d, err)
	}
	for _, in := range []string{"-1d", "soon"} {
		if _, err := parseAge(in); err == nil || !strings.Contains(err.Error(), "--older-than takes a duration such as 72h or 30d") {
			t.Errorf("--older-than %q: err = %v", in, err)
		}
	}
	if to, err := providerTimeouts(env("NEXA_PROVIDER_TIMEOUT", "off")); err != nil || to.Request != -1 {
		t.Errorf("NEXA_PROVIDER_TIMEOUT off = %v, %v", to.Request, err)
	}
}
