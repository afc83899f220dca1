package mcptool

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"github.com/nexa-run/nexa/internal/tool"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nexa-run/nexa/internal/ir"
)

// syncBuffer is a log that several goroutines may write.
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

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func testExe(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// stdioSpec is the spec of the test binary serving the given variant on
// stdio; extra words make distinct specs for the same tool set.
func stdioSpec(t *testing.T, variant string, extra ...string) string {
	return strings.Join(append([]string{"stdio:" + shellQuote(testExe(t)), "serve", variant}, extra...), " ")
}

// trusted marks a spec trust=annotations: after "stdio:" for a stdio
// spec, after the URL for an HTTP one.
func trusted(spec string) string {
	if rest, ok := strings.CutPrefix(spec, "stdio:"); ok {
		return "stdio:trust=annotations " + rest
	}
	return spec + " trust=annotations"
}

func testOptions(t *testing.T) (Options, *syncBuffer) {
	log := &syncBuffer{}
	t.Cleanup(func() {
		if t.Failed() && log.String() != "" {
			t.Logf("server log:\n%s", log.String())
		}
	})
	return Options{
		WorkDir:        t.TempDir(),
		Env:            []string{envServer + "=stdio", probeEnv + "=hello"},
		Log:            log,
		StopGrace:      500 * time.Millisecond,
		ConnectTimeout: 15 * time.Second,
	}, log
}

func connect(t *testing.T, raw string, opts Options) *Server {
	t.Helper()
	spec, err := ParseSpec(raw)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Connect(context.Background(), spec, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func call(t *testing.T, s *Server, name, args string) (tool.Outcome, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return s.Call(ctx, name, json.RawMessage(args), "")
}

func mustCall(t *testing.T, s *Server, name, args string) tool.Outcome {
	t.Helper()
	out, err := call(t, s, name, args)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return out
}

var testToolNames = []string{"append_note", "crash_tool", "echo_meta", "fail_tool", "gather", "mixed_content", "plain_echo", "protocol_error", "read_note", "slow_tool", "spawn_sleeper", "structured_only", "whereami"}

// checkCommon runs the checks shared by both transports, on a server
// marked trust=annotations (its annotations set the risk).
func checkCommon(t *testing.T, s *Server) {
	t.Helper()
	tools := s.Tools()
	var names []string
	for _, ti := range tools {
		names = append(names, ti.Name)
	}
	if strings.Join(names, ",") != strings.Join(testToolNames, ",") {
		t.Fatalf("tools (all pages, sorted) = %v, want %v", names, testToolNames)
	}
	risks := map[string]string{"read_note": RiskLow, "plain_echo": RiskHigh, "append_note": RiskMedium, "protocol_error": RiskHigh}
	for name, want := range risks {
		ti, ok := s.Tool(name)
		if !ok || ti.Risk != want {
			t.Errorf("risk of %s = %q, want %q", name, ti.Risk, want)
		}
	}
	if ti, _ := s.Tool("append_note"); !ti.Idempotent {
		t.Errorf("append_note: idempotentHint lost")
	}
	if ti, _ := s.Tool("plain_echo"); ti.Idempotent {
		t.Errorf("plain_echo: idempotent without a hint")
	}
	ti, _ := s.Tool("read_note")
	var schema map[string]any
	if err := json.Unmarshal(ti.InputSchema, &schema); err != nil || schema["type"] != "object" || schema["required"] == nil {
		t.Errorf("read_note schema = %s (%v)", ti.InputSchema, err)
	}

	if out := mustCall(t, s, "read_note", `{"name":"x"}`); !out.Success || out.Output != "note x" {
		t.Errorf("read_note = %+v", out)
	}
	if out := mustCall(t, s, "plain_echo", `{"text":"a <b> & c"}`); !out.Success || out.Output != "a <b> & c" {
		t.Errorf("plain_echo = %+v", out)
	}
	if out := mustCall(t, s, "fail_tool", ``); out.Success || out.Output != "boom: it failed" {
		t.Errorf("fail_tool = %+v", out)
	}
	if out := mustCall(t, s, "protocol_error", `{}`); out.Success || !strings.Contains(out.Output, "no such record") {
		t.Errorf("protocol_error = %+v", out)
	}
	if out := mustCall(t, s, "mixed_content", `{}`); out.Output != `hello
{"bytes":3,"mimeType":"image/png","type":"image"}
{"mimeType":"text/plain","text":"inside","type":"resource","uri":"file:///x.txt"}` {
		t.Errorf("mixed_content = %q", out.Output)
	}
	if out := mustCall(t, s, "structured_only", `{}`); out.Output != `{"a":1,"b":2}` {
		t.Errorf("structured_only = %q", out.Output)
	}

	// The idempotency key travels in _meta.
	ctx := context.Background()
	if out, err := s.Call(ctx, "echo_meta", nil, "run-1:call-7"); err != nil || out.Output != "run-1:call-7" {
		t.Errorf("echo_meta = %+v, %v", out, err)
	}

	// Refused before anything is sent.
	for _, c := range []struct{ name, args string }{{"no_such_tool", `{}`}, {"read_note", `[1]`}, {"read_note", `{"name":`}} {
		_, err := call(t, s, c.name, c.args)
		if !errors.Is(err, tool.ErrNotExecuted) || errors.Is(err, tool.ErrUnknownOutcome) {
			t.Errorf("%s(%s): err = %v, want not executed", c.name, c.args, err)
		}
	}

	// A timeout while the call is in flight: unknown outcome, and the
	// server stays usable.
	tctx, cancel := context.WithTimeoutCause(ctx, 300*time.Millisecond, timeoutCause(300*time.Millisecond))
	defer cancel()
	start := time.Now()
	_, err := s.Call(tctx, "slow_tool", json.RawMessage(`{"ms":20000}`), "")
	if !errors.Is(err, tool.ErrUnknownOutcome) || errors.Is(err, tool.ErrNotExecuted) || !strings.Contains(err.Error(), "timed out") {
		t.Errorf("slow_tool past its timeout: err = %v, want unknown outcome (timed out)", err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("timeout took %v", d)
	}
	if out := mustCall(t, s, "read_note", `{"name":"after"}`); out.Output != "note after" {
		t.Errorf("after a timeout: %+v", out)
	}
	if out := mustCall(t, s, "slow_tool", `{"ms":10}`); out.Output != "done" {
		t.Errorf("slow_tool (fast) = %+v", out)
	}
}

func TestStdioServer(t *testing.T) {
	opts, _ := testOptions(t)
	s := connect(t, trusted(stdioSpec(t, "base")), opts)
	if name, _ := s.Info(); name != "nexa-test-server" {
		t.Errorf("server name %q", name)
	}
	checkCommon(t, s)

	// Working directory and environment of the child.
	var where map[string]string
	if err := json.Unmarshal([]byte(mustCall(t, s, "whereami", `{}`).Output), &where); err != nil {
		t.Fatal(err)
	}
	wantDir, _ := filepath.EvalSymlinks(opts.WorkDir)
	gotDir, _ := filepath.EvalSymlinks(where["cwd"])
	if gotDir != wantDir || where["probe"] != "hello" {
		t.Errorf("whereami = %v, want cwd %s and probe hello", where, wantDir)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	_, err := call(t, s, "read_note", `{"name":"x"}`)
	if !errors.Is(err, tool.ErrNotExecuted) {
		t.Errorf("call after close: %v", err)
	}
	if !processGone(s.child.pid, 30*time.Second) {
		t.Errorf("server process %d still exists after Close", s.child.pid)
	}
}

// processGone reports whether pid disappears (or is a zombie nobody has
// reaped yet) within d.
func processGone(pid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return true
		}
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil {
			if f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:])); len(f) > 0 && f[0] == "Z" {
				return true
			}
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestStdioServerExitMidCall(t *testing.T) {
	opts, _ := testOptions(t)
	s := connect(t, stdioSpec(t, "base"), opts)
	start := time.Now()
	_, err := call(t, s, "crash_tool", `{}`)
	if !errors.Is(err, tool.ErrUnknownOutcome) || errors.Is(err, tool.ErrNotExecuted) {
		t.Fatalf("crash_tool: err = %v, want unknown outcome", err)
	}
	if !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "crash_tool: exiting now") {
		t.Errorf("message should give the exit status and stderr: %v", err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("noticing the exit took %v", d)
	}
	_, err = call(t, s, "read_note", `{"name":"x"}`)
	if !errors.Is(err, tool.ErrNotExecuted) || !strings.Contains(err.Error(), "exit status 3") {
		t.Errorf("call to an exited server: err = %v, want not executed", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("close after exit: %v", err)
	}
}

func TestStdioCloseKillsGroupAndInFlightCalls(t *testing.T) {
	opts, _ := testOptions(t)
	s := connect(t, stdioSpec(t, "base"), opts)
	pid, err := strconv.Atoi(mustCall(t, s, "spawn_sleeper", `{}`).Output)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })

	errc := make(chan error, 1)
	marker := filepath.Join(t.TempDir(), "running")
	go func() {
		rawArgs, _ := json.Marshal(map[string]any{"ms": 600000, "marker": marker})
		_, err := s.Call(context.Background(), "slow_tool", rawArgs, "")
		errc <- err
	}()
	// Close only once the server runs the call, so it is surely in flight.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(marker); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("slow_tool never started on the server")
		}
	}
	start := time.Now()
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("close took %v", d)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, tool.ErrUnknownOutcome) {
			t.Errorf("call in flight at Close: err = %v, want unknown outcome", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("call in flight did not return after Close")
	}
	if !processGone(pid, 30*time.Second) {
		t.Errorf("grandchild %d of the server survived Close", pid)
	}
	if !processGone(s.child.pid, 30*time.Second) {
		t.Errorf("server %d survived Close", s.child.pid)
	}
}

