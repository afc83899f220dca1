package pytool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/nexa-run/nexa/internal/tool"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nexa-run/nexa/internal/ir"
	"github.com/nexa-run/nexa/internal/sandbox"
)

// requireSandbox returns an executor whose sandboxed tools run under the
// detected bubblewrap. It skips without python3 or bwrap in PATH, and fails
// when bwrap is installed but does not work here (then every sandboxed tool
// would be refused, which these tests must not hide).
func requireSandbox(t *testing.T) *Executor {
	t.Helper()
	requirePython(t)
	if _, err := exec.LookPath(sandbox.DefaultBinary); err != nil {
		t.Skipf("bwrap not in PATH (%v): the sandboxed Python tool tests need bubblewrap (apt-get install bubblewrap)", err)
	}
	if err := sandbox.Available(); err != nil {
		t.Fatalf("bwrap is installed but unusable here: %v", err)
	}
	ex := New(Options{Sandbox: sandbox.Detect})
	t.Cleanup(func() { ex.Close() })
	return ex
}

func sandboxedTool(name, body string, params ...string) *ir.Tool {
	decl := bodyTool(name, body, params...)
	decl.Sandbox = true
	return decl
}

// mustSucceedSandboxed is mustSucceed for sandboxed tools.
func mustSucceedSandboxed(t *testing.T, r result) string {
	t.Helper()
	if r.err != nil {
		t.Fatalf("Execute: %v (log: %q)", r.err, r.log)
	}
	if !r.out.Success {
		t.Fatalf("tool failed: %q (log: %q)", r.out.Output, r.log)
	}
	if !r.out.Sandboxed {
		t.Fatalf("Sandboxed = false for a sandboxed tool")
	}
	return r.out.Output
}

func TestSandboxedToolFileSystem(t *testing.T) {
	t.Parallel()
	ex := requireSandbox(t)
	work := t.TempDir()
	outside := t.TempDir()
	hostDir, err := os.MkdirTemp("/var/tmp", "nexa-pytool-sandbox-")
	if err != nil {
		t.Skipf("no writable host directory outside /tmp: %v", err)
	}
	defer os.RemoveAll(hostDir)
	token := fmt.Sprintf("nexa-pytool-sandbox-%d", time.Now().UnixNano())
	etcProbe := "/etc/" + token
	defer os.Remove(etcProbe)
	defer os.Remove("/tmp/" + token)

	body := `
import errno
report = {"cwd": os.getcwd()}
def attempt(key, path, text="x"):
    try:
        with open(path, "w") as f:
            f.write(text)
        report[key] = "ok"
    except OSError as exc:
        report[key] = errno.errorcode.get(exc.errno, str(exc.errno))
attempt("work", "inside.txt", "written inside")
attempt("outside", os.path.join(outside, "x"))
attempt("host", os.path.join(host, "x"))
attempt("etc", etc)
attempt("tmp", "/tmp/" + token, "private")
with open("/tmp/" + token) as f:
    report["tmp_read"] = f.read()
print("hello from the sandbox")
return json.dumps(report, sort_keys=True)
`
	r := call{exec: ex, tool: sandboxedTool("fsprobe", body, "outside", "host", "etc", "token"), dir: work,
		args: map[string]string{"outside": outside, "host": hostDir, "etc": etcProbe, "token": token}}.do(t)
	out := mustSucceedSandboxed(t, r)
	var report map[string]string
	if err := json.Unmarshal([]byte(out), &report); err != nil {
		t.Fatalf("result %q: %v", out, err)
	}
	real, _ := filepath.EvalSymlinks(work)
	want := map[string]string{
		"cwd": real, "work": "ok", "outside": "ENOENT", "host": "EROFS", "etc": "EROFS",
		"tmp": "ok", "tmp_read": "private",
	}
	for k, v := range want {
		if report[k] != v {
			t.Errorf("%s = %q, want %q (report %v)", k, report[k], v, report)
		}
	}
	if !strings.Contains(r.log, "hello from the sandbox") {
		t.Errorf("print did not reach the log: %q", r.log)
	}
	if got, err := os.ReadFile(filepath.Join(work, "inside.txt")); err != nil || string(got) != "written inside" {
		t.Errorf("file written in the working directory: %q, %v", got, err)
	}
	for _, p := range []string{filepath.Join(outside, "x"), filepath.Join(hostDir, "x"), etcProbe, "/tmp/" + token} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists on the host after the sandboxed call", p)
		}
	}
}

