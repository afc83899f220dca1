package cli

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexa-run/nexa/internal/engine"
	"github.com/nexa-run/nexa/internal/secrets"
	"github.com/nexa-run/nexa/internal/state"
)

// lockedBuffer lets the spinner goroutine and the test share a buffer.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// On a terminal the printer animates a spinner while the model thinks and
// a tool runs, then replaces it with one line per step.
func TestProgressLiveSpinnerAndLines(t *testing.T) {
	var buf lockedBuffer
	p := &progressPrinter{w: &buf, live: true, tick: 100 * time.Millisecond}
	p.observe(engine.Event{Kind: engine.EventRunStarted, RunID: "run_X"})
	p.observe(engine.Event{Kind: engine.EventProviderStart, Turn: 1})
	time.Sleep(250 * time.Millisecond)
	p.observe(engine.Event{Kind: engine.EventProviderDone, Turn: 1, Calls: 2, Duration: time.Second})
	p.observe(engine.Event{Kind: engine.EventToolStart, Tool: "lookup", CallID: "c1"})
	p.retrying(1, errTest("overloaded"), time.Second)
	p.observe(engine.Event{Kind: engine.EventToolDone, Tool: "lookup", CallID: "c1", Outcome: "unknown", Duration: 2 * time.Second})
	p.observe(engine.Event{Kind: engine.EventRunStopped, RunID: "run_X", Status: state.StatusUnknownOutcome})
	p.close()
	p.observe(engine.Event{Kind: engine.EventRunStarted, RunID: "after-close"})
	out := buf.String()
	for _, want := range []string{"run run_X started", "asking the model (request 1)", "model replied: 2 tool calls (1.0s)",
		"? tool lookup (c1): unknown (2.0s)", "retry 1 in 1.0s", "run run_X: unknown_outcome"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "after-close") {
		t.Error("printed after close")
	}
	if strings.Contains(out, "\x1b[3") {
		t.Error("colour without a terminal that asked for it")
	}
}

// Off a terminal every event is one timestamped line, and --quiet prints
// nothing.
func TestProgressPlainAndQuiet(t *testing.T) {
	var buf lockedBuffer
	p := &progressPrinter{w: &buf}
	p.observe(engine.Event{Kind: engine.EventProviderStart, Turn: 1})
	p.observe(engine.Event{Kind: engine.EventProviderDone, Turn: 1})
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[1], "model replied: final answer") {
		t.Fatalf("lines = %q", lines)
	}
	if _, err := time.Parse(time.RFC3339, strings.Fields(lines[0])[0]); err != nil {
		t.Errorf("no timestamp on %q", lines[0])
	}
	var quiet lockedBuffer
	q := &progressPrinter{w: &quiet, quiet: true}
	q.observe(engine.Event{Kind: engine.EventRunStarted, RunID: "r"})
	q.retrying(1, errTest("x"), time.Second)
	if quiet.String() != "" {
		t.Errorf("quiet printed %q", quiet.String())
	}
}

type errTest string

func (e errTest) Error() string { return string(e) }

// Redacting stdout and stderr must not turn off the live display and
// colours of a terminal.
func TestTerminalSeenThroughTheRedactor(t *testing.T) {
	tty, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer tty.Close()
	if !isTerminal(tty) {
		t.Skip("/dev/ptmx is not a terminal here")
	}
	if !isTerminal(secrets.NewRedactor("sk-secret").Writer(tty)) {
		t.Fatal("a terminal behind the redactor is not seen as one")
	}
	if isTerminal(secrets.NewRedactor("sk-secret").Writer(&lockedBuffer{})) {
		t.Fatal("a buffer behind the redactor is seen as a terminal")
	}
}

