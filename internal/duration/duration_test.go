package duration

import (
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	ok := []struct {
		in   string
		want time.Duration
	}{
		{"900", 900 * time.Second},
		{"1.5", 1500 * time.Millisecond},
		{"0", 0},
		{"15m", 15 * time.Minute},
		{"1h30m", 90 * time.Minute},
		{"1.5h", 90 * time.Minute},
		{"300ms", 300 * time.Millisecond},
		{"2µs", 2 * time.Microsecond},
		{"30d", 30 * 24 * time.Hour},
		{"1w 3d", 10 * 24 * time.Hour},
		{"1 week, 2 days", 9 * 24 * time.Hour},
		{"90 minutes", 90 * time.Minute},
		{"2H", 2 * time.Hour},
		{"-45s", -45 * time.Second},
		{"+5m", 5 * time.Minute},
		{" 72h ", 72 * time.Hour},
	}
	for _, c := range ok {
		got, err := Parse(c.in)
		if err != nil || got != c.want {
			t.Errorf("Parse(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"", "-", "soon", "15 x", "m5", "1h30", "5m3", "1..5s", "10 parsecs"} {
		_, err := Parse(in)
		if err == nil || !strings.Contains(err.Error(), "cannot read duration") || !strings.Contains(err.Error(), Forms) {
			t.Errorf("Parse(%q): err = %v, want a message naming the forms", in, err)
		}
	}
	if _, err := Parse("9999999w"); err == nil || !strings.Contains(err.Error(), "too long") {
		t.Errorf("Parse(huge): %v", err)
	}
}

// TestGoDurations: every duration Go itself writes is read with its value.
func TestGoDurations(t *testing.T) {
	for _, d := range []time.Duration{time.Nanosecond, 1500 * time.Microsecond, 61 * time.Second, 26*time.Hour + 3*time.Minute + 4*time.Second + 5*time.Millisecond, -3 * time.Minute} {
		got, err := Parse(d.String())
		if err != nil || got != d {
			t.Errorf("Parse(%q) = %v, %v", d.String(), got, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"900", "1h30m", "1w 3d", "-2d", "90 minutes"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { _, _ = Parse(s) })
}