func TestSandboxedToolHasNoNetwork(t *testing.T) {
	ex := requireSandbox(t)
	work := t.TempDir()

	var accepted atomic.Int32
	serve := func(l net.Listener) {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	go serve(tcp)
	sock := filepath.Join(work, "host.sock")
	unixL, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer unixL.Close()
	go serve(unixL)
	// Sanity: the listeners work from outside the sandbox.
	for _, addr := range [][2]string{{"tcp", tcp.Addr().String()}, {"unix", sock}} {
		c, err := net.Dial(addr[0], addr[1])
		if err != nil {
			t.Fatalf("dial %s from the host: %v", addr[1], err)
		}
		c.Close()
	}
	deadline := time.Now().Add(2 * time.Second)
	for accepted.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	accepted.Store(0)

	body := `
import socket
report = {}
def attempt(key, fn):
    start = time.monotonic()
    try:
        fn()
        report[key] = "connected"
    except OSError as exc:
        report[key] = type(exc).__name__
    report[key + "_seconds"] = round(time.monotonic() - start, 3)
attempt("loopback", lambda: socket.create_connection(("127.0.0.1", port), timeout=5).close())
attempt("external", lambda: socket.create_connection(("192.0.2.1", 80), timeout=5).close())
attempt("dns", lambda: socket.getaddrinfo("example.com", 443))
def unix_connect():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(sock)
    s.close()
attempt("unix", unix_connect)
return json.dumps(report)
`
	probe := sandboxedTool("netprobe", body, `port:{"type":"integer"}`, "sock")
	start := time.Now()
	out := mustSucceedSandboxed(t, call{exec: ex, tool: probe, dir: work,
		args: map[string]any{"port": tcp.Addr().(*net.TCPAddr).Port, "sock": sock}}.do(t))
	elapsed := time.Since(start)
	var report map[string]any
	if err := json.Unmarshal([]byte(out), &report); err != nil {
		t.Fatalf("result %q: %v", out, err)
	}
	t.Logf("report %v", report)
	keys := []string{"loopback", "external", "dns"}
	b, _ := sandbox.Detect()
	if b.SocketFilter() {
		keys = append(keys, "unix")
	}
	for _, k := range keys {
		if report[k] == "connected" || report[k] == nil {
			t.Errorf("%s: the sandboxed tool got through (report %v)", k, report)
		}
		if secs, _ := report[k+"_seconds"].(float64); secs > 2 {
			t.Errorf("%s took %.1fs to fail; it must fail at once", k, secs)
		}
	}
	if b.SocketFilter() && report["unix"] != "PermissionError" {
		t.Errorf("unix socket: %v, want PermissionError from the seccomp filter", report["unix"])
	}
	if n := accepted.Load(); n != 0 {
		t.Errorf("the host listeners accepted %d connections from the sandbox", n)
	}
	if elapsed > 15*time.Second {
		t.Errorf("the network probe took %s", elapsed)
	}
}

// hostProcesses lists live host processes whose command line contains
// marker (PIDs inside the sandbox mean nothing on the host).
func hostProcesses(marker string) []string {
	entries, _ := os.ReadDir("/proc")
	var found []string
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(cmdline, []byte(marker)) {
			continue
		}
		stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && (stat[i+2] == 'Z' || stat[i+2] == 'X') {
			continue
		}
		found = append(found, e.Name())
	}
	return found
}