// The spinner and colour are for a terminal that can redraw a line; with
// NO_COLOR, TERM=dumb or no terminal at all, progress is plain timestamped
// lines (docs/cli.md, "Standard error").
func TestProgressModePlainUnlessCapableTerminal(t *testing.T) {
	for _, tc := range []struct {
		name     string
		terminal bool
		env      map[string]string
		live     bool
	}{
		{"terminal", true, nil, true},
		{"terminal with TERM=xterm", true, map[string]string{"TERM": "xterm-256color"}, true},
		{"terminal with NO_COLOR", true, map[string]string{"NO_COLOR": "1"}, false},
		{"terminal with TERM=dumb", true, map[string]string{"TERM": "dumb"}, false},
		{"not a terminal", false, nil, false},
		{"not a terminal, TERM=xterm", false, map[string]string{"TERM": "xterm"}, false},
	} {
		getenv := func(k string) string { return tc.env[k] }
		live, paint := progressMode(tc.terminal, getenv)
		if live != tc.live || paint != tc.live {
			t.Errorf("%s: live=%v paint=%v, want both %v", tc.name, live, paint, tc.live)
		}
	}
}

// Off a terminal the printer writes whole lines that start with an RFC 3339
// time, and no cursor movement.
func TestProgressPlainLinesAreTimestamped(t *testing.T) {
	var buf lockedBuffer
	e := &env{stderr: &buf, getenv: func(string) string { return "" }}
	p := progress(e, false)
	p.observe(engine.Event{Kind: engine.EventRunStarted, RunID: "run_X"})
	p.observe(engine.Event{Kind: engine.EventProviderStart, Turn: 1})
	p.observe(engine.Event{Kind: engine.EventProviderDone, Turn: 1})
	p.close()
	out := buf.String()
	if strings.Contains(out, "\r") || strings.Contains(out, "\033[") {
		t.Fatalf("plain progress has terminal control sequences: %q", out)
	}
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		ts, _, ok := strings.Cut(line, " ")
		if _, err := time.Parse(time.RFC3339, ts); !ok || err != nil {
			t.Errorf("line %q does not start with an RFC 3339 time", line)
		}
	}
}

// fakeClock is the injected clock of the progress tests.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

// liveLine is what a terminal shows on the live line: the text after the
// last line erase, or "" when the last thing written ended a line.
func liveLine(out string) string {
	if strings.HasSuffix(out, "\n") {
		return ""
	}
	return out[strings.LastIndex(out, "\r\033[K")+len("\r\033[K"):]
}

// Calls of one reply run at once: the live line names every call running,
// timed from the earliest, and each call that ends gets its own line while
// the line goes on naming the others; with the last, it is gone.
func TestProgressLiveShowsEveryRunningCall(t *testing.T) {
	var buf lockedBuffer
	clock := &fakeClock{t: time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)}
	p := &progressPrinter{w: &buf, live: true, now: clock.now}
	p.observe(engine.Event{Kind: engine.EventProviderStart, Turn: 1})
	clock.advance(time.Second)
	p.observe(engine.Event{Kind: engine.EventProviderDone, Turn: 1, Calls: 3, Duration: time.Second})
	p.observe(engine.Event{Kind: engine.EventToolStart, Tool: "lookup", CallID: "c1"})
	if got := liveLine(buf.String()); got != "⠋ tool lookup (c1) 0.0s" {
		t.Fatalf("one call: live line %q", got)
	}
	clock.advance(100 * time.Millisecond)
	p.observe(engine.Event{Kind: engine.EventToolStart, Tool: "fetch", CallID: "c2"})
	p.observe(engine.Event{Kind: engine.EventToolStart, Tool: "search", CallID: "c3"})
	if got := liveLine(buf.String()); got != "⠋ running 3 tools: lookup, fetch, search 0.1s" {
		t.Fatalf("three calls: live line %q", got)
	}

	clock.advance(900 * time.Millisecond)
	before := len(buf.String())
	p.observe(engine.Event{Kind: engine.EventToolDone, Tool: "fetch", CallID: "c2", Outcome: "ok", Duration: 900 * time.Millisecond})
	if got := buf.String()[before:]; !strings.HasPrefix(got, "\r\033[K✓ tool fetch (c2): ok (0.9s)\n") {
		t.Errorf("an ended call's line: %q", got)
	}
	if got := liveLine(buf.String()); got != "⠋ running 2 tools: lookup, search 1.0s" {
		t.Errorf("two calls left: live line %q", got)
	}
	clock.advance(500 * time.Millisecond)
	p.observe(engine.Event{Kind: engine.EventToolDone, Tool: "lookup", CallID: "c1", Outcome: "error", Duration: 1500 * time.Millisecond})
	if got := liveLine(buf.String()); got != "⠋ tool search (c3) 1.4s" {
		t.Errorf("one call left: live line %q", got)
	}
	p.observe(engine.Event{Kind: engine.EventToolDone, Tool: "search", CallID: "c3", Outcome: "ok", Duration: 1400 * time.Millisecond})
	out := buf.String()
	if got := liveLine(out); got != "" {
		t.Errorf("no call left: live line %q", got)
	}
	for _, want := range []string{"✗ tool lookup (c1): error (1.5s)\n", "✓ tool search (c3): ok (1.4s)\n"} {
		if strings.Count(out, want) != 1 {
			t.Errorf("output has not one %q:\n%q", want, out)
		}
	}
	p.close()
}

