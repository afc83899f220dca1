package pytool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/nexa-run/nexa/internal/tool"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nexa-run/nexa/internal/ir"
	"github.com/nexa-run/nexa/internal/tailbuf"
)

// requirePython skips the test when no python3 is installed: every test here
// runs a real interpreter.
func requirePython(tb testing.TB) {
	tb.Helper()
	if _, err := exec.LookPath(DefaultPython); err != nil {
		tb.Skipf("python3 not found in PATH (%v): the Python tool executor tests need a real interpreter", err)
	}
}

// syncBuffer is a log writer the test can read safely.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// bodyTool builds a python! tool whose parameters are strings (or have the
// given schema fragment after a colon: "n:{\"type\":\"integer\",\"default\":3}").
func bodyTool(name, body string, params ...string) *ir.Tool {
	var props []string
	for _, p := range params {
		pname, schema, ok := strings.Cut(p, ":")
		if !ok {
			schema = `{"type":"string"}`
		}
		props = append(props, strconv.Quote(pname)+":"+schema)
	}
	schema := `{"type":"object","properties":{` + strings.Join(props, ",") + `},"additionalProperties":false}`
	list, err := ir.ParamsFromSchema(json.RawMessage(schema))
	if err != nil {
		panic(fmt.Sprintf("test schema %s: %v", schema, err))
	}
	return &ir.Tool{
		Name:       name,
		Parameters: json.RawMessage(schema),
		Params:     list,
		Timeout:    60,
		Body:       ir.Body{Kind: ir.BodyPython, Python: body},
	}
}

type call struct {
	exec *Executor
	// cold makes the default executor (exec nil) run the call on the
	// per-call path (Options.NoWarm) instead of forking it from a zygote.
	cold    bool
	tool    *ir.Tool
	args    any
	secrets map[string]string
	timeout time.Duration
	dir     string
	ctx     context.Context
}

// result is what one call produced.
type result struct {
	out tool.Outcome
	err error
	log string
}

func (c call) run(t *testing.T) (tool.Outcome, string, error) {
	r := c.do(t)
	return r.out, r.log, r.err
}

func (c call) do(t *testing.T) result {
	t.Helper()
	ex := c.exec
	if ex == nil {
		ex = New(Options{NoWarm: c.cold})
		defer ex.Close()
	}
	raw := json.RawMessage(`{}`)
	if c.args != nil {
		b, err := json.Marshal(c.args)
		if err != nil {
			t.Fatal(err)
		}
		raw = b
	}
	dir := c.dir
	if dir == "" {
		dir = t.TempDir()
	}
	timeout := c.timeout
	if timeout == 0 {
		timeout = hangCap
	}
	ctx := c.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	log := &syncBuffer{}
	out, err := ex.Execute(ctx, tool.Invocation{
		RunID: "run-1", CallID: "call-7", Tool: c.tool, Arguments: raw,
		WorkDir: dir, Secrets: c.secrets, Timeout: timeout, Log: log,
	})
	return result{out, err, log.String()}
}

// bothPaths runs f as two subtests: "warm" (calls forked by a zygote, the
// default) and "cold" (one interpreter per call, Options.NoWarm). The
// semantics must be the same.
func bothPaths(t *testing.T, f func(t *testing.T, cold bool)) {
	t.Helper()
	for _, cold := range []bool{false, true} {
		name := "warm"
		if cold {
			name = "cold"
		}
		t.Run(name, func(t *testing.T) { f(t, cold) })
	}
}

// newExec returns an executor with opts on the chosen path, closed at the
// end of the test.
func newExec(t *testing.T, cold bool, opts Options) *Executor {
	t.Helper()
	opts.NoWarm = cold
	ex := New(opts)
	// The warm interpreter's start-up and fork bounds only guard against a
	// hang: under the race detector on a loaded machine a start can take
	// longer than the production bound, and a test must not fall back to
	// the per-call path because the machine is slow. Tests of those bounds
	// set their own after this.
	if ex.zygotes != nil {
		ex.zygotes.start, ex.zygotes.spawn = hangCap, hangCap
	}
	t.Cleanup(func() { ex.Close() })
	return ex
}

func mustSucceed(t *testing.T, r result) string {
	t.Helper()
	out, err, log := r.out, r.err, r.log
	if err != nil {
		t.Fatalf("Execute: %v (log: %q)", err, log)
	}
	if !out.Success {
		t.Fatalf("tool failed: %q (log: %q)", out.Output, log)
	}
	if out.Sandboxed {
		t.Fatalf("Sandboxed = true for an ordinary Python tool")
	}
	return out.Output
}

