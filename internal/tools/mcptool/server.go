package mcptool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/nexa-run/nexa/internal/state"
	"github.com/nexa-run/nexa/internal/tool"
	"io"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MetaIdempotencyKey is the `_meta` key of every tools/call request that
// carries the invocation's idempotency key, RUN_ID:CALL_ID, so a server can
// drop a duplicate side effect when an idempotent call runs again after a
// crash (docs/reference/runtime.md#idempotency-key).
const MetaIdempotencyKey = "nexa/idempotency_key"

// Defaults of Options.
const (
	DefaultConnectTimeout = 60 * time.Second
	DefaultStopGrace      = 2 * time.Second
	DefaultClientName     = "nexa"
	DefaultClientVersion  = "dev"
)

// Options configure how servers are started and reached. The zero value
// works.
type Options struct {
	// WorkDir is the working directory of stdio children: the run's
	// working directory, so relative paths in a spec ("stdio:python3
	// server.py") mean what they mean to the author of the run.
	WorkDir string
	// Env are extra KEY=VALUE entries for stdio children, on top of the
	// safe defaults of toolenv.MCP and below the spec's own assignments
	// (later entries win). Nothing else of nexa's environment reaches a
	// child.
	Env []string
	// Secret resolves a $NAME in a spec's VAR=value assignment: the
	// program's tool secrets (never a provider key). Nil resolves nothing,
	// so a spec that refers to a secret fails to start.
	Secret func(name string) (string, bool)
	// Log receives what stdio children write to stderr, and SDK warnings.
	// It may be written from several goroutines (one per server); nil
	// discards it (the last 4 KiB are still kept for error messages).
	Log io.Writer
	// ClientName and ClientVersion identify nexa in the MCP handshake.
	ClientName    string
	ClientVersion string
	// ConnectTimeout bounds starting, initializing and listing tools when
	// ctx has no earlier deadline (default DefaultConnectTimeout; a
	// first `npx -y` may have to download its package).
	ConnectTimeout time.Duration
	// StopGrace is how long Close waits for a stdio child to exit after
	// its stdin is closed, and again after SIGTERM, before SIGKILL
	// (default DefaultStopGrace).
	StopGrace time.Duration
	// HTTPClient is used for Streamable HTTP servers, for example to add
	// authentication (default: a client on a clone of
	// http.DefaultTransport). It is copied and its transport wrapped;
	// when that transport is an *http.Transport, tool calls use a clone
	// without keep-alives (see the package documentation), otherwise a
	// lost call may be reported unknown where it did not run. Its idle
	// connections are closed after a failed call and at Close.
	HTTPClient *http.Client
}

