package pytool

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/nexa-run/nexa/internal/tool"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"strings"
	"syscall"
	"time"

	"github.com/nexa-run/nexa/internal/ir"
	"github.com/nexa-run/nexa/internal/proctree"
	"github.com/nexa-run/nexa/internal/sandbox"
	"github.com/nexa-run/nexa/internal/tailbuf"
)

// bootstrap is the fixed Python program every call runs (see doc.go).
//
//go:embed bootstrap.py
var bootstrap string

// DefaultPython is the interpreter used when Options.Python is empty.
const DefaultPython = "python3"

const (
	defaultExitGrace = 2 * time.Second
	// drainWait bounds how long we wait for the pipes to reach EOF once
	// the process group is dead (a process that escaped the group may still
	// hold them).
	drainWait = 2 * time.Second
	// maxResult bounds the result channel; a larger result is an error
	// outcome rather than unbounded memory.
	maxResult = 64 << 20
	// tailSize is how much of the log we keep to explain a failed start.
	tailSize = 2048
)

// ErrNotStarted is matched (errors.Is) by every error that means no user
// code ran, so the runtime can journal the call as not executed instead of
// unknown. It never wraps tool.ErrUnknownOutcome.
var ErrNotStarted = errors.New("python tool not started")

// ErrSandboxUnavailable is matched (errors.Is) when a tool asks for
// `sandbox: true` and no isolation backend works (none configured in
// Options.Sandbox, or its detection failed): a sandboxed tool must never run
// unsandboxed. The runtime maps it to sandbox_unavailable. Such an error
// also matches ErrNotStarted and, when detection failed,
// sandbox.ErrUnavailable, whose message says how to install bubblewrap.
var ErrSandboxUnavailable = errors.New("sandbox unavailable")

// StartError reports that a call did not run any user code. Besides
// errors.Is(err, ErrNotStarted), packages that cannot import pytool (the
// runtime: pytool imports it) can detect it through its methods:
//
//	var ns interface{ NotStarted() bool }
//	if errors.As(err, &ns) && ns.NotStarted() { … }
type StartError struct {
	// Tool is the tool's name.
	Tool string
	// Reason says what went wrong, for the user.
	Reason string
	// Err is the underlying cause, if any.
	Err error

	sandbox bool
}

