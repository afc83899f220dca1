package telemetry

import (
	"context"
	"fmt"
	"io"
	"log/slog"
)

// Log formats of NewLogger (--log-format).
const (
	LogJSON = "json"
	LogText = "text"
)

// CheckLogFormat refuses a --log-format other than json or text.
func CheckLogFormat(format string) error {
	if format != LogJSON && format != LogText {
		return fmt.Errorf("--log-format takes json or text, not %q", format)
	}
	return nil
}

// NewLogger returns a structured logger writing to w, one JSON object (or
// one logfmt-style line for text) per record. Every string it writes —
// the message, attribute values, errors — passes through redact first, so
// a secret the process knows (a key, a store password, a token) never
// reaches the log. redact nil leaves text as it is.
func NewLogger(w io.Writer, format string, level slog.Leveler, redact func(string) string) (*slog.Logger, error) {
	if err := CheckLogFormat(format); err != nil {
		return nil, err
	}
	o := &slog.HandlerOptions{Level: level}
	var h slog.Handler
	if format == LogJSON {
		h = slog.NewJSONHandler(w, o)
	} else {
		h = slog.NewTextHandler(w, o)
	}
	if redact != nil {
		h = &redactHandler{next: h, redact: redact}
	}
	return slog.New(h), nil
}

// redactHandler passes every string of a record through redact before the
// wrapped handler formats it.
type redactHandler struct {
	next   slog.Handler
	redact func(string) string
}

// Enabled asks the wrapped handler.
func (h *redactHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

// Handle redacts the message and the attributes, then hands the record on.
func (h *redactHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, h.redact(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

// WithAttrs redacts attributes given once for every later record.
func (h *redactHandler) WithAttrs(as []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(as))
	for i, a := range as {
		red[i] = h.attr(a)
	}
	return &redactHandler{next: h.next.WithAttrs(red), redact: h.redact}
}

// WithGroup opens a group on the wrapped handler.
func (h *redactHandler) WithGroup(name string) slog.Handler {
	return &redactHandler{next: h.next.WithGroup(name), redact: h.redact}
}

// attr redacts one attribute: strings, groups member by member, and any
// other value that formats as text (an error, a Stringer) as its text.
func (h *redactHandler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.redact(v.String()))
	case slog.KindGroup:
		g := v.Group()
		red := make([]any, len(g))
		for i, m := range g {
			red[i] = h.attr(m)
		}
		return slog.Group(a.Key, red...)
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			return slog.String(a.Key, h.redact(x.Error()))
		case fmt.Stringer:
			return slog.String(a.Key, h.redact(x.String()))
		case []byte:
			return slog.String(a.Key, h.redact(string(x)))
		default:
			return slog.String(a.Key, h.redact(fmt.Sprint(x)))
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
