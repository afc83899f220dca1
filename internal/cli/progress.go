package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/fatih/color"
	"github.com/mattn/go-isatty"

	"github.com/nexa-run/nexa/internal/engine"
	"github.com/nexa-run/nexa/internal/state"
)

// isTerminal reports whether w is a terminal (only *os.File can be), looking
// through wrappers such as the redacting writer of stdout and stderr.
func isTerminal(w io.Writer) bool {
	for {
		u, ok := w.(interface{ Unwrap() io.Writer })
		if !ok {
			break
		}
		w = u.Unwrap()
	}
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// progressPrinter shows a run's steps on stderr: a live spinner line on a
// terminal, plain timestamped lines otherwise, nothing with --quiet. The
// live line names what is in progress: the model request, or every call
// running at once (calls of one reply run concurrently).
type progressPrinter struct {
	mu    sync.Mutex
	w     io.Writer
	live  bool
	quiet bool
	paint bool
	// tick is how often the live line is redrawn (its spinner and elapsed
	// time); 0 redraws it only on events.
	tick time.Duration
	// now is the clock of the timestamps and elapsed times; nil is
	// time.Now.
	now     func() time.Time
	spin    *time.Ticker
	done    chan struct{}
	label   string
	started time.Time
	frame   int
	closed  bool
	// running are the calls started and not yet ended, in the order they
	// started.
	running []runningCall
	// redact removes secret values from error texts before they are
	// shown; nil shows none of them.
	redact func(string) string
	// stream, when set (--output jsonl), renders the same events as
	// JSON lines on stdout; --quiet does not silence it.
	stream *jsonlStream
}

// runningCall is a call the live line shows until it ends.
type runningCall struct {
	id, tool string
	started  time.Time
}

func progress(e *env, quiet bool) *progressPrinter {
	live, paint := progressMode(isTerminal(e.stderr), e.getenv)
	return &progressPrinter{w: e.stderr, quiet: quiet, live: live, paint: paint, tick: 100 * time.Millisecond}
}

// progressMode chooses how progress is shown on stderr: a live spinner with
// colour only on a terminal that can redraw a line, and neither NO_COLOR nor
// TERM=dumb set; otherwise plain timestamped lines, one per event, which
// read well in a log and on a terminal that cannot move the cursor
// (docs/cli.md, "Standard error").
func progressMode(terminal bool, getenv func(string) string) (live, paint bool) {
	if !terminal || getenv("NO_COLOR") != "" || getenv("TERM") == "dumb" {
		return false, false
	}
	return true, true
}

func (p *progressPrinter) sprint(c color.Attribute, s string) string {
	if !p.paint {
		return s
	}
	col := color.New(c)
	col.EnableColor()
	return col.Sprint(s)
}

func (p *progressPrinter) clock() time.Time {
	if p.now != nil {
		return p.now()
	}
	return time.Now()
}

// line prints one finished event line.
func (p *progressPrinter) line(s string) {
	if p.live {
		fmt.Fprintf(p.w, "\r\033[K%s\n", s)
		return
	}
	fmt.Fprintf(p.w, "%s %s\n", p.clock().UTC().Format(time.RFC3339), s)
}

// status shows what is in progress since a time: on a terminal as the live
// line, drawn at once and then redrawn every tick; off a terminal as one
// line. The caller holds p.mu.
func (p *progressPrinter) status(label string, since time.Time) {
	if !p.live {
		p.line(label)
		return
	}
	p.spinOn(label, since)
}

// spinOn makes label the live line and draws it; the caller holds p.mu.
func (p *progressPrinter) spinOn(label string, since time.Time) {
	p.label, p.started = label, since
	p.draw()
	if p.spin != nil || p.tick <= 0 {
		return
	}
	p.done = make(chan struct{})
	p.spin = time.NewTicker(p.tick)
	go func(t *time.Ticker, done chan struct{}) {
		for {
			select {
			case <-done:
				return
			case <-t.C:
				p.mu.Lock()
				select {
				case <-done: // stopped while this tick waited for the lock
					p.mu.Unlock()
					return
				default:
				}
				p.frame++
				p.draw()
				p.mu.Unlock()
			}
		}
	}(p.spin, p.done)
}

// spinnerFrames are the live line's spinner, one per redraw.
var spinnerFrames = [...]string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// draw writes the live line; the caller holds p.mu.
func (p *progressPrinter) draw() {
	fmt.Fprintf(p.w, "\r\033[K%s %s %s", p.sprint(color.FgCyan, spinnerFrames[p.frame%len(spinnerFrames)]), p.label, seconds(p.clock().Sub(p.started)))
}

// stopSpinner stops redrawing the live line; the next line() replaces it.
func (p *progressPrinter) stopSpinner() {
	if p.spin != nil {
		p.spin.Stop()
		close(p.done)
		p.spin = nil
	}
}

// showRunning makes the calls still running the live line, timed from the
// earliest of them, or stops the spinner when none is left; the caller
// holds p.mu.
func (p *progressPrinter) showRunning() {
	if len(p.running) == 0 {
		p.stopSpinner()
		return
	}
	p.spinOn(runningLabel(p.running), p.running[0].started)
}

// runningLabel names the calls running at once: "tool lookup (call_1)"
// for one, "running 3 tools: lookup, fetch, search" for several, the names
// cut short so that the line fits a terminal.
func runningLabel(calls []runningCall) string {
	if len(calls) == 1 {
		return fmt.Sprintf("tool %s (%s)", calls[0].tool, calls[0].id)
	}
	const width = 60
	var names strings.Builder
	for i, c := range calls {
		if i > 0 {
			if names.Len()+2+len(c.tool) > width {
				names.WriteString(", …")
				break
			}
			names.WriteString(", ")
		}
		names.WriteString(c.tool)
	}
	return fmt.Sprintf("running %d tools: %s", len(calls), names.String())
}

func seconds(d time.Duration) string {
	return fmt.Sprintf("%.1fs", d.Seconds())
}

// observe receives runtime events: the one source of the progress lines
// and, with --output jsonl, of the stream of JSON lines.
func (p *progressPrinter) observe(ev engine.Event) {
	if p.stream != nil {
		p.stream.observe(ev)
	}
	if p.quiet {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	switch ev.Kind {
	case engine.EventRunStarted:
		p.line("run " + ev.RunID + " started")
	case engine.EventRunResumed:
		p.line("run " + ev.RunID + " resumed")
	case engine.EventProviderStart:
		p.running = nil
		p.status(fmt.Sprintf("asking the model (request %d)", ev.Turn), p.clock())
	case engine.EventProviderDone:
		p.stopSpinner()
		if ev.Err != nil {
			p.line(fmt.Sprintf("%s model request %d failed after %s: %v", p.sprint(color.FgRed, "✗"), ev.Turn, seconds(ev.Duration), ev.Err))
			return
		}
		what := "final answer"
		if ev.Calls == 1 {
			what = "1 tool call"
		} else if ev.Calls > 1 {
			what = fmt.Sprintf("%d tool calls", ev.Calls)
		}
		p.line(fmt.Sprintf("%s model replied: %s (%s)", p.sprint(color.FgGreen, "✓"), what, seconds(ev.Duration)))
	case engine.EventToolStart:
		p.running = append(p.running, runningCall{id: ev.CallID, tool: ev.Tool, started: p.clock()})
		if p.live {
			p.showRunning()
			return
		}
		s := fmt.Sprintf("tool %s (%s) started", ev.Tool, ev.CallID)
		if len(p.running) > 1 {
			s += "; " + runningLabel(p.running)
		}
		p.line(s)
	case engine.EventToolDone:
		for i, c := range p.running {
			if c.id == ev.CallID {
				p.running = append(p.running[:i], p.running[i+1:]...)
				break
			}
		}
		mark, col := "✓", color.FgGreen
		switch ev.Outcome {
		case "error":
			mark, col = "✗", color.FgRed
		case "denied":
			mark, col = "⊘", color.FgYellow
		case "unknown":
			mark, col = "?", color.FgMagenta
		}
		s := fmt.Sprintf("%s tool %s (%s): %s", p.sprint(col, mark), ev.Tool, ev.CallID, ev.Outcome)
		if ev.Duration > 0 {
			s += " (" + seconds(ev.Duration) + ")"
		}
		if ev.Outcome == "unknown" && ev.Err != nil && p.redact != nil {
			// Why nobody knows: the tool's timeout, the run's
			// deadline, a lost connection…
			s += ": " + p.redact(ev.Err.Error())
		}
		p.line(s)
		if p.live {
			p.showRunning()
		}
	case engine.EventCallInputRequired:
		p.stopSpinner()
		p.line(fmt.Sprintf("%s tool %s (%s): its MCP server asks for input", p.sprint(color.FgYellow, "?"), ev.Tool, ev.CallID))
		if ev.Input != nil {
			for _, r := range ev.Input.Requests {
				p.line("  " + inputLine(r))
			}
		}
	case engine.EventCallResponded:
		p.line(fmt.Sprintf("answered: input of call %s (%s) by %s", ev.CallID, ev.Tool, ev.By))
	case engine.EventRunStopped:
		p.running = nil
		p.stopSpinner()
		p.line(fmt.Sprintf("run %s: %s", ev.RunID, p.sprint(statusColor(string(ev.Status)), string(ev.Status))))
	}
}

func (p *progressPrinter) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopSpinner()
	p.closed = true
}

func statusColor(s string) color.Attribute {
	switch s {
	case "completed":
		return color.FgGreen
	case "waiting_approval", "waiting_input":
		return color.FgYellow
	case "unknown_outcome":
		return color.FgMagenta
	}
	return color.FgRed
}

// printNextSteps ends a waiting or unknown run with the exact commands to
// continue it.
func printNextSteps(e *env, r *runResult) {
	if n := len(r.DeniedCalls); n > 0 {
		fmt.Fprintf(e.stderr, "\n%d call(s) were not executed:\n", n)
		for _, c := range r.DeniedCalls {
			fmt.Fprintf(e.stderr, "  %s  %s  %s%s\n", c.CallID, c.Tool, c.Outcome, deniedWhy(c))
		}
	}
	if len(r.Resume) == 0 {
		return
	}
	w := e.stderr
	switch r.Status {
	case "waiting_approval":
		if len(r.PendingCalls) == 0 {
			// Every call is decided (from nexa runs approve or nexa
			// serve): what is left is to continue the run.
			cmd := r.Resume["resume"]
			if cmd == "" {
				cmd = r.Resume["approve"]
			}
			fmt.Fprintf(w, "\nEvery call is decided; continue the run:\nResume: %s\n", cmd)
			return
		}
		fmt.Fprintf(w, "\n%d call(s) wait for your decision:\n", len(r.PendingCalls))
		for _, c := range r.PendingCalls {
			fmt.Fprintf(w, "  %s  %s %s  (risk %s)\n", c.CallID, c.Tool, compactJSON(c.Arguments, 200), c.RiskLevel)
		}
		fmt.Fprintf(w, "\nApprove: %s\nDeny:    %s\n", r.Resume["approve"], r.Resume["deny"])
	case "waiting_input":
		fmt.Fprintf(w, "\n%d call(s) wait for your answer (their MCP server asks for input; nexa opens no link):\n", len(r.PendingInputs))
		for _, c := range r.PendingInputs {
			fmt.Fprintf(w, "  %s  %s  (MCP server %s)\n", c.CallID, c.Tool, c.Server)
			for _, q := range c.Requests {
				fmt.Fprintf(w, "    %s\n", pendingInputLine(q))
			}
		}
		if len(r.PendingCalls) > 0 {
			fmt.Fprintf(w, "%d call(s) also wait for your decision:\n", len(r.PendingCalls))
			for _, c := range r.PendingCalls {
				fmt.Fprintf(w, "  %s  %s %s  (risk %s)\n", c.CallID, c.Tool, compactJSON(c.Arguments, 200), c.RiskLevel)
			}
			fmt.Fprintf(w, "\nAnswer and approve: %s\nAnswer and deny:    %s\n", r.Resume["approve"], r.Resume["deny"])
			return
		}
		fmt.Fprintf(w, "\nAnswer: %s\n", r.Resume["respond"])
	case "unknown_outcome":
		fmt.Fprintf(w, "\nThese calls started but their outcome is unknown; verify what happened, then record it:\n")
		for i, c := range r.UnknownCalls {
			key := "resolve"
			if i > 0 {
				key = fmt.Sprintf("resolve_%d", i+1)
			}
			fmt.Fprintf(w, "  %s  %s %s\n  %s\n", c.CallID, c.Tool, compactJSON(c.Arguments, 200), r.Resume[key])
		}
		fmt.Fprintf(w, "Then resume: %s\n", r.Resume["resume"])
	default:
		if cmd := r.Resume["resume"]; cmd != "" && r.RunID != nil {
			fmt.Fprintf(w, "\nResume: %s\n", cmd)
		}
	}
}

func compactJSON(b []byte, max int) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > max {
		s = s[:max] + "…"
	}
	return s
}