// Error describes the failure; it names no argument or secret values.
func (e *StartError) Error() string {
	msg := fmt.Sprintf("python tool %s not started: %s", e.Tool, e.Reason)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap exposes the cause.
func (e *StartError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrNotStarted), errors.Is(err,
// tool.ErrNotExecuted) (and ErrSandboxUnavailable for a sandbox refusal)
// true.
func (e *StartError) Is(target error) bool {
	return target == ErrNotStarted || target == tool.ErrNotExecuted || (e.sandbox && target == ErrSandboxUnavailable)
}

// NotStarted reports true: no user code ran.
func (e *StartError) NotStarted() bool { return true }

// SandboxUnavailable reports whether the call was refused because it needs a
// sandbox that is not available.
func (e *StartError) SandboxUnavailable() bool { return e.sandbox }

// Options configures an Executor.
type Options struct {
	// Python is the interpreter: a name looked up in PATH or a path (the
	// CLI passes NEXA_PYTHON). Empty means "python3".
	Python string
	// Env is the base environment of every child; nil means the current
	// process environment at the time of each call. The NEXA_* call
	// variables are added on top.
	Env []string
	// ExitGrace is how long the interpreter may take to exit after it
	// delivered its result before its process group is killed (atexit
	// handlers, flushing). Zero means 2s.
	ExitGrace time.Duration
	// Sandbox returns the isolation backend for tools declared
	// `sandbox: true`; it is called for every such call (the CLI passes
	// sandbox.Detect, which caches its answer). Nil, or an error, means
	// those tools are refused with ErrSandboxUnavailable and never run.
	// Tools without `sandbox: true` never use it.
	Sandbox func() (*sandbox.Bwrap, error)
	// Protected are nexa's own files (the run store and its siblings, the
	// .nexa directory, secrets files) and the files nexa runs later (the
	// program, legacy tool files): a sandboxed call can neither read nor
	// change them, even inside its writable working directory. The CLI
	// passes what it knows from where it opened the store. The zero value
	// protects nothing.
	Protected sandbox.Protected
	// NoWarm turns the warm path off: every unsandboxed call then starts
	// its own interpreter, as sandboxed calls always do. By default (false)
	// unsandboxed calls are forked from a warm interpreter (a zygote, one
	// per working directory and environment) that never runs user code,
	// which saves the interpreter's start-up on every call but the first
	// with the same isolation (see the package documentation). Turn it off
	// to measure the difference or if forking is unwelcome; the zero
	// Options keep the fast path because existing callers should get it
	// without a change.
	NoWarm bool
}

// Executor runs Python tools, one process per call. It is safe for
// concurrent use. Call Close when the run is over: it stops the warm
// interpreters (they also stop by themselves when this process exits).
type Executor struct {
	python  string
	env     []string
	hasEnv  bool
	grace   time.Duration
	sandbox func() (*sandbox.Bwrap, error)
	protect sandbox.Protected
	// zygotes serves unsandboxed calls; nil with Options.NoWarm.
	zygotes *zygoteSet
	// expireAt, when set (by this package's tests only), replaces the
	// wall-clock timer of Invocation.Timeout, so a test can make the
	// timeout pass at a known point of the tool's run instead of hoping
	// the interpreter starts within it.
	expireAt func(inv tool.Invocation) <-chan time.Time
}

var _ tool.Executor = (*Executor)(nil)

// New returns an Executor for opts. It does not look for the interpreter
// yet: a missing interpreter is reported by the first call, as a
// StartError.
func New(opts Options) *Executor {
	python := opts.Python
	if python == "" {
		python = DefaultPython
	}
	// A relative path with a separator would otherwise be resolved against
	// each call's working directory.
	if strings.ContainsRune(python, filepath.Separator) && !filepath.IsAbs(python) {
		if abs, err := filepath.Abs(python); err == nil {
			python = abs
		}
	}
	grace := opts.ExitGrace
	if grace <= 0 {
		grace = defaultExitGrace
	}
	e := &Executor{python: python, grace: grace, sandbox: opts.Sandbox, protect: opts.Protected}
	if opts.Env != nil {
		e.env = append([]string(nil), opts.Env...)
		e.hasEnv = true
	}
	if !opts.NoWarm {
		e.zygotes = newZygoteSet(python, bootstrap)
		// An Executor dropped without Close must not keep its zygotes
		// until the process exits.
		goruntime.AddCleanup(e, func(s *zygoteSet) { go s.close() }, e.zygotes)
	}
	return e
}

// Close stops the executor's warm interpreters and waits (briefly) for them
// to exit, so that none outlives the run. A call still in flight on one of
// them is killed and ends as an unknown outcome, so call Close once no call
// is running. Calls made after Close still work: they start one interpreter
// each. Close is idempotent and always returns nil; the error is there for
// io.Closer.
func (e *Executor) Close() error {
	if e.zygotes != nil {
		e.zygotes.close()
	}
	return nil
}

// request is the JSON message the bootstrap reads from stdin.
type request struct {
	Kind      string                     `json:"kind"`
	Source    string                     `json:"source"`
	Function  string                     `json:"function"`
	Params    []string                   `json:"params"`
	Arguments map[string]json.RawMessage `json:"arguments"`
	Secrets   map[string]string          `json:"secrets"`
	// CloseFDs asks the bootstrap to close every inherited descriptor
	// it does not use before user code runs (sandboxed calls).
	CloseFDs bool `json:"close_fds,omitempty"`
	// Environ (base64 of the NUL-separated NAME=value call variables) and
	// Cwd are what a call forked by a zygote applies before anything else:
	// the zygote's own environment is the call's but for these variables.
	Environ string `json:"environ,omitempty"`
	Cwd     string `json:"cwd,omitempty"`
}

// record is one line of the result channel.
type record struct {
	Event   string  `json:"event"`
	OK      *bool   `json:"ok"`
	Output  string  `json:"output"`
	Error   string  `json:"error"`
	Unknown bool    `json:"unknown"`
	Message string  `json:"message"`
	Fatal   *string `json:"fatal"`
}

// ReachesStore is true for a tool that runs unsandboxed: its code runs
// with the user's rights. A sandboxed tool runs isolated or not at all,
// and the sandbox hides the store.
func (e *Executor) ReachesStore(t *ir.Tool) bool { return t == nil || !t.Sandbox }

// Execute runs one call of a Python tool. See the package documentation for
// how each way a call can end maps to an Outcome or an error.
func (e *Executor) Execute(ctx context.Context, inv tool.Invocation) (tool.Outcome, error) {
	if inv.Tool == nil {
		return tool.Outcome{}, &StartError{Tool: "?", Reason: "invocation has no tool"}
	}
	name := inv.Tool.Name
	if err := supported(); err != nil {
		return tool.Outcome{}, &StartError{Tool: name, Reason: err.Error()}
	}
	var box *sandbox.Bwrap
	if inv.Tool.Sandbox {
		b, err := e.sandboxBackend()
		if err != nil {
			return tool.Outcome{}, &StartError{Tool: name, sandbox: true,
				Reason: "the tool requires a sandbox (sandbox: true) and no isolation backend works here; it was not run unsandboxed", Err: err}
		}
		box = b
	}
	req, err := buildRequest(inv)
	if err != nil {
		return tool.Outcome{}, &StartError{Tool: name, Reason: "invalid call", Err: err}
	}
	req.CloseFDs = box != nil
	if box == nil && e.zygotes != nil {
		if out, ok, err := e.runWarm(ctx, inv, req); ok {
			return out, err
		}
	}
	payload, err := json.Marshal(req)
	if err != nil {
		return tool.Outcome{}, &StartError{Tool: name, Reason: "encode request", Err: err}
	}
	if err := ctx.Err(); err != nil {
		return tool.Outcome{}, &StartError{Tool: name, Reason: contextReason(ctx, inv), Err: err}
	}
	return e.run(ctx, inv, payload, box)
}

// sandboxBackend returns the configured backend or why there is none.
func (e *Executor) sandboxBackend() (*sandbox.Bwrap, error) {
	if e.sandbox == nil {
		return nil, errors.New("this executor has no sandbox backend configured (Options.Sandbox)")
	}
	b, err := e.sandbox()
	if err != nil {
		return nil, err
	}
	if b == nil {
		return nil, errors.New("the sandbox backend detector returned no backend")
	}
	return b, nil
}

// identRE matches a Python identifier of the ASCII kind the compiler
// produces.
var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// pythonKeywords are the hard keywords: they cannot name a parameter.
var pythonKeywords = map[string]bool{
	"False": true, "None": true, "True": true, "and": true, "as": true, "assert": true,
	"async": true, "await": true, "break": true, "class": true, "continue": true,
	"def": true, "del": true, "elif": true, "else": true, "except": true,
	"finally": true, "for": true, "from": true, "global": true, "if": true,
	"import": true, "in": true, "is": true, "lambda": true, "nonlocal": true,
	"not": true, "or": true, "pass": true, "raise": true, "return": true,
	"try": true, "while": true, "with": true, "yield": true,
}

func buildRequest(inv tool.Invocation) (*request, error) {
	t := inv.Tool
	args, err := decodeArguments(inv.Arguments)
	if err != nil {
		return nil, err
	}
	secrets := inv.Secrets
	if secrets == nil {
		secrets = map[string]string{}
	}
	req := &request{Function: t.Name, Arguments: args, Secrets: secrets, Params: []string{}}
	switch {
	case t.Body.Kind != "" && t.Body.Kind != ir.BodyPython:
		return nil, fmt.Errorf("tool body is %s, not python", t.Body.Kind)
	case t.Body.PythonFile != "":
		req.Kind = "file"
		req.Source = t.Body.PythonFile
		if !identRE.MatchString(t.Name) || pythonKeywords[t.Name] {
			return nil, fmt.Errorf("tool name %q cannot name a Python function", t.Name)
		}
	default:
		req.Kind = "body"
		req.Source = ir.RemoveMargin(t.Body.Python)
		for _, p := range t.Params {
			if !identRE.MatchString(p.Name) || pythonKeywords[p.Name] {
				return nil, fmt.Errorf("parameter name %q is not usable as a Python parameter", p.Name)
			}
			req.Params = append(req.Params, p.Name)
			if _, ok := args[p.Name]; !ok {
				// The runtime filled defaults (ir.Tool.FillDefaults)
				// before the call; a parameter still missing is None.
				args[p.Name] = json.RawMessage("null")
			}
		}
	}
	return req, nil
}

func decodeArguments(raw json.RawMessage) (map[string]json.RawMessage, error) {
	args := map[string]json.RawMessage{}
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return args, nil
	}
	if trimmed[0] != '{' {
		return nil, errors.New("arguments are not a JSON object")
	}
	if err := json.Unmarshal(trimmed, &args); err != nil {
		return nil, fmt.Errorf("decode arguments: %w", err)
	}
	if args == nil {
		args = map[string]json.RawMessage{}
	}
	return args, nil
}

// baseEnv is what every child's environment starts from: Options.Env, else
// this process's environment now.
func (e *Executor) baseEnv() []string {
	if e.hasEnv {
		return e.env
	}
	return os.Environ()
}

// callEnv is the child's environment: the base plus the call variables,
// which replace any inherited value.
func (e *Executor) callEnv(inv tool.Invocation) []string {
	return childEnv(e.baseEnv(), &inv)
}

// callVars are the variables that differ from call to call, set last in
// the order of childEnv.
var callVars = []string{"NEXA_IDEMPOTENCY_KEY", "NEXA_RUN_ID", "NEXA_CALL_ID"}

// safePathMarker tells the bootstrap that nexa, not the user, set
// PYTHONSAFEPATH. `python -c` puts the working directory first on
// sys.path, and Python 3.13 imports linecache during start-up, before the
// bootstrap can take the directory off: a linecache.py planted there (the
// working directory is writable by sandboxed tools) would run in every
// later interpreter. With PYTHONSAFEPATH (3.11 and later) the directory is
// never on the path; older interpreters ignore the variable and import
// nothing from it before the bootstrap runs. The bootstrap removes both
// again before any tool code, so a tool and what it starts see the user's
// environment.
const safePathMarker = "NEXA_ADDED_PYTHONSAFEPATH"

// hasVar reports whether env sets key.
func hasVar(env []string, key string) bool {
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k == key {
			return true
		}
	}
	return false
}

