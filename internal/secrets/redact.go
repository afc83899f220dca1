package secrets

import (
	"bytes"
	"encoding/json"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
)

// redacted replaces a secret in any text nexa shows.
const redacted = "[REDACTED]"

// MinRedactLen is the shortest value Redactor replaces: shorter values
// ("1", "yes", "gpt") would shred ordinary text and reveal little.
const MinRedactLen = 4

// Redactor replaces every known secret value in text nexa is about to
// store, log, print or send: one Redactor holds every value a run must not
// reveal (secrets files, provider keys, database passwords), so each
// boundary applies the same list instead of its own special case. Values
// shorter than MinRedactLen are ignored. Its zero value and a nil
// *Redactor redact nothing. A Redactor is immutable, so it is safe for
// concurrent use.
type Redactor struct {
	needles []string
	// sorted are the needles in byte order, for the Writer's search of a
	// tail that could start one.
	sorted []string
	r      *strings.Replacer
}

// NewRedactor returns a Redactor of values: each value, its JSON-escaped
// form (provider bodies and stored JSON quote text as JSON) and its
// encodings (hex, URL escapes, base64 — also inside a longer base64 text;
// see encodedForms) are replaced by "[REDACTED]", longest first, so a
// value containing another never leaves a fragment behind. A tool that
// encodes a key before returning it thus gets no further than one that
// returns it plainly.
func NewRedactor(values ...string) *Redactor {
	ns := needles(values)
	if len(ns) == 0 {
		return &Redactor{}
	}
	pairs := make([]string, 0, 2*len(ns))
	for _, n := range ns {
		pairs = append(pairs, n, redacted)
	}
	sorted := slices.Clone(ns)
	slices.Sort(sorted)
	return &Redactor{needles: ns, sorted: sorted, r: strings.NewReplacer(pairs...)}
}

// Redact returns text with every known value replaced.
func (r *Redactor) Redact(text string) string {
	if r == nil || r.r == nil {
		return text
	}
	return r.r.Replace(text)
}

// needles lists what to replace: each value, its JSON-escaped form and its
// encodings, longest first (strings.Replacer prefers earlier pairs at one
// position). Values shorter than MinRedactLen contribute nothing, encoded
// forms included.
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
		if len(v) < MinRedactLen {
			continue
		}
		add(v)
		if b, err := json.Marshal(v); err == nil {
			add(string(b[1 : len(b)-1]))
		}
		for _, e := range encodedForms(v) {
			add(e)
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

// Writer returns a writer that redacts a stream before passing it to w,
// such as a tool's log or nexa's own stderr. It forwards text as each line
// (or carriage-return-ended progress line) completes, a line longer than
// 64 KiB in pieces, never cutting through a secret or forwarding a tail
// that could be the start of one. Close flushes the last partial line (it
// does not close w). Safe for concurrent use.
func (r *Redactor) Writer(w io.Writer) io.WriteCloser {
	if r == nil {
		r = &Redactor{}
	}
	rw := &redactWriter{w: w, r: r.r, sorted: r.sorted}
	for _, n := range r.needles {
		rw.needles = append(rw.needles, []byte(n))
		rw.maxLen = max(rw.maxLen, len(n))
	}
	return rw
}

const redactChunk = 64 << 10

type redactWriter struct {
	mu      sync.Mutex
	w       io.Writer
	r       *strings.Replacer
	needles [][]byte
	sorted  []string
	maxLen  int
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
	for k := min(rw.maxLen-1, len(rw.buf)); k >= 1; k-- {
		if rw.startsANeedle(rw.buf[len(rw.buf)-k:]) {
			limit = len(rw.buf) - k
			break
		}
	}
	cut := lastLineEnd(rw.buf[:limit]) + 1
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

// startsANeedle reports whether tail is the beginning of a needle: the
// first needle not less than tail, in byte order, starts with it if any
// does.
func (rw *redactWriter) startsANeedle(tail []byte) bool {
	i := sort.Search(len(rw.sorted), func(i int) bool { return rw.sorted[i] >= string(tail) })
	return i < len(rw.sorted) && len(rw.sorted[i]) >= len(tail) && rw.sorted[i][:len(tail)] == string(tail)
}

// lastLineEnd is the index of the last '\n' or '\r' in b, or -1.
func lastLineEnd(b []byte) int {
	return max(bytes.LastIndexByte(b, '\n'), bytes.LastIndexByte(b, '\r'))
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
			if i := bytes.Index(rw.buf[lo:hi], n); i >= 0 && lo+i < cut {
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

// Unwrap returns the writer the redacted stream goes to, so a caller can
// still tell whether it is a terminal.
func (rw *redactWriter) Unwrap() io.Writer { return rw.w }

// Close forwards whatever is buffered.
func (rw *redactWriter) Close() error {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if rw.r == nil || len(rw.buf) == 0 {
		return nil
	}
	return rw.emit(len(rw.buf))
}