func TestStdioConnectFailures(t *testing.T) {
	opts, _ := testOptions(t)
	opts.ConnectTimeout = time.Second
	cases := []struct{ spec, want string }{
		{"stdio:nexa-no-such-command-4711", "executable file not found"},
		{`stdio:sh -c 'echo oops-not-mcp >&2; exit 2'`, "oops-not-mcp"},
		{`stdio:sh -c 'exec sleep 30'`, "connect"},
	}
	for _, c := range cases {
		spec, err := ParseSpec(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		s, err := Connect(context.Background(), spec, opts)
		if err == nil {
			_ = s.Close()
			t.Errorf("%s: connected", c.spec)
			continue
		}
		if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), spec.Raw) {
			t.Errorf("%s: err = %v, want it to mention %q and the spec", c.spec, err, c.want)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s: took %v", c.spec, d)
		}
	}
	if s, err := Connect(context.Background(), Spec{Raw: "x", Transport: "carrier-pigeon"}, opts); err == nil {
		_ = s.Close()
		t.Error("unknown transport accepted")
	}
}

func startHTTPTestServer(t *testing.T, variant string) *httptest.Server {
	t.Helper()
	srv := newTestServer(variant, true)
	ts := httptest.NewServer(mcpHTTPHandler(srv))
	t.Cleanup(ts.Close)
	return ts
}

