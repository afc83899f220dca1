package builtin

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/nexa-run/nexa/internal/duration"
	"github.com/nexa-run/nexa/internal/runtime"
)

// namedLayouts are the format names accepted besides strftime patterns.
var namedLayouts = map[string]string{
	"rfc3339":     time.RFC3339,
	"rfc3339nano": time.RFC3339Nano,
	"rfc1123":     time.RFC1123,
	"rfc1123z":    time.RFC1123Z,
	"date":        "2006-01-02",
	"time":        "15:04:05",
	"datetime":    "2006-01-02 15:04:05",
}

const formatHelp = "use rfc3339, rfc3339nano, rfc1123, rfc1123z, date, time, datetime, unix, unix_ms, or a strftime pattern such as %Y-%m-%d %H:%M"

// loadZone resolves a time zone argument: an IANA name, UTC, Local, or a
// fixed offset such as +02:00.
func loadZone(name string) (*time.Location, error) {
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "", "utc", "z", "gmt":
		return time.UTC, nil
	case "local":
		return time.Local, nil
	}
	name = strings.TrimSpace(name)
	if name[0] == '+' || name[0] == '-' {
		if off, ok := parseOffset(name); ok {
			return time.FixedZone(name, off), nil
		}
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("unknown time zone %q; use an IANA name such as Europe/Paris, UTC, or an offset such as +02:00", name)
	}
	return loc, nil
}

// parseOffset reads +hh, +hhmm or +hh:mm into seconds east of UTC.
func parseOffset(s string) (int, bool) {
	if len(s) < 3 || (s[0] != '+' && s[0] != '-') {
		return 0, false
	}
	digits := strings.ReplaceAll(s[1:], ":", "")
	if len(digits) != 2 && len(digits) != 4 {
		return 0, false
	}
	for _, r := range digits {
		if r < '0' || r > '9' {
			return 0, false
		}
	}
	h, _ := strconv.Atoi(digits[:2])
	m := 0
	if len(digits) == 4 {
		m, _ = strconv.Atoi(digits[2:])
	}
	if h > 23 || m > 59 {
		return 0, false
	}
	off := h*3600 + m*60
	if s[0] == '-' {
		off = -off
	}
	return off, true
}

// formatTime renders t in a named format or a strftime pattern.
func formatTime(t time.Time, format string) (string, error) {
	f := strings.ToLower(strings.TrimSpace(format))
	if layout, ok := namedLayouts[f]; ok {
		return t.Format(layout), nil
	}
	switch f {
	case "unix":
		return strconv.FormatInt(t.Unix(), 10), nil
	case "unix_ms":
		return strconv.FormatInt(t.UnixMilli(), 10), nil
	}
	if strings.Contains(format, "%") {
		return strftime(t, format)
	}
	return "", fmt.Errorf("unknown format %q; %s", format, formatHelp)
}

// zonedLayouts carry their own offset; localLayouts are read in a zone.
var (
	zonedLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04:05Z0700", "2006-01-02 15:04:05Z07:00", "2006-01-02 15:04:05 -0700", time.RFC1123Z, time.RFC1123, time.RFC850, time.ANSIC}
	localLayouts = []string{"2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02"}
)

// parseTimeInput reads the time forms every std.time tool accepts; times
// without an offset are in loc.
func parseTimeInput(s string, loc *time.Location) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, errors.New("time is empty")
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && isNumeric(s) {
		if math.Abs(f) > 1e13 {
			return time.Time{}, fmt.Errorf("%q is out of range for unix seconds", s)
		}
		sec, frac := math.Modf(f)
		return time.Unix(int64(sec), int64(frac*1e9)).In(loc), nil
	}
	for _, l := range zonedLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t, nil
		}
	}
	for _, l := range localLayouts {
		if t, err := time.ParseInLocation(l, s, loc); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("cannot read %q as a time; use RFC 3339 (2024-05-01T10:00:00Z), 2024-05-01 10:00:00, 2024-05-01, RFC 1123 or unix seconds", s)
}

func isNumeric(s string) bool {
	for i, r := range s {
		if !(r >= '0' && r <= '9' || r == '.' || (i == 0 && (r == '-' || r == '+'))) {
			return false
		}
	}
	return true
}

func timeNow(_ context.Context, c *call) (runtime.Outcome, error) {
	a := struct {
		Timezone string `json:"timezone"`
		Format   string `json:"format"`
	}{Timezone: "UTC", Format: "rfc3339"}
	if err := c.decode(&a); err != nil {
		return argError(err), nil
	}
	if a.Format == "" {
		a.Format = "rfc3339"
	}
	loc, err := loadZone(a.Timezone)
	if err != nil {
		return fail("%v", err), nil
	}
	t := c.opts.Now().In(loc)
	s, err := formatTime(t, a.Format)
	if err != nil {
		return fail("%v", err), nil
	}
	return okJSON(map[string]any{"time": s, "unix": t.Unix(), "timezone": loc.String(), "weekday": t.Weekday().String()}), nil
}