// childEnv is base with the call variables of inv set (replacing inherited
// values); with a nil inv (a zygote, which serves many calls) they are
// removed instead, and only PYTHONIOENCODING is set. childEnv(base, inv) is
// therefore childEnv(base, nil) plus the last len(callVars) entries.
func childEnv(base []string, inv *tool.Invocation) []string {
	set := map[string]string{
		"NEXA_IDEMPOTENCY_KEY": "",
		"NEXA_RUN_ID":          "",
		"NEXA_CALL_ID":         "",
		// The log is bytes; make sure non-ASCII prints cannot fail.
		"PYTHONIOENCODING": "utf-8:backslashreplace",
		// Only nexa sets the marker (see safePathVars).
		safePathMarker: "",
	}
	if inv != nil {
		set["NEXA_IDEMPOTENCY_KEY"] = inv.IdempotencyKey()
		set["NEXA_RUN_ID"] = inv.RunID
		set["NEXA_CALL_ID"] = inv.CallID
	}
	env := make([]string, 0, len(base)+len(set))
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := set[k]; ok {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "PYTHONIOENCODING="+set["PYTHONIOENCODING"])
	if !hasVar(base, "PYTHONSAFEPATH") {
		env = append(env, "PYTHONSAFEPATH=1", safePathMarker+"=1")
	}
	if inv != nil {
		for _, k := range callVars {
			env = append(env, k+"="+set[k])
		}
	}
	return env
}