func TestHTTPServer(t *testing.T) {
	opts, _ := testOptions(t)
	ts := startHTTPTestServer(t, "base")
	s := connect(t, trusted(ts.URL), opts)
	checkCommon(t, s)

	// The server goes away between calls: the next call cannot reach it,
	// so nothing ran.
	ts.Close()
	_, err := call(t, s, "read_note", `{"name":"x"}`)
	if !errors.Is(err, tool.ErrNotExecuted) || errors.Is(err, tool.ErrUnknownOutcome) {
		t.Errorf("call to a stopped HTTP server: err = %v, want not executed", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
}

// TestHTTPServerRestarted: a server that lost our session answers 404;
// the call did not run.
func TestHTTPServerRestarted(t *testing.T) {
	var h atomic.Pointer[http.Handler]
	set := func() {
		hh := mcpHTTPHandler(newTestServer("base", true))
		h.Store(&hh)
	}
	set()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*h.Load()).ServeHTTP(w, r) }))
	t.Cleanup(ts.Close)
	opts, _ := testOptions(t)
	s := connect(t, ts.URL, opts)
	mustCall(t, s, "read_note", `{"name":"x"}`)
	set() // a new handler knows no sessions
	for i := 0; i < 2; i++ {
		_, err := call(t, s, "read_note", `{"name":"x"}`)
		if !errors.Is(err, tool.ErrNotExecuted) || errors.Is(err, tool.ErrUnknownOutcome) {
			t.Errorf("call %d after the session was lost: err = %v, want not executed", i, err)
		}
	}
}

