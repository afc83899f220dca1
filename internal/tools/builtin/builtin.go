package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/nexa-run/nexa/internal/tool"
	"io"
	"net"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	// Time zones must resolve the same way on every machine, including
	// minimal containers without /usr/share/zoneinfo.
	_ "time/tzdata"

	"github.com/nexa-run/nexa/internal/ir"
	"github.com/nexa-run/nexa/internal/stdlib"
	"github.com/nexa-run/nexa/internal/tailbuf"
)

const (
	// DefaultOutputLimit bounds each captured stream of shell_exec and the
	// body of an HTTP response, in bytes.
	DefaultOutputLimit = 50_000
	// DefaultShell runs shell_exec commands.
	DefaultShell = "/bin/sh"
	// hardOutputCap bounds any output sent back, whatever the tool: a model
	// cannot use more, and the journal should not grow without bound.
	hardOutputCap = 2 << 20
)

// Options configures an Executor. The zero value is ready to use.
type Options struct {
	// Now is the clock of std.time; nil means time.Now. Tests fix it.
	Now func() time.Time
	// Shell runs shell_exec commands as `Shell -c COMMAND`; empty means
	// /bin/sh.
	Shell string
	// Env is the base environment of shell_exec and the PATH searched by
	// shell_which; nil means the process environment at the time of each
	// call. The NEXA_* call variables are added on top.
	Env []string
	// OutputLimit bounds each of stdout and stderr of shell_exec and the
	// body of an HTTP response; zero means DefaultOutputLimit.
	OutputLimit int
	// UserAgent is sent by std.http unless the call sets one; empty means
	// "nexa".
	UserAgent string
	// Protected are absolute paths of nexa's own files and directories
	// (the run store with its SQLite siblings, logs, locks, secrets files):
	// std.fs neither reads, lists nor changes them. .nexa in the working
	// directory is always protected.
	Protected []string
	// HTTPAllow are internal hosts std.http may reach on every call, in
	// the syntax of the agent setting http_allow (ir.ParseHTTPAllow),
	// on top of the invocation's own list. Tests use it for local servers.
	HTTPAllow []string

	// resolver replaces the system's name resolution of std.http, so that
	// tests can make a name resolve to an internal address.
	resolver *net.Resolver
}

// Executor runs the built-in tools of the std.* namespaces (ir.Body
// kind builtin). It is safe for concurrent use.
type Executor struct {
	opts     Options
	handlers map[string]handler
}

var _ tool.Executor = (*Executor)(nil)

// handler runs one built-in tool. A known failure is an Outcome with
// Success false; an error is either ErrNotExecuted (nothing ran) or wraps
// tool.ErrUnknownOutcome.
type handler func(ctx context.Context, c *call) (tool.Outcome, error)

// call is one invocation with the executor's settings at hand.
type call struct {
	inv  tool.Invocation
	opts *Options
}

// New returns an Executor for opts. The caller registers it for
// ir.BodyBuiltin.
func New(opts Options) *Executor {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Shell == "" {
		opts.Shell = DefaultShell
	}
	if opts.OutputLimit <= 0 {
		opts.OutputLimit = DefaultOutputLimit
	}
	if opts.UserAgent == "" {
		opts.UserAgent = "nexa"
	}
	if opts.Env != nil {
		opts.Env = append([]string(nil), opts.Env...)
	}
	opts.HTTPAllow = append([]string(nil), opts.HTTPAllow...)
	opts.Protected = append([]string(nil), opts.Protected...)
	e := &Executor{opts: opts, handlers: map[string]handler{}}
	e.register()
	return e
}

// register wires every tool name of internal/stdlib to its function.
func (e *Executor) register() {
	for name, h := range map[string]handler{
		"file_read": fileRead, "file_list": fileList, "file_exists": fileExists,
		"file_write": fileWrite, "file_append": fileAppend, "file_edit": fileEdit, "file_delete": fileDelete,
		"shell_exec": shellExec, "shell_which": shellWhich,
		"http_get": httpTool("GET"), "http_post": httpTool("POST"), "http_put": httpTool("PUT"), "http_delete": httpTool("DELETE"),
	} {
		e.handlers[name] = h
	}
	for name, h := range pureTools {
		e.handlers[name] = h
	}
}

// Execute runs one call of a built-in tool. Known results (including
// ordinary failures such as a missing file or a non-zero exit code) come
// back as an Outcome; an error means either that nothing ran
// (tool.ErrNotExecuted) or that the outcome is unknown
// (tool.ErrUnknownOutcome).
func (e *Executor) Execute(ctx context.Context, inv tool.Invocation) (tool.Outcome, error) {
	if inv.Tool == nil {
		return tool.Outcome{}, notExecuted("?", "the invocation names no tool")
	}
	name := inv.Tool.Name
	h, ok := e.handlers[name]
	if _, declared := stdlib.Lookup(name); !ok || !declared {
		return tool.Outcome{}, notExecuted(name, "not a built-in tool")
	}
	if inv.Tool.Sandbox {
		// docs/reference/runtime.md#tool-execution: never fall back to running unsandboxed.
		return tool.Outcome{}, notExecuted(name, "sandbox: true is not available for built-in tools; it was not run unsandboxed")
	}
	if err := ctx.Err(); err != nil {
		return tool.Outcome{}, fmt.Errorf("built-in tool %s not started: %w: %w", name, tool.ErrNotExecuted, err)
	}
	out, err := safeCall(ctx, h, &call{inv: inv, opts: &e.opts})
	if err != nil {
		return tool.Outcome{}, err
	}
	out.Output = capOutput(out.Output, hardOutputCap)
	return out, nil
}