// run executes one call; box, when not nil, is the sandbox it must run in.
func (e *Executor) run(ctx context.Context, inv tool.Invocation, payload []byte, box *sandbox.Bwrap) (tool.Outcome, error) {
	name := inv.Tool.Name
	logW := inv.Log
	if logW == nil {
		logW = io.Discard
	}

	logR, logPipeW, err := os.Pipe()
	if err != nil {
		return tool.Outcome{}, &StartError{Tool: name, Reason: "create log pipe", Err: err}
	}
	resR, resPipeW, err := os.Pipe()
	if err != nil {
		logR.Close()
		logPipeW.Close()
		return tool.Outcome{}, &StartError{Tool: name, Reason: "create result pipe", Err: err}
	}

	cmd := exec.Command(e.python, "-u", "-c", bootstrap)
	cmd.Dir = inv.WorkDir
	cmd.Env = e.callEnv(inv)
	cmd.Stdin = bytes.NewReader(payload)
	cmd.Stdout = logPipeW
	cmd.Stderr = logPipeW
	cmd.ExtraFiles = []*os.File{resPipeW} // fd 3
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}

	var startErr error
	if box == nil {
		startErr = proctree.Start(cmd)
	} else {
		startErr = e.startSandboxed(cmd, box, inv)
	}
	// The child holds its own copies; ours must go so EOF can be seen.
	logPipeW.Close()
	resPipeW.Close()
	if startErr != nil {
		logR.Close()
		resR.Close()
		var se *StartError
		if errors.As(startErr, &se) {
			return tool.Outcome{}, se
		}
		return tool.Outcome{}, &StartError{Tool: name, Reason: e.describeStartFailure(startErr, inv.WorkDir), Err: startErr}
	}
	pid := cmd.Process.Pid
	sandboxed := box != nil

	rd := readCall(logR, resR, logW)
	resDone := rd.resDone

	// Learn when the leader exits without reaping it: while it is an
	// unreaped zombie its pid, and so the group id, cannot be reused.
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		proctree.WaitExitNoReap(pid)
	}()

	timer, stopTimer := e.callTimer(inv)
	defer stopTimer()

	killReason := ""
	select {
	case <-exited:
	case <-resDone:
		// Result delivered (or the channel closed): let the interpreter
		// finish its exit, within the grace period.
		g := time.NewTimer(e.grace)
		select {
		case <-exited:
		case <-g.C:
		case <-ctx.Done():
		}
		g.Stop()
	case <-timer:
		killReason = "killed: " + timeoutReason(inv)
	case <-ctx.Done():
		killReason = "killed: " + contextReason(ctx, inv)
	}

	// Whatever happened, nothing of this call may keep running.
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	<-exited
	waitErr := cmd.Wait()

	resHeld := !drain(resR, rd.resDone)
	drain(logR, rd.logDone)

	reason := killReason
	if reason == "" {
		reason = describeExit(cmd.ProcessState, waitErr)
	}
	return callOutcome(name, rd.result, rd.tooLarge, sandboxed, resHeld, reason, rd.tail)
}