// startHTTPChild runs the test binary as a Streamable HTTP server in a
// process of its own, so a tool can make it exit mid-call. exited is
// closed once the process has exited.
func startHTTPChild(t *testing.T) (url string, exited <-chan struct{}) {
	t.Helper()
	cmd := exec.Command(testExe(t), "serve", "base")
	cmd.Env = append(os.Environ(), envServer+"=http")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stderr syncBuffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("HTTP test server did not start: %v (%s)", err, stderr.String())
	}
	return strings.TrimSpace(line), done
}

func TestHTTPServerExitMidCall(t *testing.T) {
	for _, args := range []string{`{}`, `{"ping":true}`} {
		t.Run(args, func(t *testing.T) { httpExitMidCall(t, args) })
	}
}

// httpExitMidCall makes the HTTP server exit in a call: with args {} before
// any response byte, with {"ping":true} after it opened the response stream
// (and sent a request on it).
func httpExitMidCall(t *testing.T, args string) {
	opts, _ := testOptions(t)
	url, exited := startHTTPChild(t)
	s := connect(t, url, opts)
	start := time.Now()
	_, err := call(t, s, "crash_tool", args)
	if !errors.Is(err, tool.ErrUnknownOutcome) || errors.Is(err, tool.ErrNotExecuted) {
		t.Fatalf("crash_tool over HTTP: err = %v, want unknown outcome", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("noticing the broken connection took %v", d)
	}
	if strings.Contains(args, "ping") && !strings.Contains(err.Error(), "broke while the call was in flight") {
		t.Errorf("a broken response stream should be named: %v", err)
	}
	// While the process is being torn down, its listener may still
	// complete a handshake; once it is gone, nothing can be reached.
	if !waitFor(exited, 5*time.Second) {
		t.Fatal("the HTTP test server did not exit")
	}
	_, err = call(t, s, "read_note", `{"name":"x"}`)
	if !errors.Is(err, tool.ErrNotExecuted) {
		t.Errorf("call after the server died: err = %v, want not executed", err)
	}
}

func TestHTTPConnectRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	opts, _ := testOptions(t)
	spec, _ := ParseSpec("http://" + addr + "/mcp")
	if s, err := Connect(context.Background(), spec, opts); err == nil {
		_ = s.Close()
		t.Fatal("connected to a closed port")
	} else if !strings.Contains(err.Error(), addr) {
		t.Errorf("err = %v, want the address", err)
	}
}