// Many calls at once: the live line counts them all and cuts the names
// short, so that it stays on one terminal line.
func TestProgressRunningLabelFits(t *testing.T) {
	var calls []runningCall
	for i := range 12 {
		calls = append(calls, runningCall{id: fmt.Sprint("c", i), tool: fmt.Sprintf("search_the_archive_%d", i)})
	}
	got := runningLabel(calls)
	if !strings.HasPrefix(got, "running 12 tools: search_the_archive_0, search_the_archive_1, ") || !strings.HasSuffix(got, ", …") || len([]rune(got)) > 90 {
		t.Errorf("label %q", got)
	}
}

// Off a terminal each call has a line when it starts, saying which calls
// run beside it, and one when it ends, each stamped with the (injected)
// time it happened.
func TestProgressPlainLinesPerCall(t *testing.T) {
	var buf lockedBuffer
	clock := &fakeClock{t: time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)}
	p := &progressPrinter{w: &buf, now: clock.now}
	p.observe(engine.Event{Kind: engine.EventToolStart, Tool: "lookup", CallID: "c1"})
	p.observe(engine.Event{Kind: engine.EventToolStart, Tool: "fetch", CallID: "c2"})
	p.observe(engine.Event{Kind: engine.EventToolStart, Tool: "search", CallID: "c3"})
	clock.advance(time.Second)
	p.observe(engine.Event{Kind: engine.EventToolDone, Tool: "fetch", CallID: "c2", Outcome: "ok", Duration: time.Second})
	clock.advance(time.Second)
	p.observe(engine.Event{Kind: engine.EventToolDone, Tool: "lookup", CallID: "c1", Outcome: "ok", Duration: 2 * time.Second})
	p.observe(engine.Event{Kind: engine.EventToolDone, Tool: "search", CallID: "c3", Outcome: "unknown", Duration: 2 * time.Second})
	p.close()
	want := []string{
		"2026-12-05T10:00:00Z tool lookup (c1) started",
		"2026-12-05T10:00:00Z tool fetch (c2) started; running 2 tools: lookup, fetch",
		"2026-12-05T10:00:00Z tool search (c3) started; running 3 tools: lookup, fetch, search",
		"2026-12-05T10:00:01Z ✓ tool fetch (c2): ok (1.0s)",
		"2026-12-05T10:00:02Z ✓ tool lookup (c1): ok (2.0s)",
		"2026-12-05T10:00:02Z ? tool search (c3): unknown (2.0s)",
	}
	if got := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