func waitNoHostProcesses(t *testing.T, marker string) {
	t.Helper()
	deadline := time.Now().Add(hangCap)
	for {
		left := hostProcesses(marker)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("sandboxed processes %v still run after the call", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// sandboxSpawner starts a detached and an attached sleeper, both marked.
const sandboxSpawner = `
import subprocess, sys
code = "import time; time.sleep(300)"
subprocess.Popen([sys.executable, "-c", code, marker])
subprocess.Popen([sys.executable, "-c", code, marker], start_new_session=True)
open("spawned", "w").close()
`

func TestSandboxedTimeoutKillsEverything(t *testing.T) {
	t.Parallel()
	ex := requireSandbox(t)
	work := t.TempDir()
	marker := fmt.Sprintf("nexa-sandbox-marker-%d", time.Now().UnixNano())
	probe := sandboxedTool("slow", sandboxSpawner+"time.sleep(300)\n", "marker")
	// The timeout passes once both children are visible on the host, so
	// the check below proves they were killed, and the tool's code has
	// surely run: the outcome must be unknown.
	var seen atomic.Bool
	fired := expireWhen(ex, func() bool {
		if len(hostProcesses(marker)) >= 2 {
			seen.Store(true)
		}
		return seen.Load()
	})
	done := make(chan result, 1)
	go func() {
		done <- call{exec: ex, tool: probe, dir: work, args: map[string]string{"marker": marker}, timeout: time.Hour}.do(t)
	}()
	<-fired
	var r result
	select {
	case r = <-done:
	case <-time.After(hangCap):
		t.Fatal("Execute did not return after its timeout passed")
	}
	if !seen.Load() {
		t.Fatalf("the sandboxed children never showed up on the host (log %q)", r.log)
	}
	if !errors.Is(r.err, tool.ErrUnknownOutcome) {
		t.Fatalf("err = %v (outcome %+v), want ErrUnknownOutcome", r.err, r.out)
	}
	if !strings.Contains(r.err.Error(), "timeout") {
		t.Errorf("err %q does not mention the timeout", r.err)
	}
	waitNoHostProcesses(t, marker)
}

func TestSandboxedLeftoversAreKilledAfterReturn(t *testing.T) {
	t.Parallel()
	ex := requireSandbox(t)
	marker := fmt.Sprintf("nexa-sandbox-marker-%d", time.Now().UnixNano())
	probe := sandboxedTool("leaver", sandboxSpawner+"return 'done'\n", "marker")
	got := mustSucceedSandboxed(t, call{exec: ex, tool: probe, args: map[string]string{"marker": marker}}.do(t))
	if got != "done" {
		t.Fatalf("output = %q", got)
	}
	waitNoHostProcesses(t, marker)
}

func TestSandboxedOutcomes(t *testing.T) {
	t.Parallel()
	ex := requireSandbox(t)
	r := call{exec: ex, tool: sandboxedTool("boom", "raise ValueError('bad input')")}.do(t)
	if r.err != nil || r.out.Success || !r.out.Sandboxed || !strings.Contains(r.out.Output, "bad input") {
		t.Errorf("exception: out %+v, err %v", r.out, r.err)
	}
	r = call{exec: ex, tool: sandboxedTool("unsure", "raise ToolOutcomeUnknown('maybe')")}.do(t)
	if !errors.Is(r.err, tool.ErrUnknownOutcome) {
		t.Errorf("ToolOutcomeUnknown: err = %v", r.err)
	}
	got := mustSucceedSandboxed(t, call{exec: ex, tool: sandboxedTool("echo", "return {'x': x, 'key': nexa_secrets['K']}", "x"),
		args: map[string]string{"x": "ünï 'q' $(id)"}, secrets: map[string]string{"K": "s3cret"}}.do(t))
	if got != `{"x": "ünï 'q' $(id)", "key": "s3cret"}` {
		t.Errorf("round trip = %q", got)
	}
	// The same executor runs ordinary tools unsandboxed and says so.
	if out := mustSucceed(t, call{exec: ex, tool: bodyTool("plain", "return 'plain'")}.do(t)); out != "plain" {
		t.Errorf("ordinary tool = %q", out)
	}
}

func TestSandboxedToolInheritsNoStrayDescriptors(t *testing.T) {
	ex := requireSandbox(t)
	// A descriptor this process holds without close-on-exec, as one
	// inherited from nexa's parent would be.
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	stray, err := unix.FcntlInt(null.Fd(), unix.F_DUPFD, 150)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(stray)
	body := `
try:
    os.fstat(fd)
    return "open"
except OSError:
    return "closed"
`
	got := mustSucceedSandboxed(t, call{exec: ex, tool: sandboxedTool("fds", body, `fd:{"type":"integer"}`), args: map[string]int{"fd": stray}}.do(t))
	if got != "closed" {
		t.Fatalf("stray descriptor %d is %s inside the sandbox", stray, got)
	}
	// Control: the same descriptor does reach an unsandboxed tool on the
	// per-call path, so "closed" above is the bootstrap's doing.
	if got := mustSucceed(t, call{cold: true, tool: bodyTool("fds", body, `fd:{"type":"integer"}`), args: map[string]int{"fd": stray}}.do(t)); got != "open" {
		t.Fatalf("control: stray descriptor %d is %s in an unsandboxed tool; the test cannot tell whether the sandbox closed it", stray, got)
	}
	// A call forked by a zygote holds no inherited descriptor either.
	if got := mustSucceed(t, call{exec: ex, tool: bodyTool("fds", body, `fd:{"type":"integer"}`), args: map[string]int{"fd": stray}}.do(t)); got != "closed" {
		t.Fatalf("stray descriptor %d is %s in a warm call", stray, got)
	}
}

func TestSandboxedLegacyFileOutsideWorkDir(t *testing.T) {
	t.Parallel()
	ex := requireSandbox(t)
	srcDir := t.TempDir() // in /tmp: hidden unless exposed
	file := filepath.Join(srcDir, "legacy.py")
	src := "def legacy(name):\n    try:\n        open(__file__ + '.w', 'w')\n        return 'writable'\n    except OSError:\n        return 'hello ' + name\n"
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	probe := &ir.Tool{
		Name:       "legacy",
		Parameters: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`),
		Timeout:    60,
		Sandbox:    true,
		Body:       ir.Body{Kind: ir.BodyPython, PythonFile: file},
	}
	got := mustSucceedSandboxed(t, call{exec: ex, tool: probe, args: map[string]string{"name": "box"}}.do(t))
	if got != "hello box" {
		t.Fatalf("legacy file = %q, want it readable and read-only", got)
	}
}

// assertRefused checks that a sandboxed call was refused before anything
// ran.
func assertRefused(t *testing.T, ex *Executor, wants ...string) {
	t.Helper()
	dir := t.TempDir()
	r := call{exec: ex, tool: sandboxedTool("boxed", "open('ran', 'w').write('x')\nreturn 'ran'"), dir: dir}.do(t)
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Fatalf("a sandboxed tool ran without a sandbox")
	}
	err := r.err
	if !errors.Is(err, ErrSandboxUnavailable) || !errors.Is(err, ErrNotStarted) || !errors.Is(err, tool.ErrNotExecuted) || errors.Is(err, tool.ErrUnknownOutcome) {
		t.Fatalf("err = %v (outcome %+v), want a sandbox refusal", err, r.out)
	}
	var se *StartError
	if !errors.As(err, &se) || !se.SandboxUnavailable() {
		t.Fatalf("err %T does not expose SandboxUnavailable()", err)
	}
	for _, w := range wants {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("err %q lacks %q", err, w)
		}
	}
}

func TestSandboxUnavailableNeverRuns(t *testing.T) {
	requirePython(t)
	hint := "apt-get install bubblewrap"

	t.Run("no backend configured", func(t *testing.T) {
		assertRefused(t, New(Options{}), "no sandbox backend configured")
	})
	t.Run("bwrap not in PATH", func(t *testing.T) {
		empty := t.TempDir()
		ex := New(Options{Sandbox: func() (*sandbox.Bwrap, error) {
			t.Setenv("PATH", empty)
			return sandbox.Probe(sandbox.DefaultBinary)
		}})
		assertRefused(t, ex, "not installed or not in PATH", hint)
	})
	t.Run("bwrap fails its self-test", func(t *testing.T) {
		fake := filepath.Join(t.TempDir(), "bwrap")
		if err := os.WriteFile(fake, []byte("#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		ex := New(Options{Sandbox: func() (*sandbox.Bwrap, error) { return sandbox.Probe(fake) }})
		assertRefused(t, ex, "setting up uid map: Permission denied", hint)
		_, err := ex.Execute(context.Background(), tool.Invocation{Tool: sandboxedTool("x", "return 1"), WorkDir: t.TempDir()})
		if !errors.Is(err, sandbox.ErrUnavailable) {
			t.Errorf("err %v does not match sandbox.ErrUnavailable", err)
		}
	})
	t.Run("bwrap does not isolate", func(t *testing.T) {
		fake := filepath.Join(t.TempDir(), "bwrap")
		script := "#!/bin/sh\nwhile [ $# -gt 0 ] && [ \"$1\" != -- ]; do shift; done\nshift\nexec \"$@\"\n"
		if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		ex := New(Options{Sandbox: func() (*sandbox.Bwrap, error) { return sandbox.Probe(fake) }})
		assertRefused(t, ex, "not a working sandbox", hint)
	})
	t.Run("detector returns nothing", func(t *testing.T) {
		assertRefused(t, New(Options{Sandbox: func() (*sandbox.Bwrap, error) { return nil, nil }}))
	})
}

func TestSandboxedMissingInterpreterIsNotStarted(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	for _, python := range []string{"nexa-no-such-python", filepath.Join(t.TempDir(), "python3")} {
		ex := New(Options{Python: python, Sandbox: sandbox.Detect})
		r := call{exec: ex, tool: sandboxedTool("nopython", "return 1")}.do(t)
		if !errors.Is(r.err, ErrNotStarted) || errors.Is(r.err, tool.ErrUnknownOutcome) || errors.Is(r.err, ErrSandboxUnavailable) {
			t.Errorf("interpreter %s: err = %v, want not started (and not a sandbox refusal)", python, r.err)
		}
	}
}

func TestSandboxRefusesSystemWorkDir(t *testing.T) {
	t.Parallel()
	ex := requireSandbox(t)
	r := call{exec: ex, tool: sandboxedTool("rooted", "return 'ran'"), dir: "/"}.do(t)
	if !errors.Is(r.err, ErrNotStarted) || !strings.Contains(r.err.Error(), "system directory") {
		t.Fatalf("working directory /: err = %v, out %+v", r.err, r.out)
	}
}

func BenchmarkSandboxedPythonCall(b *testing.B) {
	requirePython(b)
	if err := sandbox.Available(); err != nil {
		b.Skipf("no sandbox: %v", err)
	}
	ex := New(Options{Sandbox: sandbox.Detect})
	probe := sandboxedTool("echo", "return x", "x")
	dir := b.TempDir()
	for b.Loop() {
		out, err := ex.Execute(context.Background(), tool.Invocation{Tool: probe, Arguments: json.RawMessage(`{"x":"y"}`), WorkDir: dir, Timeout: hangCap})
		if err != nil || out.Output != "y" {
			b.Fatalf("%+v %v", out, err)
		}
	}
}