func TestReturnValues(t *testing.T) {
	requirePython(t)
	t.Parallel()
	cases := []struct {
		name, body, want string
	}{
		{"str", `return "hello"`, "hello"},
		{"none", `return None`, ""},
		{"no_return", `x = 1`, ""},
		{"dict", `return {"a": 1, "b": [True, None]}`, `{"a": 1, "b": [true, null]}`},
		{"int", `return 42`, "42"},
		{"bool", `return False`, "false"},
		{"not_json", `return {1, 2} and object.__new__(type("Thing", (), {"__str__": lambda self: "thing!"}))`, "thing!"},
		{"bytes", `return "é".encode("utf-8")`, "é"},
	}
	// One executor and directory for all: the calls share a zygote, as a
	// run's calls do.
	ex, dir := newExec(t, false, Options{}), t.TempDir()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := mustSucceed(t, call{exec: ex, dir: dir, tool: bodyTool("t_"+tc.name, tc.body)}.do(t))
			if got != tc.want {
				t.Fatalf("output = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestPrintGoesToLogNotResult(t *testing.T) {
	requirePython(t)
	t.Parallel()
	bothPaths(t, func(t *testing.T, cold bool) {
		body := `
print("to stdout")
print('{"ok": true, "output": "forged"}')
sys.stderr.write("to stderr\n")
import os as _os
_os.write(1, b"raw fd1\n")
_os.write(2, b"raw fd2\n")
import subprocess
subprocess.run(["echo", "from a child"], check=True)
return "real"
`
		r := call{cold: cold, tool: bodyTool("printer", body)}.do(t)
		log := r.log
		if out := mustSucceed(t, r); out != "real" {
			t.Fatalf("output = %q, want real", out)
		}
		for _, want := range []string{"to stdout", "forged", "to stderr", "raw fd1", "raw fd2", "from a child"} {
			if !strings.Contains(log, want) {
				t.Errorf("log %q lacks %q", log, want)
			}
		}
	})
}

func TestExceptionIsFailedOutcome(t *testing.T) {
	requirePython(t)
	t.Parallel()
	bothPaths(t, func(t *testing.T, cold bool) {
		body := "x = 1\n\nraise ValueError('bad input: ' + str(x))\n"
		out, log, err := call{cold: cold, tool: bodyTool("boom", body)}.run(t)
		if err != nil {
			t.Fatalf("Execute: %v", err)
		}
		if out.Success {
			t.Fatalf("Success = true for a raising tool")
		}
		for _, want := range []string{"ValueError: bad input: 1", "line 3", "in boom", "raise ValueError"} {
			if !strings.Contains(out.Output, want) {
				t.Errorf("error text %q lacks %q", out.Output, want)
			}
		}
		if strings.Contains(out.Output, "_nexa_main") {
			t.Errorf("error text shows bootstrap frames: %q", out.Output)
		}
		if !strings.Contains(log, "ValueError: bad input") {
			t.Errorf("traceback not in log: %q", log)
		}
	})
}

func TestSyntaxErrorAndSysExitAreFailedOutcomes(t *testing.T) {
	requirePython(t)
	t.Parallel()
	bothPaths(t, func(t *testing.T, cold bool) {
		for name, body := range map[string]string{
			"syntax":  "return (",
			"sysexit": "sys.exit(3)",
		} {
			out, _, err := call{cold: cold, tool: bodyTool(name, body)}.run(t)
			if err != nil {
				t.Fatalf("%s: Execute: %v", name, err)
			}
			if out.Success || out.Output == "" {
				t.Fatalf("%s: outcome = %+v, want a failure with text", name, out)
			}
			if strings.Contains(out.Output, "_nexa_main") || strings.Contains(out.Output, "ast.py") {
				t.Errorf("%s: error text shows bootstrap frames: %q", name, out.Output)
			}
		}
	})
}

func TestToolOutcomeUnknown(t *testing.T) {
	requirePython(t)
	t.Parallel()
	bothPaths(t, func(t *testing.T, cold bool) {
		out, _, err := call{cold: cold, tool: bodyTool("unsure", `raise ToolOutcomeUnknown("payment gateway timed out")`)}.run(t)
		if !errors.Is(err, tool.ErrUnknownOutcome) {
			t.Fatalf("err = %v (outcome %+v), want ErrUnknownOutcome", err, out)
		}
		if errors.Is(err, ErrNotStarted) {
			t.Fatalf("unknown outcome also matches ErrNotStarted")
		}
		if !strings.Contains(err.Error(), "payment gateway timed out") {
			t.Fatalf("err %q lacks the message", err)
		}
	})
}

// processGone reports whether pid no longer runs (gone, or a zombie nobody
// has reaped yet).
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// pid (comm) STATE ...
	s := string(stat)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] == 'Z' || s[i+2] == 'X'
	}
	return false
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(hangCap)
	for !processGone(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("grandchild %d still running", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func readPid(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("grandchild pid file: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("grandchild pid: %v", err)
	}
	return pid
}

const spawnSleeper = `
import subprocess
p = subprocess.Popen(["sleep", "30"])
with open("child.pid", "w") as f:
    f.write(str(p.pid))
`

// expireWhen makes the timeouts of ex's calls pass once ready reports true
// (polled), that is at a point where the tool's user code is known to run,
// instead of a wall-clock time that a slow interpreter start could outlast.
// It returns a channel closed when a timeout has been made to pass. After
// a generous cap the timeout passes anyway, so a broken test fails instead
// of hanging.
func expireWhen(ex *Executor, ready func() bool) <-chan struct{} {
	fired := make(chan struct{})
	var once sync.Once
	ex.expireAt = func(tool.Invocation) <-chan time.Time {
		ch := make(chan time.Time, 1)
		go func() {
			deadline := time.Now().Add(hangCap)
			for !ready() && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			once.Do(func() { close(fired) })
			ch <- time.Now()
		}()
		return ch
	}
	return fired
}

// hangCap bounds waits that only guard against a hang: far above what any
// machine needs, so that it never decides a test on a loaded one.
const hangCap = 60 * time.Second

// fileHasData reports whether path exists and is not empty.
func fileHasData(path string) func() bool {
	return func() bool {
		b, err := os.ReadFile(path)
		return err == nil && len(b) > 0
	}
}

func TestTimeoutKillsProcessGroup(t *testing.T) {
	t.Parallel()
	requirePython(t)
	bothPaths(t, func(t *testing.T, cold bool) {
		dir := t.TempDir()
		ex := New(Options{NoWarm: cold})
		defer ex.Close()
		// The timeout passes once the tool has started its sleeper, so
		// its user code has surely run: the outcome must be unknown.
		fired := expireWhen(ex, fileHasData(filepath.Join(dir, "child.pid")))
		done := make(chan result, 1)
		go func() {
			done <- call{exec: ex, tool: bodyTool("slow", spawnSleeper+"time.sleep(300)\n"), dir: dir, timeout: time.Hour}.do(t)
		}()
		<-fired
		var r result
		select {
		case r = <-done:
		case <-time.After(hangCap):
			t.Fatal("Execute did not return after its timeout passed")
		}
		if !errors.Is(r.err, tool.ErrUnknownOutcome) {
			t.Fatalf("err = %v (outcome %+v), want ErrUnknownOutcome", r.err, r.out)
		}
		if !strings.Contains(r.err.Error(), "timeout of 1h0m0s passed") {
			t.Errorf("err %q does not mention the timeout", r.err)
		}
		waitGone(t, readPid(t, filepath.Join(dir, "child.pid")))
	})
}

// TestWallClockTimeoutEndsCall runs the real timer: a short timeout ends a
// call that never returns. Whether the interpreter reached the tool's code
// within it depends on the machine, so both honest outcomes are accepted:
// unknown (it started) or not started (it did not); never a result, and
// never a hang.
func TestWallClockTimeoutEndsCall(t *testing.T) {
	t.Parallel()
	requirePython(t)
	bothPaths(t, func(t *testing.T, cold bool) {
		dir := t.TempDir()
		done := make(chan result, 1)
		go func() {
			done <- call{cold: cold, tool: bodyTool("forever", "open('started', 'w').close()\ntime.sleep(300)\n"), dir: dir, timeout: 200 * time.Millisecond}.do(t)
		}()
		var r result
		select {
		case r = <-done:
		case <-time.After(hangCap):
			t.Fatal("Execute did not return after its timeout")
		}
		if r.err == nil || !strings.Contains(r.err.Error(), "timeout of 200ms passed") {
			t.Fatalf("err = %v (outcome %+v), want the timeout", r.err, r.out)
		}
		_, statErr := os.Stat(filepath.Join(dir, "started"))
		if errors.Is(r.err, ErrNotStarted) {
			if statErr == nil {
				t.Fatalf("err = %v says not started, but the tool's code ran", r.err)
			}
		} else if !errors.Is(r.err, tool.ErrUnknownOutcome) {
			t.Fatalf("err = %v, want ErrUnknownOutcome or ErrNotStarted", r.err)
		}
	})
}

func TestLeftoverSubprocessIsKilledAfterReturn(t *testing.T) {
	t.Parallel()
	requirePython(t)
	bothPaths(t, func(t *testing.T, cold bool) {
		dir := t.TempDir()
		got := mustSucceed(t, call{cold: cold, tool: bodyTool("leaver", spawnSleeper+"return 'done'\n"), dir: dir}.do(t))
		if got != "done" {
			t.Fatalf("output = %q", got)
		}
		waitGone(t, readPid(t, filepath.Join(dir, "child.pid")))
	})
}

func TestContextCancelIsUnknown(t *testing.T) {
	t.Parallel()
	requirePython(t)
	bothPaths(t, func(t *testing.T, cold bool) {
		ctx, cancel := context.WithCancel(context.Background())
		dir := t.TempDir()
		go func() {
			// Cancel once the tool is surely running.
			ready := fileHasData(filepath.Join(dir, "child.pid"))
			for deadline := time.Now().Add(hangCap); !ready() && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
			}
			cancel()
		}()
		_, _, err := call{cold: cold, tool: bodyTool("cancelled", spawnSleeper+"time.sleep(30)\n"), dir: dir, ctx: ctx}.run(t)
		if !errors.Is(err, tool.ErrUnknownOutcome) || !strings.Contains(err.Error(), "cancelled") {
			t.Fatalf("err = %v, want unknown outcome after cancellation", err)
		}
		waitGone(t, readPid(t, filepath.Join(dir, "child.pid")))
	})
}

func TestExitWithoutResultIsUnknown(t *testing.T) {
	t.Parallel()
	requirePython(t)
	bothPaths(t, func(t *testing.T, cold bool) {
		_, _, err := call{cold: cold, tool: bodyTool("crasher", `os._exit(3)`)}.run(t)
		if !errors.Is(err, tool.ErrUnknownOutcome) {
			t.Fatalf("err = %v, want ErrUnknownOutcome", err)
		}
		if errors.Is(err, ErrNotStarted) || !strings.Contains(err.Error(), "status 3") {
			t.Fatalf("err = %v, want an unknown outcome naming exit status 3", err)
		}
		_, _, err = call{cold: cold, tool: bodyTool("selfkill", `os.kill(os.getpid(), 9)`)}.run(t)
		if !errors.Is(err, tool.ErrUnknownOutcome) || !strings.Contains(err.Error(), "signal") {
			t.Fatalf("err = %v, want an unknown outcome naming the signal", err)
		}
	})
}

func TestEnvironment(t *testing.T) {
	t.Parallel()
	requirePython(t)
	bothPaths(t, func(t *testing.T, cold bool) {
		body := `return [os.environ["NEXA_IDEMPOTENCY_KEY"], os.environ["NEXA_RUN_ID"], os.environ["NEXA_CALL_ID"], os.environ.get("PARENT_VAR"), os.environ.get("API_TOKEN")]`
		ex := newExec(t, cold, Options{Env: []string{"PATH=" + os.Getenv("PATH"), "PARENT_VAR=kept", "NEXA_RUN_ID=stale"}})
		got := mustSucceed(t, call{exec: ex, tool: bodyTool("envtool", body), secrets: map[string]string{"API_TOKEN": "s3cr3t"}}.do(t))
		// Secrets are reachable through nexa_secrets only, not the environment.
		want := `["run-1:call-7", "run-1", "call-7", "kept", null]`
		if got != want {
			t.Fatalf("output = %s, want %s", got, want)
		}
	})
}

// nexa starts interpreters with PYTHONSAFEPATH so that the working
// directory is never on sys.path, but the tool, and every process it
// starts, sees the environment the user gave: the variable only when the
// user set it.
func TestSafePathIsNotPassedOn(t *testing.T) {
	t.Parallel()
	requirePython(t)
	body := `import subprocess
child = subprocess.run([sys.executable, "-c", "import os; print(os.environ.get('PYTHONSAFEPATH'), os.environ.get('NEXA_ADDED_PYTHONSAFEPATH'))"], capture_output=True, text=True).stdout.strip()
return [os.environ.get("PYTHONSAFEPATH"), os.environ.get("NEXA_ADDED_PYTHONSAFEPATH"), child]`
	bothPaths(t, func(t *testing.T, cold bool) {
		for _, c := range []struct {
			env  []string
			want string
		}{
			{nil, `[null, null, "None None"]`},
			{[]string{"PYTHONSAFEPATH=yes"}, `["yes", null, "yes None"]`},
			{[]string{"NEXA_ADDED_PYTHONSAFEPATH=1", "PYTHONSAFEPATH=mine"}, `["mine", null, "mine None"]`},
		} {
			ex := newExec(t, cold, Options{Env: append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}, c.env...)})
			if got := mustSucceed(t, call{exec: ex, tool: bodyTool("safepath", body)}.do(t)); got != c.want {
				t.Errorf("with %q: output = %s, want %s", c.env, got, c.want)
			}
		}
	})
}