// callTimer returns the channel that fires when inv's timeout has passed
// (nil without a timeout) and the function that releases it.
func (e *Executor) callTimer(inv tool.Invocation) (<-chan time.Time, func()) {
	switch {
	case inv.Timeout <= 0:
		return nil, func() {}
	case e.expireAt != nil:
		return e.expireAt(inv), func() {}
	}
	t := time.NewTimer(inv.Timeout)
	return t.C, func() { t.Stop() }
}

// callReader reads one call's pipes: result and tooLarge are set once
// resDone is closed, and the tail once logDone is.
type callReader struct {
	tail             *tailbuf.Buffer
	logDone, resDone chan struct{}
	result           []byte
	tooLarge         bool
}

// readCall copies the tool's output from logR to logW, keeping a tail for
// diagnostics, and reads the result channel resR to EOF.
func readCall(logR, resR *os.File, logW io.Writer) *callReader {
	rd := &callReader{tail: tailbuf.New(tailSize), logDone: make(chan struct{}), resDone: make(chan struct{})}
	go func() {
		defer close(rd.logDone)
		_, _ = io.Copy(io.MultiWriter(lenientWriter{w: logW}, rd.tail), logR)
	}()
	go func() {
		defer close(rd.resDone)
		rd.result, rd.tooLarge = readLimited(resR, maxResult)
	}()
	return rd
}