// ReachesStore says whether a call of t can write to the run store:
// shell_exec can (its command runs with the user's rights), and so can
// any tool this executor does not implement. The file tools refuse the
// store's paths (Options.Protected); the network and pure tools touch no
// file.
func (e *Executor) ReachesStore(t *ir.Tool) bool {
	if t == nil {
		return true
	}
	_, known := e.handlers[t.Name]
	return !known || t.Name == "shell_exec"
}

// safeCall turns a panic (a bug) into a result instead of crashing the run:
// a pure tool cannot have done anything, so it is an ordinary error; any
// other tool may have acted, so its outcome is unknown.
func safeCall(ctx context.Context, h handler, c *call) (out tool.Outcome, err error) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		if _, pure := pureTools[c.inv.Tool.Name]; pure {
			out, err = fail("internal error in %s: %v", c.inv.Tool.Name, r), nil
			return
		}
		out, err = tool.Outcome{}, unknown(c.inv.Tool.Name, "internal error: %v", r)
	}()
	return h(ctx, c)
}

// notExecuted reports that nothing ran, so the runtime journals a known
// failure instead of an unknown outcome.
func notExecuted(name, reason string) error {
	return fmt.Errorf("built-in tool %s: %s: %w", name, reason, tool.ErrNotExecuted)
}

// unknown wraps tool.ErrUnknownOutcome with what happened, for the
// operator who must resolve the call.
func unknown(name, format string, args ...any) error {
	return fmt.Errorf("built-in tool %s: %s: %w", name, fmt.Sprintf(format, args...), tool.ErrUnknownOutcome)
}

// decode reads the arguments into v, rejecting unknown fields. The runtime
// has validated them already; this catches a caller that did not.
func (c *call) decode(v any) error {
	raw := bytes.TrimSpace(c.inv.Arguments)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		raw = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("invalid arguments for %s: %w", c.inv.Tool.Name, err)
	}
	return nil
}

// fail is an ordinary tool error: its text goes to the model.
func fail(format string, args ...any) tool.Outcome {
	return tool.Outcome{Output: "error: " + fmt.Sprintf(format, args...)}
}

// ok is a successful text result.
func ok(text string) tool.Outcome { return tool.Outcome{Output: text, Success: true} }

// okJSON is a successful structured result, encoded without HTML escaping
// so that <, > and & stay readable.
func okJSON(v any) tool.Outcome {
	s, err := encodeJSON(v, "")
	if err != nil {
		return fail("cannot encode the result: %v", err)
	}
	return ok(s)
}

// encodeJSON encodes v with the given indentation and no trailing newline.
func encodeJSON(v any, indent string) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if indent != "" {
		enc.SetIndent("", indent)
	}
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(buf.String(), "\n"), nil
}

// argError turns a decoding failure into a known failure: nothing ran.
func argError(err error) tool.Outcome { return fail("%v", err) }

// capOutput cuts s to at most max bytes on a rune boundary, saying so.
func capOutput(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("\n[output truncated: %d of %d bytes shown]", cut, len(s))
}

// headTail keeps the first and last bytes of a stream, so a long command
// output still shows how it started and how it ended, in bounded memory:
// the first half of limit in head, the last half in tail.
type headTail struct {
	mu    sync.Mutex
	limit int
	head  []byte
	tail  *tailbuf.Buffer
	total int64
}

func newHeadTail(limit int) *headTail {
	return &headTail{limit: limit, tail: tailbuf.New(limit - limit/2)}
}

// Write never fails, so the producer is never blocked by the cap.
func (h *headTail) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n0 := len(p)
	h.total += int64(n0)
	headCap := h.limit / 2
	if n := headCap - len(h.head); n > 0 {
		take := min(n, len(p))
		h.head = append(h.head, p[:take]...)
		p = p[take:]
	}
	if len(p) > 0 {
		_, _ = h.tail.Write(p)
	}
	return n0, nil
}

// String returns the kept text (valid UTF-8) and whether bytes were left
// out.
func (h *headTail) String() (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	tail := h.tail.Bytes()
	kept := int64(len(h.head) + len(tail))
	if kept >= h.total {
		return strings.ToValidUTF8(string(h.head)+string(tail), "\uFFFD"), false
	}
	// Cut at rune boundaries so the marker does not split a character.
	head := h.head
	for i := 0; i < 3 && len(head) > 0 && !utf8.Valid(head); i++ {
		head = head[:len(head)-1]
	}
	for i := 0; i < 3 && len(tail) > 0 && !utf8.RuneStart(tail[0]); i++ {
		tail = tail[1:]
	}
	s := string(head) + fmt.Sprintf("\n[… %d bytes omitted …]\n", h.total-kept) + string(tail)
	return strings.ToValidUTF8(s, "\uFFFD"), true
}

// logWriter copies tool output to the run's log without ever failing or
// interleaving two writes, so a broken log cannot break the tool.
type logWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *logWriter) Write(p []byte) (int, error) {
	if l == nil || l.w == nil {
		return len(p), nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = l.w.Write(p)
	return len(p), nil
}

// errText is the innermost message of err, without Go's operation and
// absolute-path prefixes, for messages the model reads.
func errText(err error) string {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err.Error()
		}
		err = u
	}
}