func TestNexaSecrets(t *testing.T) {
	requirePython(t)
	t.Parallel()
	bothPaths(t, func(t *testing.T, cold bool) {
		body := `return [nexa_secrets.get("API_TOKEN"), nexa_secrets.get("FROM_ENV"), nexa_secrets.get("BOTH"), nexa_secrets.get("MISSING"), nexa_secrets.get("MISSING", "dflt"), "API_TOKEN" in nexa_secrets, repr(nexa_secrets)]`
		ex := newExec(t, cold, Options{Env: []string{"PATH=" + os.Getenv("PATH"), "FROM_ENV=env-value", "BOTH=env-loses"}})
		got := mustSucceed(t, call{exec: ex, tool: bodyTool("secretive", body),
			secrets: map[string]string{"API_TOKEN": "tok-123", "BOTH": "secret-wins"}}.do(t))
		want := `["tok-123", "env-value", "secret-wins", null, "dflt", true, "<nexa_secrets>"]`
		if got != want {
			t.Fatalf("output = %s, want %s", got, want)
		}
	})
}

func TestArgumentsPassVerbatim(t *testing.T) {
	requirePython(t)
	t.Parallel()
	bothPaths(t, func(t *testing.T, cold bool) {
		tricky := []string{
			`he said "hi"`,
			`it's`,
			"line1\nline2\r\nline3",
			`"""`,
			`'''`,
			`'); import os; os.system('echo pwned') #`,
			`"); import os #`,
			`\n \\ \x00 \u1234`,
			"tab\there",
			"$(touch pwned) `touch pwned` ; rm -rf /tmp/nothing",
			"{ \"json\": true }",
			"#{interpolation}",
			"",
			"nul\x00byte",
		}
		// One call carries every case, each as its own argument, so the
		// test costs one interpreter start per path, not one per case.
		dir := t.TempDir()
		args := map[string]any{}
		var params, names []string
		for i, s := range tricky {
			name := fmt.Sprintf("t%d", i)
			args[name] = s
			params = append(params, name)
			names = append(names, name)
		}
		got := mustSucceed(t, call{cold: cold, tool: bodyTool("echo", "return ["+strings.Join(names, ", ")+"]", params...), args: args, dir: dir}.do(t))
		var echoed []string
		if err := json.Unmarshal([]byte(got), &echoed); err != nil || len(echoed) != len(tricky) {
			t.Fatalf("echo returned %q (%v)", got, err)
		}
		for i, s := range tricky {
			if echoed[i] != s {
				t.Errorf("case %d: got %q, want %q", i, echoed[i], s)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, "pwned")); err == nil {
			t.Fatalf("an argument was executed")
		}
		// Structured and numeric arguments keep their types.
		got = mustSucceed(t, call{cold: cold,
			tool: bodyTool("types", "return [type(n).__name__, n, type(f).__name__, xs, d]",
				`n:{"type":"integer"}`, `f:{"type":"number"}`, `xs:{"type":"array"}`, `d:{"type":"object"}`),
			args: map[string]any{"n": 12345678901234567, "f": 1.5, "xs": []any{"a", 1}, "d": map[string]any{"k": "v"}},
		}.do(t))
		if want := `["int", 12345678901234567, "float", ["a", 1], {"k": "v"}]`; got != want {
			t.Fatalf("typed arguments: got %s, want %s", got, want)
		}
	})
}