func (o Options) withDefaults() Options {
	if o.ClientName == "" {
		o.ClientName = DefaultClientName
	}
	if o.ClientVersion == "" {
		o.ClientVersion = DefaultClientVersion
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	if o.StopGrace <= 0 {
		o.StopGrace = DefaultStopGrace
	}
	return o
}

// Server is one connected MCP server and the tools it listed when it was
// connected. Its methods are safe for concurrent use.
type Server struct {
	spec  Spec
	opts  Options
	sess  *mcp.ClientSession
	child *child       // stdio only
	http  *http.Client // HTTP only
	// callerDeadline says that the caller's deadline, not ConnectTimeout,
	// bounded the connect.
	callerDeadline bool
	// sessDone is closed when the session's connection has ended.
	sessDone chan struct{}

	tools  []ToolInfo
	byName map[string]int
	hash   string

	mu       sync.Mutex
	closed   bool
	nextCall uint64
	inflight map[uint64]context.CancelCauseFunc

	closeOnce sync.Once
	closeErr  error
}

// errServerClosing is the cause of calls cancelled by Close.
var errServerClosing = errors.New("nexa closed the MCP server while the call was in flight")

// Connect starts (stdio) or reaches (HTTP) the server of spec, performs the
// MCP handshake and lists its tools, all pages. On any failure nothing is
// left running.
func Connect(ctx context.Context, spec Spec, opts Options) (*Server, error) {
	opts = opts.withDefaults()
	// Which bound ends a connect that gets no answer, for the message.
	byCaller := false
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < opts.ConnectTimeout {
		byCaller = true
	}
	ctx, cancel := context.WithTimeout(ctx, opts.ConnectTimeout)
	defer cancel()

	s := &Server{spec: spec, opts: opts, callerDeadline: byCaller, sessDone: make(chan struct{}), byName: map[string]int{}, inflight: map[uint64]context.CancelCauseFunc{}}
	var transport mcp.Transport
	switch spec.Transport {
	case TransportStdio:
		ch, err := startChild(spec, opts)
		if err != nil {
			where := ""
			if opts.WorkDir != "" {
				where = " in " + opts.WorkDir
			}
			return nil, fmt.Errorf("mcptool: start MCP server %s%s: %w", spec, where, err)
		}
		s.child = ch
		transport = taskTransport{&mcp.IOTransport{Reader: ch.stdout, Writer: ch.stdin}}
	case TransportHTTP:
		hc := &http.Client{}
		if opts.HTTPClient != nil {
			c := *opts.HTTPClient
			hc = &c
		}
		base := hc.Transport
		if base == nil {
			// A pool of our own: Call drops its idle connections
			// after a failure, which must not disturb other users
			// of http.DefaultTransport.
			if dt, ok := http.DefaultTransport.(*http.Transport); ok {
				base = dt.Clone()
			} else {
				base = http.DefaultTransport
			}
		}
		creds, err := resolveOAuth(spec, opts.Secret)
		if err != nil {
			return nil, fmt.Errorf("mcptool: MCP server %s: client credentials: %w", spec, err)
		}
		s.http = hc
		// From the SDK down: task answers rewritten (tasks_http.go),
		// the bearer token added (auth.go), the call traced, the
		// connection opened. The token endpoint is reached on base
		// directly, never traced as a call.
		hc.Transport = taskRewriter{newAuthTransport(newTracingTransport(base), spec.URL, creds, &http.Client{Transport: base})}
		transport = &mcp.StreamableClientTransport{
			Endpoint:   spec.URL,
			HTTPClient: hc,
			// nexa needs no server-initiated messages, and a
			// standing GET that reconnects forever only hides a
			// dead server.
			DisableStandaloneSSE: true,
		}
	default:
		return nil, fmt.Errorf("mcptool: MCP server %q: unknown transport %q", spec.Raw, spec.Transport)
	}

	var handler slog.Handler = slog.DiscardHandler
	if opts.Log != nil {
		handler = slog.NewTextHandler(opts.Log, &slog.HandlerOptions{Level: slog.LevelWarn})
	}
	// Both transports can follow a task: taskConn (stdio) and
	// taskRewriter (HTTP) hand its answer to Call, so every call declares
	// the Tasks extension.
	caps := &mcp.ClientCapabilities{}
	caps.AddExtension(ExtTasks, map[string]any{})
	client := mcp.NewClient(&mcp.Implementation{Name: opts.ClientName, Version: opts.ClientVersion}, &mcp.ClientOptions{
		// No roots, sampling or elicitation: nexa offers nothing to the
		// server, and a server must not narrow its own configuration
		// to an empty root list. Only the Tasks extension, which nexa
		// follows on both transports.
		Capabilities: caps,
		Logger:       slog.New(handler),
		// An input request is never answered behind the run's back.
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
	})
	if err := registerTaskMethods(client); err != nil {
		return nil, s.abort("set up the Tasks extension", err)
	}
	sess, err := client.Connect(ctx, transport, nil)
	if err != nil {
		return nil, s.abort("connect", err)
	}
	s.sess = sess
	go func() {
		_ = sess.Wait()
		close(s.sessDone)
	}()

	for t, err := range sess.Tools(ctx, nil) {
		if err != nil {
			return nil, s.abort("list tools", err)
		}
		if t == nil {
			continue
		}
		info, err := toolInfo(t, spec.TrustAnnotations)
		if err != nil {
			return nil, s.abort("list tools", err)
		}
		if _, dup := s.byName[info.Name]; dup {
			return nil, s.abort("list tools", fmt.Errorf("tool %q is listed twice", info.Name))
		}
		s.tools = append(s.tools, info)
		s.byName[info.Name] = len(s.tools) - 1
	}
	sort.Slice(s.tools, func(i, j int) bool { return s.tools[i].Name < s.tools[j].Name })
	for i, t := range s.tools {
		s.byName[t.Name] = i
	}
	s.hash = schemaHash(s.tools)
	return s, nil
}

// abort stops whatever Connect started and describes the failure, with the
// child's exit status and the end of its stderr when there is one.
func (s *Server) abort(stage string, err error) error {
	var detail string
	if s.child != nil {
		exited := waitFor(s.child.exited, 300*time.Millisecond)
		if exited {
			detail = "; the server process ended (" + s.child.status() + ")"
		}
		if tail := s.child.stderrTail(); tail != "" {
			detail += "; its stderr ends with: " + lastLines(tail, 10)
		}
	}
	if s.sess != nil {
		go s.sess.Close() // unblocks on the kill below; never waited for
	}
	if s.child != nil {
		s.child.signalGroup(syscall.SIGKILL)
		_ = s.child.stop(s.opts.StopGrace)
	}
	if s.http != nil {
		s.http.CloseIdleConnections()
	}
	var ae *AuthError
	if errors.As(err, &ae) {
		// Which request of the handshake met it says nothing useful.
		return fmt.Errorf("mcptool: MCP server %s: %w", s.spec, ae)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		if s.callerDeadline {
			detail += fmt.Sprintf("; no answer before the run's deadline (is it an MCP server on %s?)", s.spec.Transport)
		} else {
			detail += fmt.Sprintf("; no answer within the connect timeout of %s (is it an MCP server on %s?)", s.opts.ConnectTimeout, s.spec.Transport)
		}
	}
	return fmt.Errorf("mcptool: MCP server %s: %s: %w%s", s.spec, stage, err, detail)
}

// Spec returns the spec the server was connected with.
func (s *Server) Spec() Spec { return s.spec }

// Info returns the server's self-reported name and version, for messages.
func (s *Server) Info() (name, version string) {
	if s.sess == nil {
		return "", ""
	}
	if r := s.sess.InitializeResult(); r != nil && r.ServerInfo != nil {
		return r.ServerInfo.Name, r.ServerInfo.Version
	}
	return "", ""
}

// ProtocolVersion is the MCP revision agreed with the server: through
// server/discover for the stateless revisions (2026-07-28 on), else through
// the initialize handshake of the earlier ones the SDK speaks.
func (s *Server) ProtocolVersion() string {
	if s.sess == nil {
		return ""
	}
	if r := s.sess.InitializeResult(); r != nil {
		return r.ProtocolVersion
	}
	return ""
}

// Tools returns the server's tools sorted by name, as listed at Connect.
// The slice is a copy; the schemas must not be modified.
func (s *Server) Tools() []ToolInfo {
	return append([]ToolInfo(nil), s.tools...)
}

// Tool returns the named tool and whether the server offers it.
func (s *Server) Tool(name string) (ToolInfo, bool) {
	i, ok := s.byName[name]
	if !ok {
		return ToolInfo{}, false
	}
	return s.tools[i], true
}

// SchemaHash is "sha256:<hex>" over the canonical encoding of the tool list
// (names, descriptions, schemas, annotation hints, sorted by name). A run
// records it and a resume compares it, refusing when the server now offers
// different tools.
func (s *Server) SchemaHash() string { return s.hash }

// CallOptions are what a call carries besides its tool and arguments.
type CallOptions struct {
	// IdempotencyKey, when not empty, travels in _meta under
	// MetaIdempotencyKey.
	IdempotencyKey string
	// Timeout bounds the tools/call request (zero: only ctx does). A task
	// the server answers with is bounded by Deadline instead.
	Timeout time.Duration
	// Deadline is the run's deadline (zero: none): when it passes while
	// nexa polls a task, the task is cancelled.
	Deadline time.Time
	// Stop, when closed, makes nexa stop polling a task (tool.ErrDetached).
	Stop <-chan struct{}
	// Handed saves a task's id before nexa polls it
	// (tool.Invocation.Handed); an error from it is returned as is.
	Handed func(taskID string) error
	// Input, when set, is the answered input round of an earlier
	// attempt: the call carries its responses and request state
	// (tool.Invocation.Input).
	Input *state.InputRound
}

// Call runs one tool. A known result is an Outcome (Success false for
// isError or a JSON-RPC error answer). Otherwise the error wraps
// tool.ErrNotExecuted when the request cannot have reached the server
// (closed or exited server, unknown tool, bad arguments, connection
// refused), and tool.ErrUnknownOutcome when it may have: the server or
// the connection died, or ctx ended (timeout), while the call was in
// flight. A non-empty idempotencyKey travels in _meta under
// MetaIdempotencyKey.
func (s *Server) Call(ctx context.Context, name string, args json.RawMessage, idempotencyKey string) (tool.Outcome, error) {
	return s.CallWith(ctx, name, args, CallOptions{IdempotencyKey: idempotencyKey})
}

// CallWith is Call with options. When the server answers with a task
// (the Tasks extension, offered on both transports), its id goes to
// o.Handed first, then the task is polled until it ends (see awaitTask).
func (s *Server) CallWith(ctx context.Context, name string, args json.RawMessage, o CallOptions) (tool.Outcome, error) {
	if _, ok := s.byName[name]; !ok {
		return tool.Outcome{}, fmt.Errorf("mcptool: MCP server %s offers no tool %q (it offers %s): %w", s.spec, name, s.toolList(), tool.ErrNotExecuted)
	}
	arguments, err := callArguments(args)
	if err != nil {
		return tool.Outcome{}, fmt.Errorf("mcptool: tool %s of MCP server %s: %w: %w", name, s.spec, err, tool.ErrNotExecuted)
	}
	if err := ctx.Err(); err != nil {
		return tool.Outcome{}, fmt.Errorf("mcptool: tool %s of MCP server %s not called: %w: %w", name, s.spec, context.Cause(ctx), tool.ErrNotExecuted)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	id, err := s.begin(cancel)
	if err != nil {
		return tool.Outcome{}, fmt.Errorf("mcptool: tool %s: %w", name, err)
	}
	defer s.end(id)

	rctx := ctx
	if o.Timeout > 0 {
		var rcancel context.CancelFunc
		rctx, rcancel = context.WithTimeoutCause(ctx, o.Timeout, timeoutCause(o.Timeout))
		defer rcancel()
	}
	params := &mcp.CallToolParams{Name: name, Arguments: arguments}
	params.Meta = mcp.Meta{metaClientCapabilities: s.callCapabilities()}
	if o.IdempotencyKey != "" {
		params.Meta[MetaIdempotencyKey] = o.IdempotencyKey
	}
	if o.Input != nil {
		// The retry of a call whose server asked for input: the same
		// request, with the person's answers and the server's state
		// exactly as it sent it (none when it sent none).
		responses, err := inputResponses(o.Input)
		if err != nil {
			return tool.Outcome{}, fmt.Errorf("mcptool: tool %s of MCP server %s: %w: %w", name, s.spec, err, tool.ErrNotExecuted)
		}
		params.InputResponses, params.RequestState = responses, o.Input.RequestState
	}
	var res *mcp.CallToolResult
	for try := 0; ; try++ {
		tr := &callTrace{cancel: cancel}
		res, err = s.sess.CallTool(withTrace(rctx, tr), params)
		if err == nil && res == nil {
			err = errors.New("empty result")
		}
		if err != nil {
			if s.http != nil {
				s.http.CloseIdleConnections()
			}
			return s.classify(rctx, name, tr, err)
		}
		if !res.NeedsInput() || len(res.InputRequests) > 0 || try >= loadSheddingRetries || !s.offersInput() {
			break
		}
		// input_required with nothing to ask: the server wants the
		// request again (with its state, if any), which needs nobody.
		params.InputResponses, params.RequestState = nil, res.RequestState
	}
	t, isTask, err := taskOf(res)
	if err != nil {
		return tool.Outcome{}, fmt.Errorf("mcptool: tool %s of MCP server %s: unreadable task answer (%v); whether it took effect is unknown: %w", name, s.spec, err, tool.ErrUnknownOutcome)
	}
	if !isTask {
		if res.NeedsInput() {
			return s.inputOutcome(name, res), nil
		}
		return s.outcome(name, res), nil
	}
	if o.Handed != nil {
		if err := o.Handed(t.TaskID); err != nil {
			return tool.Outcome{}, err
		}
	}
	return s.awaitTask(ctx, name, t, o)
}

// Resume polls the task of an earlier call (its id saved through
// CallOptions.Handed) until it ends, as CallWith does after its answer.
func (s *Server) Resume(ctx context.Context, name, taskID string, o CallOptions) (tool.Outcome, error) {
	if err := ctx.Err(); err != nil {
		return tool.Outcome{}, fmt.Errorf("mcptool: tool %s of MCP server %s: task %s not polled: %v: %w", name, s.spec, taskID, context.Cause(ctx), tool.ErrDetached)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	id, err := s.begin(cancel)
	if err != nil {
		return tool.Outcome{}, fmt.Errorf("mcptool: tool %s: task %s not polled: %v: %w", name, taskID, err, tool.ErrDetached)
	}
	defer s.end(id)
	t, err := s.getTask(ctx, taskID)
	if err != nil {
		return s.pollFailed(ctx, name, taskState{TaskID: taskID}, err)
	}
	return s.awaitTask(ctx, name, t, o)
}

// outcome turns a tools/call result into the outcome the model sees: the
// text of its content, its structured content checked against the tool's
// output schema, isError as a failed call.
func (s *Server) outcome(name string, res *mcp.CallToolResult) tool.Outcome {
	if res.NeedsInput() {
		// A task's result: input is asked for in the task's own
		// status, which nexa does not answer (awaitTask).
		return tool.Outcome{Output: fmt.Sprintf("error: MCP tool %s asked for input in the result of its task, which nexa does not answer; the call did not complete", name)}
	}
	info, _ := s.Tool(name)
	out := structuredOutcome(info, res)
	if res.IsError && strings.TrimSpace(out.Output) == "" {
		out.Output = fmt.Sprintf("MCP tool %s reported an error without a message", name)
	}
	return out
}

// classify turns a failed tools/call into a known error answer, "not
// executed" or "unknown outcome".
func (s *Server) classify(ctx context.Context, name string, tr *callTrace, err error) (tool.Outcome, error) {
	var werr *jsonrpc.Error
	if ctx.Err() == nil && errors.As(err, &werr) && !localCode(werr.Code) {
		// The server answered with a JSON-RPC error: it handled the
		// request and said no (unknown tool, invalid arguments…).
		return tool.Outcome{Output: fmt.Sprintf("MCP server %s answered tool %s with an error: %s (code %d)", s.spec, name, werr.Message, werr.Code)}, nil
	}
	if errors.Is(err, ErrAuthRequired) {
		// The server refused the request before handling it.
		return tool.Outcome{}, fmt.Errorf("mcptool: tool %s of MCP server %s not called: %w: %w", name, s.spec, err, tool.ErrNotExecuted)
	}
	if s.spec.Transport == TransportHTTP && !tr.mayHaveReached() {
		return tool.Outcome{}, fmt.Errorf("mcptool: tool %s: could not reach MCP server %s: %w: %w", name, s.spec, err, tool.ErrNotExecuted)
	}
	if errors.Is(err, mcp.ErrSessionMissing) {
		// HTTP 404 for our session id: the server no longer knows the
		// session (it restarted) and must not have handled the call.
		return tool.Outcome{}, fmt.Errorf("mcptool: tool %s: MCP server %s no longer knows this session (did it restart?): %w: %w", name, s.spec, err, tool.ErrNotExecuted)
	}
	cause := context.Cause(ctx)
	var reason string
	switch {
	case ctx.Err() != nil && errors.Is(cause, errStreamBroken):
		reason = cause.Error()
	case ctx.Err() != nil && errors.Is(cause, errServerClosing):
		reason = cause.Error()
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		reason = "the call timed out (" + cause.Error() + ")"
	case ctx.Err() != nil:
		reason = "the call was cancelled (" + cause.Error() + ")"
	case s.child != nil && waitFor(s.child.exited, 500*time.Millisecond):
		reason = "the MCP server process exited while the call was in flight (" + s.child.status() + ")"
		if tail := s.child.stderrTail(); tail != "" {
			reason += "; its stderr ends with: " + lastLines(tail, 5)
		}
	case errors.Is(err, mcp.ErrConnectionClosed):
		reason = "the connection to the MCP server closed while the call was in flight"
	default:
		reason = "the call failed after its request was sent"
	}
	return tool.Outcome{}, fmt.Errorf("mcptool: tool %s of MCP server %s: %s; whether it took effect is unknown: %w: %w", name, s.spec, reason, tool.ErrUnknownOutcome, err)
}

// localCode reports whether a JSON-RPC error code is one the SDK makes up
// locally for a closing or failing connection, not a server's answer.
func localCode(code int64) bool {
	switch code {
	case -32001, -32003, -32004, -32005: // unknown, client closing, server closing, rejected by transport
		return true
	}
	return false
}

// begin registers a call, or refuses it when the server cannot take it.
func (s *Server) begin(cancel context.CancelCauseFunc) (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, fmt.Errorf("MCP server %s is closed: %w", s.spec, tool.ErrNotExecuted)
	}
	if waitFor(s.sessDone, 0) || (s.child != nil && s.child.hasExited()) {
		reason := "its connection has ended"
		if s.child != nil && s.child.hasExited() {
			reason = "its process exited (" + s.child.status() + ")"
			if tail := s.child.stderrTail(); tail != "" {
				reason += "; its stderr ends with: " + lastLines(tail, 5)
			}
		}
		return 0, fmt.Errorf("MCP server %s is gone: %s: %w", s.spec, reason, tool.ErrNotExecuted)
	}
	s.nextCall++
	s.inflight[s.nextCall] = cancel
	return s.nextCall, nil
}

func (s *Server) end(id uint64) {
	s.mu.Lock()
	delete(s.inflight, id)
	s.mu.Unlock()
}

// Close ends the session: calls still in flight are cancelled (their
// outcome is unknown), an HTTP session is deleted, and a stdio child gets
// EOF on stdin, then SIGTERM, then SIGKILL, each sent to its whole process
// group. It returns an error only when the child could not be stopped or
// the session would not close. Close is idempotent.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		cancels := make([]context.CancelCauseFunc, 0, len(s.inflight))
		for _, c := range s.inflight {
			cancels = append(cancels, c)
		}
		s.mu.Unlock()
		for _, c := range cancels {
			c(errServerClosing)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = s.sess.Close() // errors of a connection being torn down say nothing useful
		}()
		var errs []error
		if s.child != nil {
			if err := s.child.stop(s.opts.StopGrace); err != nil {
				errs = append(errs, err)
			}
		}
		if !waitFor(done, s.opts.StopGrace+5*time.Second) {
			errs = append(errs, errors.New("the MCP session did not close"))
		}
		if s.http != nil {
			s.http.CloseIdleConnections() // our own pool: nothing else uses it
		}
		if len(errs) > 0 {
			s.closeErr = fmt.Errorf("mcptool: close MCP server %s: %w", s.spec, errors.Join(errs...))
		}
	})
	return s.closeErr
}

// toolList names the offered tools for messages.
func (s *Server) toolList() string {
	if len(s.tools) == 0 {
		return "no tools"
	}
	names := make([]string, len(s.tools))
	for i, t := range s.tools {
		names[i] = t.Name
	}
	return strings.Join(names, ", ")
}

// callArguments checks that args are a JSON object (empty means {}).
func callArguments(args json.RawMessage) (json.RawMessage, error) {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return json.RawMessage("{}"), nil
	}
	if trimmed[0] != '{' || !json.Valid(trimmed) {
		return nil, errors.New("arguments must be a JSON object")
	}
	return json.RawMessage(trimmed), nil
}

// lastLines returns the last n lines of s, joined with " | " so a message
// stays on one line.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	return strings.Join(lines, " | ")
}