func timeFormat(_ context.Context, c *call) (runtime.Outcome, error) {
	var a struct {
		Time     string `json:"time"`
		Format   string `json:"format"`
		Timezone string `json:"timezone"`
	}
	if err := c.decode(&a); err != nil {
		return argError(err), nil
	}
	loc, err := loadZone(a.Timezone)
	if err != nil {
		return fail("%v", err), nil
	}
	t, err := parseTimeInput(a.Time, loc)
	if err != nil {
		return fail("%v", err), nil
	}
	if a.Timezone != "" {
		t = t.In(loc)
	}
	s, err := formatTime(t, a.Format)
	if err != nil {
		return fail("%v", err), nil
	}
	return ok(s), nil
}

func timeParse(_ context.Context, c *call) (runtime.Outcome, error) {
	var a struct {
		Text     string `json:"text"`
		Format   string `json:"format"`
		Timezone string `json:"timezone"`
	}
	if err := c.decode(&a); err != nil {
		return argError(err), nil
	}
	loc, err := loadZone(a.Timezone)
	if err != nil {
		return fail("%v", err), nil
	}
	var t time.Time
	f := strings.ToLower(strings.TrimSpace(a.Format))
	switch {
	case f == "":
		t, err = parseTimeInput(a.Text, loc)
	case f == "unix" || f == "unix_ms":
		var n int64
		n, err = strconv.ParseInt(strings.TrimSpace(a.Text), 10, 64)
		if err != nil {
			err = fmt.Errorf("%q is not an integer", a.Text)
		} else if f == "unix" {
			t = time.Unix(n, 0).In(loc)
		} else {
			t = time.UnixMilli(n).In(loc)
		}
	case namedLayouts[f] != "":
		t, err = time.ParseInLocation(namedLayouts[f], strings.TrimSpace(a.Text), loc)
		if err != nil {
			err = fmt.Errorf("%q does not match format %s", a.Text, f)
		}
	case strings.Contains(a.Format, "%"):
		t, err = strptime(a.Text, a.Format, loc)
	default:
		err = fmt.Errorf("unknown format %q; %s", a.Format, formatHelp)
	}
	if err != nil {
		return fail("%v", err), nil
	}
	return okJSON(map[string]any{"time": t.Format(time.RFC3339Nano), "unix": t.Unix(), "weekday": t.Weekday().String()}), nil
}

func timeAdd(_ context.Context, c *call) (runtime.Outcome, error) {
	var a struct {
		Time     string `json:"time"`
		Duration string `json:"duration"`
		Years    int    `json:"years"`
		Months   int    `json:"months"`
		Days     int    `json:"days"`
	}
	if err := c.decode(&a); err != nil {
		return argError(err), nil
	}
	t, err := parseTimeInput(a.Time, time.UTC)
	if err != nil {
		return fail("%v", err), nil
	}
	var d time.Duration
	if strings.TrimSpace(a.Duration) != "" {
		if d, err = parseDuration(a.Duration); err != nil {
			return fail("%v", err), nil
		}
	}
	// Calendar units first (2024-01-31 + 1 month follows Go's AddDate,
	// which normalises to 2024-03-02), then the exact duration.
	return ok(t.AddDate(a.Years, a.Months, a.Days).Add(d).Format(time.RFC3339Nano)), nil
}

func timeDiff(_ context.Context, c *call) (runtime.Outcome, error) {
	a := struct {
		Start string `json:"start"`
		End   string `json:"end"`
		Unit  string `json:"unit"`
	}{Unit: "seconds"}
	if err := c.decode(&a); err != nil {
		return argError(err), nil
	}
	start, err := parseTimeInput(a.Start, time.UTC)
	if err != nil {
		return fail("start: %v", err), nil
	}
	end, err := parseTimeInput(a.End, time.UTC)
	if err != nil {
		return fail("end: %v", err), nil
	}
	d := end.Sub(start)
	var v float64
	switch a.Unit {
	case "", "seconds":
		a.Unit, v = "seconds", d.Seconds()
	case "minutes":
		v = d.Minutes()
	case "hours":
		v = d.Hours()
	case "days":
		v = d.Hours() / 24
	case "weeks":
		v = d.Hours() / (24 * 7)
	default:
		return fail("unit must be seconds, minutes, hours, days or weeks"), nil
	}
	return okJSON(map[string]any{"value": v, "unit": a.Unit, "duration": d.String()}), nil
}