func TestLargeArgumentsAndResults(t *testing.T) {
	requirePython(t)
	t.Parallel()
	bothPaths(t, func(t *testing.T, cold bool) {
		big := strings.Repeat("abcdefghij", 500_000) // 5 MB each way
		body := "print('x' * 1_000_000)\nreturn text[::-1] + 'é'"
		r := call{cold: cold, tool: bodyTool("big", body, "text"), args: map[string]string{"text": big}}.do(t)
		got := mustSucceed(t, r)
		if len(got) != len(big)+len("é") || !strings.HasPrefix(got, "jihgfedcba") {
			t.Fatalf("result of %d bytes", len(got))
		}
		if len(r.log) < 1_000_000 {
			t.Fatalf("log of %d bytes", len(r.log))
		}
	})
}

func TestOptionalParametersGetDefaults(t *testing.T) {
	requirePython(t)
	t.Parallel()
	tool := bodyTool("defaults", "return [a, n, opt]", "a", `n:{"type":"integer","default":3}`, `opt:{"type":["string","null"]}`)
	// The runtime fills defaults before the call; the executor binds
	// what is still missing to None.
	args := map[string]any{"a": "x"}
	tool.FillDefaults(args)
	got := mustSucceed(t, call{tool: tool, args: args}.do(t))
	if want := `["x", 3, null]`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	got = mustSucceed(t, call{tool: tool, args: map[string]any{"a": "x"}}.do(t))
	if want := `["x", null, null]`; got != want {
		t.Fatalf("without the runtime's defaults: got %s, want %s", got, want)
	}
}