// callOutcome maps what a call left on its result channel to its outcome;
// both process models share it so that they cannot differ. reason says how
// the process ended, for a call that left no final record. resHeld says the
// channel never reached EOF after the process group was killed: something
// outside the group still held it, which only user code can arrange, and
// what the reader had not read yet (the start record among it) was lost
// when the channel was closed; such a call is never "not started".
func callOutcome(name string, result []byte, tooLarge, sandboxed, resHeld bool, reason string, tail *tailbuf.Buffer) (tool.Outcome, error) {
	started, final := parseRecords(result)
	switch {
	case tooLarge:
		return tool.Outcome{Output: fmt.Sprintf("tool result exceeds %d bytes", maxResult), Success: false, Sandboxed: sandboxed}, nil
	case final != nil && final.Fatal != nil && !started:
		return tool.Outcome{}, &StartError{Tool: name, Reason: *final.Fatal}
	case final != nil && final.Unknown:
		return tool.Outcome{}, fmt.Errorf("python tool %s raised ToolOutcomeUnknown: %s: %w", name, final.Message, tool.ErrUnknownOutcome)
	case final != nil && final.OK != nil && *final.OK:
		return tool.Outcome{Output: final.Output, Success: true, Sandboxed: sandboxed}, nil
	case final != nil && final.OK != nil:
		return tool.Outcome{Output: final.Error, Success: false, Sandboxed: sandboxed}, nil
	}
	if resHeld {
		return tool.Outcome{}, fmt.Errorf("python tool %s: %s; its result channel was still held open by a process that outlived it: %w", name, reason, tool.ErrUnknownOutcome)
	}
	if !started {
		return tool.Outcome{}, &StartError{Tool: name, Reason: reason + explainOutput(tail)}
	}
	return tool.Outcome{}, fmt.Errorf("python tool %s: %s: %w", name, reason, tool.ErrUnknownOutcome)
}

// startSandboxed rewrites cmd to run under box and starts it. A command
// that cannot be wrapped is not started at all: the error is a
// *StartError.
func (e *Executor) startSandboxed(cmd *exec.Cmd, box *sandbox.Bwrap, inv tool.Invocation) error {
	name := inv.Tool.Name
	if cmd.Err != nil {
		// The interpreter was not found: say so, as unsandboxed calls do.
		return &StartError{Tool: name, Reason: e.describeStartFailure(cmd.Err, inv.WorkDir), Err: cmd.Err}
	}
	var readOnly []string
	prot := e.protect
	if f := inv.Tool.Body.PythonFile; f != "" {
		f = absIn(inv.WorkDir, f)
		// A legacy tool file outside the working directory must stay
		// readable even where the sandbox hides the host (/tmp, /run);
		// inside it, the file must not change: it may back an
		// unsandboxed call later.
		readOnly = append(readOnly, filepath.Dir(f))
		prot.ReadOnly = append(append([]string(nil), prot.ReadOnly...), f)
	}
	release, err := box.WrapProtected(cmd, inv.WorkDir, prot, readOnly...)
	if err != nil {
		return &StartError{Tool: name, Reason: "cannot set up the sandbox", Err: err}
	}
	defer release()
	if err := sandbox.Start(cmd); err != nil {
		return &StartError{Tool: name, Reason: fmt.Sprintf("cannot start the sandbox (bubblewrap %s)", box.Path()), Err: err}
	}
	return nil
}

// absIn makes p absolute against dir.
func absIn(dir, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}