// parseDuration reads a duration argument with the grammar of package
// duration, the one the command line uses ("1h30m", "-2d", "1w 3d", "90
// minutes", "45" for seconds). Days are 24 hours exactly; use the days
// argument for calendar days across daylight-saving changes.
func parseDuration(s string) (time.Duration, error) { return duration.Parse(s) }

var (
	longDays    = []string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"}
	longMonths  = []string{"January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"}
	strftimeAbb = map[byte]string{'F': "%Y-%m-%d", 'T': "%H:%M:%S", 'D': "%m/%d/%y", 'R': "%H:%M", 'c': "%a %b %e %H:%M:%S %Y", 'x': "%m/%d/%y", 'X': "%H:%M:%S"}
)

// strftime formats t with C strftime directives (the subset models use).
func strftime(t time.Time, format string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		ch := format[i]
		if ch != '%' {
			b.WriteByte(ch)
			continue
		}
		i++
		if i >= len(format) {
			return "", errors.New("format ends with a lone %")
		}
		d := format[i]
		if d == ':' && i+1 < len(format) && format[i+1] == 'z' {
			i++
			b.WriteString(t.Format("-07:00"))
			continue
		}
		if exp, ok := strftimeAbb[d]; ok {
			s, err := strftime(t, exp)
			if err != nil {
				return "", err
			}
			b.WriteString(s)
			continue
		}
		switch d {
		case 'Y':
			fmt.Fprintf(&b, "%04d", t.Year())
		case 'y':
			fmt.Fprintf(&b, "%02d", t.Year()%100)
		case 'C':
			fmt.Fprintf(&b, "%02d", t.Year()/100)
		case 'm':
			fmt.Fprintf(&b, "%02d", int(t.Month()))
		case 'd':
			fmt.Fprintf(&b, "%02d", t.Day())
		case 'e':
			fmt.Fprintf(&b, "%2d", t.Day())
		case 'j':
			fmt.Fprintf(&b, "%03d", t.YearDay())
		case 'H':
			fmt.Fprintf(&b, "%02d", t.Hour())
		case 'k':
			fmt.Fprintf(&b, "%2d", t.Hour())
		case 'I':
			fmt.Fprintf(&b, "%02d", hour12(t.Hour()))
		case 'l':
			fmt.Fprintf(&b, "%2d", hour12(t.Hour()))
		case 'M':
			fmt.Fprintf(&b, "%02d", t.Minute())
		case 'S':
			fmt.Fprintf(&b, "%02d", t.Second())
		case 'f':
			fmt.Fprintf(&b, "%06d", t.Nanosecond()/1000)
		case 'p':
			b.WriteString(t.Format("PM"))
		case 'P':
			b.WriteString(strings.ToLower(t.Format("PM")))
		case 'a':
			b.WriteString(t.Weekday().String()[:3])
		case 'A':
			b.WriteString(t.Weekday().String())
		case 'b', 'h':
			b.WriteString(t.Month().String()[:3])
		case 'B':
			b.WriteString(t.Month().String())
		case 'u':
			wd := int(t.Weekday())
			if wd == 0 {
				wd = 7
			}
			fmt.Fprintf(&b, "%d", wd)
		case 'w':
			fmt.Fprintf(&b, "%d", int(t.Weekday()))
		case 'G':
			y, _ := t.ISOWeek()
			fmt.Fprintf(&b, "%04d", y)
		case 'V':
			_, w := t.ISOWeek()
			fmt.Fprintf(&b, "%02d", w)
		case 's':
			fmt.Fprintf(&b, "%d", t.Unix())
		case 'z':
			b.WriteString(t.Format("-0700"))
		case 'Z':
			b.WriteString(t.Format("MST"))
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case '%':
			b.WriteByte('%')
		default:
			return "", fmt.Errorf("unsupported strftime directive %%%c", d)
		}
	}
	return b.String(), nil
}

func hour12(h int) int {
	if h%12 == 0 {
		return 12
	}
	return h % 12
}