func TestSchemaHash(t *testing.T) {
	opts, _ := testOptions(t)
	a := connect(t, stdioSpec(t, "base"), opts)
	b := connect(t, stdioSpec(t, "base", "again"), opts)
	h := connect(t, startHTTPTestServer(t, "base").URL, opts)
	changed := connect(t, stdioSpec(t, "changed"), opts)
	if !strings.HasPrefix(a.SchemaHash(), "sha256:") || len(a.SchemaHash()) != len("sha256:")+64 {
		t.Fatalf("hash %q", a.SchemaHash())
	}
	// Trust is the program's word, in the spec (and so in the source
	// hash), not the server's: the hash of its tool list stays the same.
	tr := connect(t, trusted(stdioSpec(t, "base")), opts)
	if a.SchemaHash() != b.SchemaHash() || a.SchemaHash() != h.SchemaHash() || a.SchemaHash() != tr.SchemaHash() {
		t.Errorf("same tools, different hashes: %s %s %s %s", a.SchemaHash(), b.SchemaHash(), h.SchemaHash(), tr.SchemaHash())
	}
	if a.SchemaHash() == changed.SchemaHash() {
		t.Errorf("a changed schema kept the hash %s", a.SchemaHash())
	}
	// The hash depends on the tool set, not on its order.
	tools := a.Tools()
	rev := make([]ToolInfo, len(tools))
	for i := range tools {
		rev[len(tools)-1-i] = tools[i]
	}
	if schemaHash(rev) != a.SchemaHash() {
		t.Error("hash depends on the order of tools")
	}
	// Each hashed part matters.
	mut := func(f func(*ToolInfo)) string {
		c := append([]ToolInfo(nil), tools...)
		f(&c[0])
		return schemaHash(c)
	}
	for name, f := range map[string]func(*ToolInfo){
		"description": func(t *ToolInfo) { t.Description += "!" },
		"annotations": func(t *ToolInfo) { t.Annotations.ReadOnly = !t.Annotations.ReadOnly },
		"name":        func(t *ToolInfo) { t.Name += "2" },
		"schema":      func(t *ToolInfo) { t.InputSchema = json.RawMessage(`{"type":"object","properties":{}}`) },
	} {
		if mut(f) == a.SchemaHash() {
			t.Errorf("changing the %s kept the hash", name)
		}
	}
}