func TestBodyIndentation(t *testing.T) {
	requirePython(t)
	t.Parallel()
	bodies := map[string]string{
		"flush":    "x = a + '!'\nif x:\n    return x\nreturn 'no'",
		"indented": "\n        x = a + '!'\n        if x:\n            return x\n        return 'no'\n    ",
		"tabs":     "\tx = a + '!'\n\tif x:\n\t\treturn x\n\treturn 'no'",
		"crlf":     "    x = a + '!'\r\n    if x:\r\n        return x\r\n",
	}
	// One warm interpreter serves every case.
	dir, ex := t.TempDir(), newExec(t, false, Options{})
	for name, body := range bodies {
		got := mustSucceed(t, call{exec: ex, dir: dir, tool: bodyTool("ind_"+name, body, "a"), args: map[string]string{"a": "ok"}}.do(t))
		if got != "ok!" {
			t.Errorf("%s: got %q", name, got)
		}
	}
	// A multi-line string literal keeps its text: the body is not
	// re-indented textually.
	body := "s = \"\"\"first\nsecond\n    third\"\"\"\nreturn s"
	got := mustSucceed(t, call{exec: ex, dir: dir, tool: bodyTool("literal", body)}.do(t))
	if got != "first\nsecond\n    third" {
		t.Fatalf("string literal changed: %q", got)
	}
}