// inputLine describes one input request for a person: a form with its
// schema, or the URL to visit and its domain (never opened by nexa).
func inputLine(r state.InputRequest) string {
	return pendingInputLine(engine.PendingInputRequest{Key: r.Key, Mode: r.Mode, Message: r.Message, Schema: r.Schema, URL: r.URL, Domain: r.Domain})
}

func pendingInputLine(r engine.PendingInputRequest) string {
	if r.Mode == state.InputURL {
		return fmt.Sprintf("%s: %q — visit %s (domain %s), then answer done", r.Key, r.Message, r.URL, r.Domain)
	}
	return fmt.Sprintf("%s: %q — form %s", r.Key, r.Message, compactJSON(r.Schema, 300))
}

// printTextResult is the --output text summary for people.
func printTextResult(w io.Writer, r *runResult) {
	if r.RunID != nil {
		fmt.Fprintf(w, "run:     %s\n", *r.RunID)
		fmt.Fprintf(w, "status:  %s\n", r.Status)
		fmt.Fprintf(w, "agent:   %s (revision %d)\n", r.Agent, r.Revision)
	}
	if r.Error != nil {
		fmt.Fprintf(w, "error:   %s: %s\n", r.Error.Code, r.Error.Message)
	}
	if r.Usage != nil {
		u := r.Usage
		fmt.Fprintf(w, "usage:   %d requests, %d tool calls, %d tokens (%d in, %d of them cached, %d out), cost %s\n", u.ProviderRequests, u.ToolCalls, u.TotalTokens, u.InputTokens, u.CachedInputTokens, u.OutputTokens, costText(*u))
	}
	for _, c := range r.PendingCalls {
		fmt.Fprintf(w, "pending: %s %s %s\n", c.CallID, c.Tool, compactJSON(c.Arguments, 500))
	}
	for _, c := range r.PendingInputs {
		for _, q := range c.Requests {
			fmt.Fprintf(w, "input:   %s %s %s\n", c.CallID, c.Tool, pendingInputLine(q))
		}
	}
	for _, c := range r.UnknownCalls {
		fmt.Fprintf(w, "unknown: %s %s %s\n", c.CallID, c.Tool, compactJSON(c.Arguments, 500))
	}
	for _, c := range r.DeniedCalls {
		fmt.Fprintf(w, "%-8s %s %s%s\n", c.Outcome+":", c.CallID, c.Tool, deniedWhy(c))
	}
	if len(r.Output) > 0 && string(r.Output) != "null" {
		var s string
		if err := jsonUnmarshalString(r.Output, &s); err == nil {
			fmt.Fprintf(w, "\n%s\n", s)
		} else {
			fmt.Fprintf(w, "\n%s\n", r.Output)
		}
	}
}

// retrying reports a provider retry (the provider's OnRetry hook).
func (p *progressPrinter) retrying(attempt int, err error, delay time.Duration) {
	if p.stream != nil {
		p.stream.retrying(attempt, err, delay)
	}
	if p.quiet {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.line(fmt.Sprintf("%s model request failed (%v); retry %d in %s", p.sprint(color.FgYellow, "↻"), err, attempt, seconds(delay)))
	p.status(fmt.Sprintf("asking the model (retry %d)", attempt), p.clock())
}

// deniedWhy says who refused a call and why, for one line.
func deniedWhy(c engine.DeniedCall) string {
	s := ""
	if c.DecidedBy != "" {
		s += " by " + c.DecidedBy
	}
	if c.Reason != "" {
		s += ": " + c.Reason
	}
	return s
}