func TestManager(t *testing.T) {
	opts, _ := testOptions(t)
	m := NewManager(opts)
	t.Cleanup(func() { _ = m.Close() })
	base := stdioSpec(t, "base")
	ctx := context.Background()

	if err := m.Connect(ctx, base, "  "+base+"  "); err != nil {
		t.Fatal(err)
	}
	if n := len(m.Servers()); n != 1 {
		t.Fatalf("%d servers for one spec", n)
	}
	// The same tools from another server clash; the manager keeps its
	// state and the error names both servers.
	other := stdioSpec(t, "base", "other")
	err := m.Connect(ctx, other)
	if err == nil || !strings.Contains(err.Error(), "clash") || !strings.Contains(err.Error(), base) || !strings.Contains(err.Error(), other) {
		t.Fatalf("clash: err = %v", err)
	}
	if n := len(m.Servers()); n != 1 || m.Server(other) != nil {
		t.Fatalf("a clashing server was kept")
	}
	// Two new servers clashing with each other.
	m2 := NewManager(opts)
	if err := m2.Connect(ctx, stdioSpec(t, "base", "x"), stdioSpec(t, "changed", "y")); err == nil || !strings.Contains(err.Error(), `"read_note"`) {
		t.Errorf("clash between new servers: err = %v", err)
	}
	if len(m2.Servers()) != 0 {
		t.Error("servers kept after a failed Connect")
	}
	_ = m2.Close()
	// A bad spec refuses everything.
	if err := m.Connect(ctx, "ftp://example.com"); err == nil {
		t.Error("bad spec accepted")
	}

	recs := m.Records()
	if len(recs) != 1 || recs[0].Spec != base || recs[0].SchemaHash != m.Server(base).SchemaHash() {
		t.Errorf("records = %+v", recs)
	}
	tools := m.Tools()
	if len(tools) != len(testToolNames) {
		t.Fatalf("%d compile tools", len(tools))
	}
	byName := map[string]*ir.Tool{}
	for _, ct := range tools {
		byName[ct.Name] = ct
		if ct.Body.Kind != ir.BodyMCP || ct.Body.MCP != base || ct.Timeout != DefaultToolTimeout {
			t.Errorf("compile tool %s: %+v", ct.Name, ct)
		}
	}
	// The server is not marked trusted: its annotations lower nothing,
	// make nothing idempotent, and are shown in the description.
	for _, name := range []string{"plain_echo", "append_note", "read_note"} {
		if ct := byName[name]; ct.Risk != "high" || !ct.NeedsApproval() || ct.Idempotent {
			t.Errorf("%s of an untrusted server: risk %q, needs approval %v, idempotent %v", name, ct.Risk, ct.NeedsApproval(), ct.Idempotent)
		}
	}
	if d := byName["read_note"].Description; d != "Read a note. (MCP annotations of an untrusted server, not used for approval: readOnlyHint: true)" {
		t.Errorf("read_note's description = %q", d)
	}
	if d := byName["append_note"].Description; !strings.Contains(d, "destructiveHint: false, idempotentHint: true)") {
		t.Errorf("append_note's description = %q", d)
	}
	if d := byName["plain_echo"].Description; strings.Contains(d, "untrusted") {
		t.Errorf("plain_echo states no annotation, yet its description = %q", d)
	}
	// The same server marked trusted: its annotations set risk and
	// idempotence, and the description is the server's.
	mt := NewManager(opts)
	t.Cleanup(func() { _ = mt.Close() })
	if err := mt.Connect(ctx, trusted(base)); err != nil {
		t.Fatal(err)
	}
	for _, ct := range mt.Tools() {
		byName[ct.Name] = ct
	}
	if ct := byName["plain_echo"]; ct.Risk != "high" || !ct.NeedsApproval() {
		t.Errorf("plain_echo: risk %q, needs approval %v", ct.Risk, ct.NeedsApproval())
	}
	if ct := byName["append_note"]; ct.Risk != "medium" || ct.NeedsApproval() || !ct.Idempotent {
		t.Errorf("append_note: %+v", ct)
	}
	if ct := byName["read_note"]; ct.Risk != "low" || ct.NeedsApproval() || ct.Description != "Read a note." {
		t.Errorf("read_note: %+v", ct)
	}
	for _, ct := range tools {
		byName[ct.Name] = ct
	}

	// Execute routes by tool and passes RUN_ID:CALL_ID.
	out, err := m.Execute(ctx, tool.Invocation{RunID: "r1", CallID: "c2", Tool: byName["echo_meta"], Arguments: json.RawMessage(`{}`), Timeout: 10 * time.Second})
	if err != nil || !out.Success || out.Output != "r1:c2" {
		t.Errorf("execute echo_meta = %+v, %v", out, err)
	}
	_, err = m.Execute(ctx, tool.Invocation{RunID: "r1", CallID: "c3", Tool: byName["slow_tool"], Arguments: json.RawMessage(`{"ms":20000}`), Timeout: 200 * time.Millisecond})
	if !errors.Is(err, tool.ErrUnknownOutcome) || !strings.Contains(err.Error(), "timeout of 200ms") {
		t.Errorf("execute past timeout: %v", err)
	}
	_, err = m.Execute(ctx, tool.Invocation{Tool: &ir.Tool{Name: "nope"}})
	if !errors.Is(err, tool.ErrNotExecuted) {
		t.Errorf("execute unknown tool: %v", err)
	}
	if _, err := m.Execute(ctx, tool.Invocation{}); !errors.Is(err, tool.ErrNotExecuted) {
		t.Errorf("execute without tool: %v", err)
	}

	if err := m.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if _, err := m.Execute(ctx, tool.Invocation{Tool: byName["read_note"], Arguments: json.RawMessage(`{"name":"x"}`)}); !errors.Is(err, tool.ErrNotExecuted) {
		t.Errorf("execute after close: %v", err)
	}
	if err := m.Connect(ctx, base); err == nil {
		t.Error("connect after close accepted")
	}
}
