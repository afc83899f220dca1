package cli

import (
	"strings"
	"testing"
	"time"
)

// TestDurationFlagsShareOneGrammar: --timeout and --older-than read the
// same forms (package duration), each with its own range; the timeout
// variables are read the same way (package session's test).
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
	for _, f := range forms {
		if d, err := parseTimeout(f.in); err != nil || d != f.want {
			t.Errorf("--timeout %q = %v, %v; want %v", f.in, d, err, f.want)
		}
		if d, err := parseAge(f.in); err != nil || d != f.want {
			t.Errorf("--older-than %q = %v, %v; want %v", f.in, d, err, f.want)
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
}
