// Package duration reads the durations people write to nexa — the
// --timeout and --older-than flags, the NEXA_*_TIMEOUT variables and the
// duration arguments of std.time tools — with one grammar, so that a form
// accepted in one place is accepted everywhere (docs/reference/cli.md#durations).
//
// The grammar: an optional sign, then either a bare number, which counts
// seconds ("900", "1.5"), or one or more parts NUMBER UNIT, optionally
// separated by spaces or commas ("15m", "1h30m", "2d", "1w 3d",
// "90 minutes"). Units: ns, us (µs), ms, s (sec, second…), m (min,
// minute…), h (hr, hour…), d (day…, 24 hours exactly) and w (week…, 7
// days), in any letter case. Every Go duration (time.ParseDuration) is
// accepted with its meaning. Callers decide which signs and zero they
// accept.
package duration

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// units are the accepted units, in nanoseconds.
var units = map[string]float64{
	"ns": 1, "us": 1e3, "µs": 1e3, "μs": 1e3, "ms": 1e6,
	"s": 1e9, "sec": 1e9, "secs": 1e9, "second": 1e9, "seconds": 1e9,
	"m": 60e9, "min": 60e9, "mins": 60e9, "minute": 60e9, "minutes": 60e9,
	"h": 3600e9, "hr": 3600e9, "hrs": 3600e9, "hour": 3600e9, "hours": 3600e9,
	"d": 86400e9, "day": 86400e9, "days": 86400e9,
	"w": 604800e9, "week": 604800e9, "weeks": 604800e9,
}

// Forms is the short description of the grammar that error messages give.
const Forms = "seconds (900) or a duration such as 15m, 1h30m, 2d or 1w"

// Parse reads s. Its errors say what was not understood and show Forms.
func Parse(s string) (time.Duration, error) {
	orig := s
	bad := fmt.Errorf("cannot read duration %q; write %s", orig, Forms)
	s = strings.TrimSpace(s)
	sign := 1.0
	if s != "" && (s[0] == '-' || s[0] == '+') {
		if s[0] == '-' {
			sign = -1
		}
		s = strings.TrimSpace(s[1:])
	}
	if s == "" {
		return 0, bad
	}
	total := 0.0
	for first := true; s != ""; first = false {
		i := 0
		for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
			i++
		}
		if i == 0 {
			return 0, bad
		}
		n, err := strconv.ParseFloat(s[:i], 64)
		if err != nil {
			return 0, bad
		}
		s = strings.TrimLeft(s[i:], " ")
		if first && s == "" {
			total = n * 1e9 // a bare number counts seconds
			break
		}
		j := 0
		for j < len(s) {
			r, size := utf8.DecodeRuneInString(s[j:])
			if !unicode.IsLetter(r) {
				break
			}
			j += size
		}
		unit, ok := units[strings.ToLower(s[:j])]
		if !ok {
			return 0, bad
		}
		total += n * unit
		s = strings.TrimLeft(s[j:], " ,")
	}
	total *= sign
	if math.Abs(total) >= math.MaxInt64 {
		return 0, fmt.Errorf("duration %q is too long", orig)
	}
	return time.Duration(total), nil
}
