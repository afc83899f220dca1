package secrets

import (
	"bytes"
	"encoding/json"
	"io"
	"sort"
	"strings"
	"sync"
)

// redacted replaces a secret in any text nexa shows.
const redacted = "[REDACTED]"

// MinRedactLen is the shortest value Redactor replaces: shorter values
// ("1", "yes", "gpt") would shred ordinary text and reveal little.
const MinRedactLen = 4

// Redactor returns a function that replaces every occurrence of every
// string value of the set (of at least MinRedactLen bytes; map entries and
// list elements included) with "[REDACTED]", longest values first, and
// also their JSON-escaped forms, since provider error bodies quote requests
// as JSON. The CLI applies it to provider error messages and logs. A nil
// or empty set gives the identity function.
func (s *Set) Redactor() func(string) string {
	r := newReplacer(s.Strings())
	if r == nil {
		return func(text string) string { return text }
	}
	return r.Replace
}

// needles lists what to replace: each value and its JSON-escaped form,
// longest first (strings.Replacer prefers earlier pairs at one position).
func needles(values []string) []string {
	seen := map[string]bool{}
	var out []string
	add := func(v string) {
		if len(v) >= MinRedactLen && !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	for _, v := range values {
		add(v)
		if b, err := json.Marshal(v); err == nil {
			add(string(b[1 : len(b)-1]))
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if len(out[i]) != len(out[j]) {
			return len(out[i]) > len(out[j])
		}
		return out[i] < out[j]
	})
	return out
}

func newReplacer(values []string) *strings.Replacer {
	ns := needles(values)
	if len(ns) == 0 {
		return nil
	}
	pairs := make([]string, 0, 2*len(ns))
	for _, n := range ns {
		pairs = append(pairs, n, redacted)
	}
	return strings.NewReplacer(pairs...)
}

// RedactWriter returns a writer that redacts the set's values (as
// Redactor) from a stream before passing it to w, such as a tool's log.
// It forwards whole lines as they complete (a line longer than 64 KiB in
// pieces), never cutting through a secret or forwarding a tail that could
// be the start of one. Close flushes the last
// partial line (it does not close w). Safe for concurrent use.
func (s *Set) RedactWriter(w io.Writer) io.WriteCloser {
	ns := needles(s.Strings())
	rw := &redactWriter{w: w, needles: ns}
	if len(ns) > 0 {
		rw.r = newReplacer(s.Strings())
	}
	return rw
}

const redactChunk = 64 << 10

type redactWriter struct {
	mu      sync.Mutex
	w       io.Writer
	r       *strings.Replacer
	needles []string
	buf     []byte
}

func (rw *redactWriter) Write(p []byte) (int, error) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if rw.r == nil {
		return rw.w.Write(p)
	}
	rw.buf = append(rw.buf, p...)
	// Hold back a tail that could be the start of a secret still arriving.
	limit := len(rw.buf)
	for _, n := range rw.needles {
		for k := min(len(n)-1, len(rw.buf)); k >= 1; k-- {
			if bytes.HasSuffix(rw.buf, []byte(n[:k])) {
				limit = min(limit, len(rw.buf)-k)
				break
			}
		}
	}
	cut := bytes.LastIndexByte(rw.buf[:limit], '\n') + 1
	if cut == 0 && limit > redactChunk {
		cut = limit
	}
	// A secret may itself hold a newline: never cut through one.
	cut = rw.safeCut(cut)
	if cut > 0 {
		if err := rw.emit(cut); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// safeCut moves cut back until no occurrence of a needle spans it.
func (rw *redactWriter) safeCut(cut int) int {
	for changed := true; changed && cut > 0; {
		changed = false
		for _, n := range rw.needles {
			lo := max(0, cut-len(n)+1)
			hi := min(len(rw.buf), cut+len(n)-1)
			if lo >= hi {
				continue
			}
			if i := bytes.Index(rw.buf[lo:hi], []byte(n)); i >= 0 && lo+i < cut {
				cut = lo + i
				changed = true
			}
		}
	}
	return cut
}

func (rw *redactWriter) emit(n int) error {
	out := rw.r.Replace(string(rw.buf[:n]))
	rw.buf = append(rw.buf[:0], rw.buf[n:]...)
	_, err := io.WriteString(rw.w, out)
	return err
}

// Close forwards whatever is buffered.
func (rw *redactWriter) Close() error {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if rw.r == nil || len(rw.buf) == 0 {
		return nil
	}
	return rw.emit(len(rw.buf))
}