func (e *Executor) describeStartFailure(err error, dir string) string {
	switch {
	case errors.Is(err, exec.ErrNotFound):
		return fmt.Sprintf("Python interpreter %q not found in PATH; install Python 3 or set NEXA_PYTHON to its path", e.python)
	case errors.Is(err, fs.ErrNotExist) && dir != "":
		if _, statErr := os.Stat(dir); statErr != nil {
			return fmt.Sprintf("working directory %s is not usable", dir)
		}
		return fmt.Sprintf("Python interpreter %q does not exist; install Python 3 or set NEXA_PYTHON to its path", e.python)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Sprintf("Python interpreter %q (or the working directory) is not accessible", e.python)
	default:
		return fmt.Sprintf("cannot start Python interpreter %q", e.python)
	}
}

// contextReason words why ctx ended: the invocation's time ran out (see
// timeoutReason), or the run was cancelled.
func contextReason(ctx context.Context, inv tool.Invocation) string {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return timeoutReason(inv)
	}
	return "the run was cancelled"
}

// timeoutReason names the bound that ended a call: the tool's own timeout,
// or the run's deadline when that came first.
func timeoutReason(inv tool.Invocation) string {
	if inv.DeadlineBound {
		return "the run's deadline passed"
	}
	return fmt.Sprintf("its timeout of %s passed", inv.Timeout)
}

func describeExit(ps *os.ProcessState, waitErr error) string {
	if ps == nil {
		if waitErr != nil {
			return "the interpreter ended without a result (" + waitErr.Error() + ")"
		}
		return "the interpreter ended without a result"
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return fmt.Sprintf("the interpreter was killed by signal %s without reporting a result", ws.Signal())
	}
	return fmt.Sprintf("the interpreter exited with status %d without reporting a result", ps.ExitCode())
}

// parseRecords reads the complete lines of the result channel. A last line
// without its newline was cut short and is ignored; so is any line that is
// not a record (a tool writing to the channel on purpose).
func parseRecords(data []byte) (started bool, final *record) {
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		line := data[:i]
		data = data[i+1:]
		var r record
		if err := json.Unmarshal(line, &r); err != nil {
			continue
		}
		switch {
		case r.Event == "start":
			started = true
		case r.OK != nil || r.Unknown || r.Fatal != nil:
			if final == nil {
				rr := r
				final = &rr
			}
		}
	}
	return started, final
}

// drain waits (up to drainWait) for the goroutine reading r to reach EOF,
// then closes r; a process that escaped the group and still holds the
// pipe's other end cannot make the call hang. It reports whether EOF was
// reached; if not, data still unread in the pipe was dropped.
func drain(r *os.File, done <-chan struct{}) bool {
	if !waitFor(done, drainWait) {
		r.Close()
		<-done
		return false
	}
	r.Close()
	return true
}

func waitFor(ch <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}

// readLimited reads r to EOF, keeping at most limit bytes; the rest is
// drained so the writer never blocks.
func readLimited(r io.Reader, limit int64) ([]byte, bool) {
	var buf bytes.Buffer
	n, _ := io.Copy(&buf, io.LimitReader(r, limit+1))
	if n > limit {
		_, _ = io.Copy(io.Discard, r)
		return nil, true
	}
	return buf.Bytes(), false
}

// lenientWriter keeps draining the tool's output even when the log writer
// fails, so a broken log can never block the tool.
type lenientWriter struct{ w io.Writer }

func (l lenientWriter) Write(p []byte) (int, error) {
	_, _ = l.w.Write(p)
	return len(p), nil
}

// explainOutput renders the last lines of an interpreter's output, to say
// why it could not start (for example a broken NEXA_PYTHON). Nothing of the
// tool ran at that point, so the output cannot hold tool data.
func explainOutput(t *tailbuf.Buffer) string {
	s := strings.TrimSpace(strings.ToValidUTF8(t.String(), "\uFFFD"))
	if s == "" {
		return ""
	}
	lines := strings.Split(s, "\n")
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	return "; interpreter output: " + strings.Join(lines, " | ")
}
