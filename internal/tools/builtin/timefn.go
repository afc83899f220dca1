package builtin

import (
	"context"
	"errors"
	"fmt"
	"github.com/nexa-run/nexa/internal/tool"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	gostrftime "github.com/ncruces/go-strftime"

	"github.com/nexa-run/nexa/internal/duration"
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

// inZone is the shape the time tools with a timezone argument share:
// decode the arguments into a, load the zone *tz names, then act in it. An
// error of either, or one act returns, is an ordinary tool error the model
// reads.
func inZone(c *call, a any, tz *string, act func(loc *time.Location) (tool.Outcome, error)) (tool.Outcome, error) {
	if err := c.decode(a); err != nil {
		return argError(err), nil
	}
	loc, err := loadZone(*tz)
	if err != nil {
		return fail("%v", err), nil
	}
	out, err := act(loc)
	if err != nil {
		return fail("%v", err), nil
	}
	return out, nil
}

func timeNow(_ context.Context, c *call) (tool.Outcome, error) {
	a := struct {
		Timezone string `json:"timezone"`
		Format   string `json:"format"`
	}{Timezone: "UTC", Format: "rfc3339"}
	return inZone(c, &a, &a.Timezone, func(loc *time.Location) (tool.Outcome, error) {
		if a.Format == "" {
			a.Format = "rfc3339"
		}
		t := c.opts.Now().In(loc)
		s, err := formatTime(t, a.Format)
		if err != nil {
			return tool.Outcome{}, err
		}
		return okJSON(map[string]any{"time": s, "unix": t.Unix(), "timezone": loc.String(), "weekday": t.Weekday().String()}), nil
	})
}

func timeFormat(_ context.Context, c *call) (tool.Outcome, error) {
	var a struct {
		Time     string `json:"time"`
		Format   string `json:"format"`
		Timezone string `json:"timezone"`
	}
	return inZone(c, &a, &a.Timezone, func(loc *time.Location) (tool.Outcome, error) {
		t, err := parseTimeInput(a.Time, loc)
		if err != nil {
			return tool.Outcome{}, err
		}
		if a.Timezone != "" {
			t = t.In(loc)
		}
		s, err := formatTime(t, a.Format)
		if err != nil {
			return tool.Outcome{}, err
		}
		return ok(s), nil
	})
}

func timeParse(_ context.Context, c *call) (tool.Outcome, error) {
	var a struct {
		Text     string `json:"text"`
		Format   string `json:"format"`
		Timezone string `json:"timezone"`
	}
	return inZone(c, &a, &a.Timezone, func(loc *time.Location) (tool.Outcome, error) {
		t, err := parseIn(a.Text, a.Format, loc)
		if err != nil {
			return tool.Outcome{}, err
		}
		return okJSON(map[string]any{"time": t.Format(time.RFC3339Nano), "unix": t.Unix(), "weekday": t.Weekday().String()}), nil
	})
}

// parseIn reads text as a time in format: empty for any form
// parseTimeInput accepts, unix or unix_ms, a named layout, or strptime
// directives.
func parseIn(text, format string, loc *time.Location) (time.Time, error) {
	var t time.Time
	var err error
	f := strings.ToLower(strings.TrimSpace(format))
	switch {
	case f == "":
		t, err = parseTimeInput(text, loc)
	case f == "unix" || f == "unix_ms":
		var n int64
		n, err = strconv.ParseInt(strings.TrimSpace(text), 10, 64)
		if err != nil {
			err = fmt.Errorf("%q is not an integer", text)
		} else if f == "unix" {
			t = time.Unix(n, 0).In(loc)
		} else {
			t = time.UnixMilli(n).In(loc)
		}
	case namedLayouts[f] != "":
		t, err = time.ParseInLocation(namedLayouts[f], strings.TrimSpace(text), loc)
		if err != nil {
			err = fmt.Errorf("%q does not match format %s", text, f)
		}
	case strings.Contains(format, "%"):
		t, err = strptime(text, format, loc)
	default:
		err = fmt.Errorf("unknown format %q; %s", format, formatHelp)
	}
	return t, err
}

func timeAdd(_ context.Context, c *call) (tool.Outcome, error) {
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

func timeDiff(_ context.Context, c *call) (tool.Outcome, error) {
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

// strftimeSpecs are the directives github.com/ncruces/go-strftime
// formats. The library prints an unknown directive as it is; time_format
// refuses it instead, so that a model learns its pattern was wrong.
const strftimeSpecs = "AaBbhmdeIlHkMSLfNyYCUWVgGsQwujpPZz+cvFDxrTXR%tn"

// strptimeSpecs are the directives the library parses, less %Z and %+:
// Go reads a zone abbreviation it does not know as UTC, silently.
const strptimeSpecs = "AaBbhmdejIHMSLfNyYpPzcvFDxrTXR%tn"

// checkDirectives refuses a pattern with a directive outside specs or a
// lone % at its end. Flags - and :, and the modifiers E and O, are allowed
// as in C.
func checkDirectives(format, specs, verb string) error {
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		i++
		if i < len(format) && (format[i] == '-' || format[i] == ':') {
			i++
		}
		if i < len(format) && (format[i] == 'E' || format[i] == 'O') {
			i++
		}
		if i >= len(format) {
			return errors.New("format ends with a lone %")
		}
		if !strings.ContainsRune(specs, rune(format[i])) {
			return fmt.Errorf("unsupported %s directive %%%c", verb, format[i])
		}
	}
	return nil
}

// strftime formats t with C strftime directives (go-strftime).
func strftime(t time.Time, format string) (string, error) {
	if err := checkDirectives(format, strftimeSpecs, "strftime"); err != nil {
		return "", err
	}
	return gostrftime.Format(format, t), nil
}

// strptime parses text with C strptime directives (go-strftime). As in
// Python, fields the format lacks default to 1900-01-01 00:00:00, and a
// time without a zone directive is read in loc.
func strptime(text, format string, loc *time.Location) (time.Time, error) {
	if err := checkDirectives(format, strptimeSpecs, "strptime"); err != nil {
		return time.Time{}, err
	}
	value := strings.TrimSpace(text)
	// Go reads AM/PM in one letter case only; people write either.
	switch {
	case hasDirective(format, "p"):
		value = meridiem().ReplaceAllStringFunc(value, strings.ToUpper)
	case hasDirective(format, "P"):
		value = meridiem().ReplaceAllStringFunc(value, strings.ToLower)
	}
	// A fraction after the seconds is read by Go whatever its length when
	// the layout does not name one; .%f in the layout would demand six
	// digits.
	layout := format
	for _, f := range []string{".%f", ".%L", ".%N", ",%f", ",%L", ",%N"} {
		layout = strings.ReplaceAll(layout, f, "")
	}
	t, err := gostrftime.Parse(layout, value)
	if err != nil {
		var pe *time.ParseError
		switch {
		case errors.As(err, &pe) && strings.Contains(pe.Message, "extra text"):
			return time.Time{}, fmt.Errorf("%q has extra text %q after format %q", text, strings.TrimPrefix(pe.Message, ": extra text: "), format)
		case errors.As(err, &pe) && strings.Contains(pe.Message, "day out of range"):
			return time.Time{}, fmt.Errorf("%q is not a valid date", text)
		case errors.As(err, &pe) && strings.Contains(pe.Message, "out of range"):
			return time.Time{}, fmt.Errorf("%q: value %s in %q", text, strings.TrimPrefix(pe.Message, ": "), format)
		case errors.As(err, &pe):
			return time.Time{}, fmt.Errorf("%q does not match format %q", text, format)
		}
		return time.Time{}, fmt.Errorf("format %q: %v", format, err)
	}
	if !hasDirective(format, "YyFDxcv+") {
		t = t.AddDate(1900, 0, 0)
	}
	if !hasDirective(format, "zZ+") {
		t = time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), loc)
	}
	return t, nil
}

// meridiem matches am and pm in any letter case. Compiled on first use:
// start-up pays nothing for it.
var meridiem = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)\b[ap]m\b`) })

// hasDirective reports whether format uses one of the directives in specs.
func hasDirective(format, specs string) bool {
	for i := 0; i+1 < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		j := i + 1
		for j < len(format) && strings.IndexByte("-:EO", format[j]) >= 0 {
			j++
		}
		if j < len(format) && strings.IndexByte(specs, format[j]) >= 0 {
			return true
		}
		i = j
	}
	return false
}