// strptime parses text with C strptime directives. Missing fields default
// as in Python: 1900-01-01 00:00:00, in loc.
func strptime(text, format string, loc *time.Location) (time.Time, error) {
	// Expand composite directives first.
	for k, v := range strftimeAbb {
		format = strings.ReplaceAll(format, "%"+string(k), v)
	}
	year, month, day, hour, minute, sec, nsec := 1900, 1, 1, 0, 0, 0, 0
	pm, hasPM, hasUnix := false, false, false
	var unix int64
	zone := loc
	s := text
	mismatch := func() error {
		return fmt.Errorf("%q does not match format %q", text, format)
	}
	num := func(maxDigits, lo, hi int) (int, error) {
		i := 0
		if i < len(s) && (s[i] == '+' || s[i] == '-') && maxDigits > 4 {
			i++
		}
		for i < len(s) && i < maxDigits && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == 0 {
			return 0, mismatch()
		}
		n, err := strconv.Atoi(s[:i])
		if err != nil || n < lo || n > hi {
			return 0, fmt.Errorf("%q: value %s is out of range in %q", text, s[:i], format)
		}
		s = s[i:]
		return n, nil
	}
	name := func(names []string) (int, error) {
		for i, n := range names {
			for _, cand := range []string{n, n[:3]} {
				if len(s) >= len(cand) && strings.EqualFold(s[:len(cand)], cand) {
					s = s[len(cand):]
					return i, nil
				}
			}
		}
		return 0, mismatch()
	}
	var err error
	for i := 0; i < len(format); i++ {
		ch := format[i]
		if ch == ' ' || ch == '\t' || ch == '\n' {
			s = strings.TrimLeft(s, " \t\n")
			continue
		}
		if ch != '%' {
			if s == "" || s[0] != ch {
				return time.Time{}, mismatch()
			}
			s = s[1:]
			continue
		}
		i++
		if i >= len(format) {
			return time.Time{}, errors.New("format ends with a lone %")
		}
		switch format[i] {
		case 'Y':
			year, err = num(4, 0, 9999)
		case 'y':
			var y int
			if y, err = num(2, 0, 99); err == nil {
				year = 1900 + y
				if y < 69 {
					year = 2000 + y
				}
			}
		case 'm':
			month, err = num(2, 1, 12)
		case 'd', 'e':
			s = strings.TrimLeft(s, " ")
			day, err = num(2, 1, 31)
		case 'H', 'k':
			s = strings.TrimLeft(s, " ")
			hour, err = num(2, 0, 23)
		case 'I', 'l':
			s = strings.TrimLeft(s, " ")
			hour, err = num(2, 1, 12)
		case 'M':
			minute, err = num(2, 0, 59)
		case 'S':
			sec, err = num(2, 0, 59)
		case 'f':
			j := 0
			for j < len(s) && j < 9 && s[j] >= '0' && s[j] <= '9' {
				j++
			}
			if j == 0 {
				return time.Time{}, mismatch()
			}
			frac := s[:j] + strings.Repeat("0", 9-j)
			nsec, _ = strconv.Atoi(frac)
			s = s[j:]
		case 'p', 'P':
			hasPM = true
			switch {
			case len(s) >= 2 && strings.EqualFold(s[:2], "AM"):
			case len(s) >= 2 && strings.EqualFold(s[:2], "PM"):
				pm = true
			default:
				return time.Time{}, mismatch()
			}
			s = s[2:]
		case 'b', 'B', 'h':
			var m int
			if m, err = name(longMonths); err == nil {
				month = m + 1
			}
		case 'a', 'A':
			_, err = name(longDays)
		case 'z':
			j := 0
			if strings.HasPrefix(s, "Z") {
				zone, s = time.UTC, s[1:]
				break
			}
			for j < len(s) && (j == 0 && (s[j] == '+' || s[j] == '-') || j > 0 && (s[j] >= '0' && s[j] <= '9' || s[j] == ':')) {
				j++
			}
			off, okOff := parseOffset(s[:j])
			if !okOff {
				return time.Time{}, mismatch()
			}
			zone, s = time.FixedZone(s[:j], off), s[j:]
		case 'Z':
			j := 0
			for j < len(s) && (unicode.IsLetter(rune(s[j])) || s[j] == '/' || s[j] == '_') {
				j++
			}
			if j == 0 {
				return time.Time{}, mismatch()
			}
			if zone, err = loadZone(s[:j]); err == nil {
				s = s[j:]
			}
		case 's':
			j := 0
			for j < len(s) && (s[j] >= '0' && s[j] <= '9' || j == 0 && s[j] == '-') {
				j++
			}
			if unix, err = strconv.ParseInt(s[:j], 10, 64); err != nil {
				return time.Time{}, mismatch()
			}
			hasUnix, s = true, s[j:]
		case 'n', 't':
			s = strings.TrimLeft(s, " \t\n")
		case '%':
			if s == "" || s[0] != '%' {
				return time.Time{}, mismatch()
			}
			s = s[1:]
		default:
			return time.Time{}, fmt.Errorf("unsupported strptime directive %%%c", format[i])
		}
		if err != nil {
			return time.Time{}, err
		}
	}
	if strings.TrimSpace(s) != "" {
		return time.Time{}, fmt.Errorf("%q has extra text %q after format %q", text, s, format)
	}
	if hasUnix {
		return time.Unix(unix, 0).In(zone), nil
	}
	if hasPM {
		hour %= 12
		if pm {
			hour += 12
		}
	}
	t := time.Date(year, time.Month(month), day, hour, minute, sec, nsec, zone)
	if t.Day() != day || int(t.Month()) != month {
		return time.Time{}, fmt.Errorf("%q is not a valid date", text)
	}
	return t, nil
}