func TestLegacyPythonFile(t *testing.T) {
	requirePython(t)
	t.Parallel()
	bothPaths(t, func(t *testing.T, cold bool) {
		src := t.TempDir()
		helper := "def shout(s):\n    return s.upper()\n"
		// The file's directory is not on sys.path: a helper beside it is
		// imported only when the file puts it there itself.
		file := `import os, sys
try:
    import helper_mod
    raise RuntimeError("helper_mod was importable without an explicit sys.path entry")
except ImportError:
    pass
sys.path.append(os.path.dirname(__file__))
import helper_mod
print("imported")

def legacy_tool(query, limit=2):
    return {"q": helper_mod.shout(query), "limit": limit, "key": nexa_secrets.get("K")}

def other():
    raise ToolOutcomeUnknown("not sure")
`
		if err := os.WriteFile(filepath.Join(src, "helper_mod.py"), []byte(helper), 0o600); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(src, "tools.py")
		if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
			t.Fatal(err)
		}
		legacy := &ir.Tool{Name: "legacy_tool", Parameters: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}}}`),
			Body: ir.Body{Kind: ir.BodyPython, PythonFile: path}}
		r := call{cold: cold, tool: legacy, args: map[string]any{"query": "héllo"}, secrets: map[string]string{"K": "v"}}.do(t)
		got, log := mustSucceed(t, r), r.log
		if want := `{"q": "HÉLLO", "limit": 2, "key": "v"}`; got != want {
			t.Fatalf("got %s, want %s", got, want)
		}
		if !strings.Contains(log, "imported") {
			t.Errorf("module print not in log: %q", log)
		}
		if _, err := os.Stat(filepath.Join(src, "__pycache__")); err == nil {
			t.Errorf("loading the tool file wrote __pycache__ into the source directory")
		}

		other := *legacy
		other.Name = "other"
		if _, _, err := (call{cold: cold, tool: &other}).run(t); !errors.Is(err, tool.ErrUnknownOutcome) {
			t.Fatalf("ToolOutcomeUnknown from a file: err = %v", err)
		}
		missingFn := *legacy
		missingFn.Name = "absent"
		if out, _, err := (call{cold: cold, tool: &missingFn}).run(t); err != nil || out.Success || !strings.Contains(out.Output, "no function absent") {
			t.Fatalf("missing function: %+v, %v", out, err)
		}
		missingFile := *legacy
		missingFile.Body.PythonFile = filepath.Join(src, "nope.py")
		if out, _, err := (call{cold: cold, tool: &missingFile}).run(t); err != nil || out.Success || !strings.Contains(out.Output, "not found") {
			t.Fatalf("missing file: %+v, %v", out, err)
		}
	})
}

func TestNonASCIIRoundTrip(t *testing.T) {
	requirePython(t)
	t.Parallel()
	s := "héllo wörld — 你好 🌍 \u200b"
	r := call{tool: bodyTool("uni", "print(text)\nreturn text + ' ✓'", "text"), args: map[string]string{"text": s}}.do(t)
	log := r.log
	if got := mustSucceed(t, r); got != s+" ✓" {
		t.Fatalf("got %q", got)
	}
	if !strings.Contains(log, s) {
		t.Fatalf("log %q lacks %q", log, s)
	}
}

func TestWorkDirIsCwd(t *testing.T) {
	t.Parallel()
	requirePython(t)
	bothPaths(t, func(t *testing.T, cold bool) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "data.txt"), []byte("contents"), 0o600); err != nil {
			t.Fatal(err)
		}
		got := mustSucceed(t, call{cold: cold, tool: bodyTool("cwd", `return [os.getcwd(), open("data.txt").read()]`), dir: dir}.do(t))
		real, err := filepath.EvalSymlinks(dir)
		if err != nil {
			t.Fatal(err)
		}
		var res []string
		if err := json.Unmarshal([]byte(got), &res); err != nil {
			t.Fatalf("output %q: %v", got, err)
		}
		if res[0] != real || res[1] != "contents" {
			t.Fatalf("got %q, want cwd %q and file contents", res, real)
		}
	})
}

func TestMissingInterpreterIsNotStarted(t *testing.T) {
	bothPaths(t, func(t *testing.T, cold bool) {
		ex := newExec(t, cold, Options{Python: "nexa-no-such-python3"})
		_, _, err := call{exec: ex, tool: bodyTool("x", "return 1")}.run(t)
		if err == nil || !errors.Is(err, ErrNotStarted) || errors.Is(err, tool.ErrUnknownOutcome) {
			t.Fatalf("err = %v, want ErrNotStarted and not ErrUnknownOutcome", err)
		}
		if !errors.Is(err, tool.ErrNotExecuted) {
			t.Fatalf("err %v does not match tool.ErrNotExecuted", err)
		}
		var ns interface{ NotStarted() bool }
		if !errors.As(err, &ns) || !ns.NotStarted() {
			t.Fatalf("err %v does not expose NotStarted()", err)
		}
		if !strings.Contains(err.Error(), "NEXA_PYTHON") {
			t.Fatalf("err %q does not say how to fix it", err)
		}

		ex = newExec(t, cold, Options{Python: "/nonexistent/dir/python3"})
		if _, _, err := (call{exec: ex, tool: bodyTool("x", "return 1")}).run(t); !errors.Is(err, ErrNotStarted) {
			t.Fatalf("missing absolute interpreter: err = %v", err)
		}
	})
}

func TestBrokenInterpreterIsNotStarted(t *testing.T) {
	bothPaths(t, func(t *testing.T, cold bool) {
		falseBin, err := exec.LookPath("false")
		if err != nil {
			t.Skip("no false(1) binary")
		}
		// An "interpreter" that exits at once: no start record, so nothing ran.
		ex := newExec(t, cold, Options{Python: falseBin})
		_, _, err = call{exec: ex, tool: bodyTool("x", "return 1")}.run(t)
		if !errors.Is(err, ErrNotStarted) || errors.Is(err, tool.ErrUnknownOutcome) {
			t.Fatalf("err = %v, want ErrNotStarted", err)
		}
	})
}

func TestRefusalsBeforeRunning(t *testing.T) {
	requirePython(t)
	bothPaths(t, func(t *testing.T, cold bool) {
		sandboxed := bodyTool("boxed", "open('ran', 'w').write('x')")
		sandboxed.Sandbox = true
		dir := t.TempDir()
		_, _, err := call{cold: cold, tool: sandboxed, dir: dir}.run(t)
		if !errors.Is(err, ErrSandboxUnavailable) || !errors.Is(err, ErrNotStarted) || errors.Is(err, tool.ErrUnknownOutcome) {
			t.Fatalf("sandbox: err = %v", err)
		}
		var sb interface{ SandboxUnavailable() bool }
		if !errors.As(err, &sb) || !sb.SandboxUnavailable() {
			t.Fatalf("sandbox error does not expose SandboxUnavailable()")
		}
		if _, statErr := os.Stat(filepath.Join(dir, "ran")); statErr == nil {
			t.Fatalf("a sandboxed tool ran unsandboxed")
		}

		for _, bad := range []string{"class", "a-b", "x); import os; (", "1abc"} {
			_, _, err := call{cold: cold, tool: bodyTool("badparam", "return 1", bad)}.run(t)
			if !errors.Is(err, ErrNotStarted) {
				t.Errorf("parameter %q: err = %v, want ErrNotStarted", bad, err)
			}
		}
		badargs := bodyTool("badargs", "return 1")
		for _, raw := range []string{`[1,2]`, `"str"`, `{bad json`} {
			_, err := newExec(t, cold, Options{}).Execute(context.Background(), tool.Invocation{Tool: badargs, Arguments: json.RawMessage(raw), WorkDir: t.TempDir()})
			if !errors.Is(err, ErrNotStarted) {
				t.Errorf("arguments %s: err = %v, want ErrNotStarted", raw, err)
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, _, err := (call{cold: cold, tool: bodyTool("late", "return 1"), ctx: ctx}).run(t); !errors.Is(err, ErrNotStarted) {
			t.Errorf("cancelled before start: err = %v, want ErrNotStarted", err)
		}
		missingDir := filepath.Join(t.TempDir(), "gone")
		if _, _, err := (call{cold: cold, tool: bodyTool("nodir", "return 1"), dir: missingDir}).run(t); !errors.Is(err, ErrNotStarted) || !strings.Contains(err.Error(), "working directory") {
			t.Errorf("missing working directory: err = %v, want ErrNotStarted naming it", err)
		}
	})
}

// BenchmarkPythonCall measures the whole cost of a trivial tool on the
// per-call path (Options.NoWarm): interpreter start-up, bootstrap, JSON both
// ways, process-group cleanup.
//
// NEXA_PYTHON selects the interpreter, as in the CLI (a pyenv shim alone
// costs ~140 ms per start).
func BenchmarkPythonCall(b *testing.B) {
	benchmarkCall(b, Options{Python: os.Getenv("NEXA_PYTHON"), NoWarm: true})
}

// BenchmarkPythonCallWarm is BenchmarkPythonCall on the warm path: each call
// is forked by the zygote (started by one call before the timer).
func BenchmarkPythonCallWarm(b *testing.B) {
	benchmarkCall(b, Options{Python: os.Getenv("NEXA_PYTHON")})
}

// BenchmarkPythonCallWarmSpaced is BenchmarkPythonCallWarm with a pause
// between calls (off the clock), as an agent makes them (a model turn
// between two tool calls): the child forked ahead of time for the next
// call has finished preparing when the call comes. Back to back, a call
// also waits for the rest of that preparation.
func BenchmarkPythonCallWarmSpaced(b *testing.B) {
	benchmarkCallPaced(b, Options{Python: os.Getenv("NEXA_PYTHON")}, 100*time.Millisecond)
}

func benchmarkCall(b *testing.B, opts Options) { benchmarkCallPaced(b, opts, 0) }

func benchmarkCallPaced(b *testing.B, opts Options, pause time.Duration) {
	requirePython(b)
	ex := New(opts)
	defer ex.Close()
	ident := bodyTool("ident", "return x", "x")
	dir := b.TempDir()
	inv := tool.Invocation{RunID: "r", CallID: "c", Tool: ident, Arguments: json.RawMessage(`{"x":"hi"}`),
		WorkDir: dir, Timeout: 30 * time.Second}
	if out, err := ex.Execute(context.Background(), inv); err != nil || out.Output != "hi" {
		b.Fatalf("Execute: %+v, %v", out, err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if pause > 0 {
			b.StopTimer()
			time.Sleep(pause)
			b.StartTimer()
		}
		out, err := ex.Execute(context.Background(), inv)
		if err != nil || out.Output != "hi" {
			b.Fatalf("Execute: %+v, %v", out, err)
		}
	}
	b.StopTimer()
	if ex.zygotes != nil {
		if n := ex.zygotes.fallbacks.Load(); n != 0 {
			b.Fatalf("%d calls fell back to the per-call path", n)
		}
	}
}

// TestWorkingDirectoryIsNotOnSysPath: nothing a call imports comes from its
// working directory unless the tool puts it on sys.path itself: not the
// bootstrap's modules, not the stdlib modules a tool imports, not a module
// that exists only there. A sandboxed tool can write there, so a planted
// file must never run in an unsandboxed call.
func TestWorkingDirectoryIsNotOnSysPath(t *testing.T) {
	requirePython(t)
	t.Parallel()
	bothPaths(t, func(t *testing.T, cold bool) {
		dir := t.TempDir()
		for _, m := range []string{"json", "ast", "traceback", "types", "keyword", "linecache", "fcntl", "csv", "localhelper"} {
			if err := os.WriteFile(filepath.Join(dir, m+".py"), []byte("raise RuntimeError('planted "+m+" imported')\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		body := `import csv, importlib
try:
    importlib.import_module("localhelper")
    local = "imported"
except ImportError:
    local = "absent"
return {"csv": csv.__file__ != os.path.join(os.getcwd(), "csv.py"), "local": local, "path": [p for p in sys.path if p in ("", ".", os.getcwd())]}`
		got := mustSucceed(t, call{cold: cold, tool: bodyTool("planted", body), dir: dir}.do(t))
		if got != `{"csv": true, "local": "absent", "path": []}` {
			t.Fatalf("got %s", got)
		}
		out, _, err := call{cold: cold, tool: bodyTool("planted_err", "raise KeyError('k')"), dir: dir}.run(t)
		if err != nil || out.Success || !strings.Contains(out.Output, "KeyError") {
			t.Fatalf("error path with planted files: %+v, %v", out, err)
		}
		// A tool that wants its working directory on the path says so.
		got = mustSucceed(t, call{cold: cold, dir: dir, tool: bodyTool("explicit",
			"sys.path.append(os.getcwd())\ntry:\n    import localhelper\nexcept RuntimeError as e:\n    return str(e)\nreturn 'not planted'")}.do(t))
		if got != "planted localhelper imported" {
			t.Fatalf("explicit sys.path entry: got %s", got)
		}
	})
}

// BenchmarkInterpreterStartup is the floor BenchmarkPythonCall stands on:
// starting the same interpreter with an empty program.
func BenchmarkInterpreterStartup(b *testing.B) {
	requirePython(b)
	python := os.Getenv("NEXA_PYTHON")
	if python == "" {
		python = DefaultPython
	}
	for i := 0; i < b.N; i++ {
		if err := exec.Command(python, "-c", "pass").Run(); err != nil {
			b.Fatal(err)
		}
	}
}

// forkFloorProgram imports what the zygote imports, freezes its objects as
// the zygote does, then forks children back to back, each writing one byte
// to each of the first argv[2] pages of a buffer it inherited and leaving
// with os._exit, reaped before the next fork; it prints the mean time of
// one fork to reaped in nanoseconds.
const forkFloorProgram = `
import sys, os, gc, time, json, select, socket, binascii, ast, importlib, types, fcntl, atexit, keyword, linecache, traceback, importlib.util
n, pages = int(sys.argv[1]), int(sys.argv[2])
buf = bytearray(max(pages, 1) * 4096)
gc.collect()
gc.freeze()
start = time.monotonic_ns()
for _ in range(n):
    pid = os.fork()
    if pid == 0:
        for i in range(pages):
            buf[i * 4096] = 1
        os._exit(0)
    os.waitpid(pid, 0)
print((time.monotonic_ns() - start) // n)
`

// BenchmarkForkFloor is the floor BenchmarkPythonCallWarm stands on, outside
// nexa: a fork of a zygote-like interpreter that exits at once, and one
// whose child first writes to as many inherited pages as a warm call's
// child does (~350, each a copy of the page), back to back. ns/op is the
// time of one of them.
func BenchmarkForkFloor(b *testing.B) {
	requirePython(b)
	python := os.Getenv("NEXA_PYTHON")
	if python == "" {
		python = DefaultPython
	}
	for _, pages := range []int{0, 350} {
		b.Run(fmt.Sprintf("pages=%d", pages), func(b *testing.B) {
			out, err := exec.Command(python, "-c", forkFloorProgram, strconv.Itoa(b.N), strconv.Itoa(pages)).Output()
			if err != nil {
				b.Fatal(err)
			}
			ns, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
			if err != nil {
				b.Fatalf("output %q: %v", out, err)
			}
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(ns/1e6, "ms/fork")
		})
	}
}

// A result channel still held open after the process group died means user
// code ran (only it can hand the channel to a process outside the group),
// and the reader may have lost the start record when the channel was
// closed: the call must be unknown, never "not started", or the runtime
// could run it again.
func TestHeldResultChannelIsNeverNotStarted(t *testing.T) {
	_, err := callOutcome("held", nil, false, false, true, "killed", tailbuf.New(tailSize))
	if !errors.Is(err, tool.ErrUnknownOutcome) || errors.Is(err, ErrNotStarted) || errors.Is(err, tool.ErrNotExecuted) {
		t.Fatalf("held channel, no records: err = %v, want unknown outcome", err)
	}
	_, err = callOutcome("closed", nil, false, false, false, "killed", tailbuf.New(tailSize))
	if !errors.Is(err, ErrNotStarted) {
		t.Fatalf("closed channel, no records: err = %v, want not started", err)
	}
	out, err := callOutcome("held-ok", []byte(`{"event":"start"}`+"\n"+`{"ok":true,"output":"done"}`+"\n"), false, false, true, "", tailbuf.New(tailSize))
	if err != nil || !out.Success || out.Output != "done" {
		t.Fatalf("held channel with a complete result: out %+v, err %v, want the result", out, err)
	}
}

// TestOnlyUnsandboxedCallsReachTheStore: an unsandboxed Python call runs
// with the user's rights, so the run's stopping save checks the whole
// store; a sandboxed one cannot see the store.
func TestOnlyUnsandboxedCallsReachTheStore(t *testing.T) {
	e := &Executor{}
	if !e.ReachesStore(&ir.Tool{Name: "t", Body: ir.Body{Kind: ir.BodyPython}}) {
		t.Error("an unsandboxed Python tool must be taken to reach the store")
	}
	if e.ReachesStore(&ir.Tool{Name: "t", Sandbox: true, Body: ir.Body{Kind: ir.BodyPython}}) {
		t.Error("a sandboxed Python tool cannot reach the store")
	}
}
