package pytool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/nexa-run/nexa/internal/tool"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nexa-run/nexa/internal/ir"
)

// invoke runs tool on ex as call callID and returns the result.
func invoke(t *testing.T, ex *Executor, decl *ir.Tool, args any, dir, callID string, secrets map[string]string) result {
	t.Helper()
	raw := json.RawMessage(`{}`)
	if args != nil {
		b, err := json.Marshal(args)
		if err != nil {
			t.Fatal(err)
		}
		raw = b
	}
	log := &syncBuffer{}
	out, err := ex.Execute(context.Background(), tool.Invocation{RunID: "run-1", CallID: callID, Tool: decl,
		Arguments: raw, WorkDir: dir, Secrets: secrets, Timeout: hangCap, Log: log})
	return result{out, err, log.String()}
}

// counters reads the warm path's counters.
func counters(ex *Executor) (starts, warm, fallbacks int64) {
	z := ex.zygotes
	return z.starts.Load(), z.warmCalls.Load(), z.fallbacks.Load()
}

// grandparent is a Python expression: the pid of the tool's parent's
// parent. A process nexa starts has a supervisor as its parent (package
// proctree), so a per-call interpreter's grandparent is nexa, and a forked
// call's is the zygote's supervisor, whose pid the executor knows.
const grandparent = "int(open('/proc/%d/stat' % os.getppid()).read().rsplit(')', 1)[1].split()[1])"

func onlyZygote(t *testing.T, ex *Executor) int {
	t.Helper()
	pids := ex.zygotes.pids()
	if len(pids) != 1 {
		t.Fatalf("zygotes = %v, want exactly one", pids)
	}
	return pids[0]
}

func TestWarmCallsAreForkedByOneZygote(t *testing.T) {
	t.Parallel()
	requirePython(t)
	ex := newExec(t, false, Options{})
	dir := t.TempDir()
	tool := bodyTool("who", "return [os.getpid(), "+grandparent+", os.getpgid(0), os.getsid(0)]")
	seen := map[int]bool{}
	var ppid int
	for i := 0; i < 3; i++ {
		got := mustSucceed(t, invoke(t, ex, tool, nil, dir, fmt.Sprint("c", i), nil))
		var ids []int
		if err := json.Unmarshal([]byte(got), &ids); err != nil {
			t.Fatalf("output %q: %v", got, err)
		}
		if seen[ids[0]] {
			t.Fatalf("pid %d served two calls", ids[0])
		}
		seen[ids[0]] = true
		if ids[2] != ids[0] {
			t.Errorf("call pgid %d != its pid %d: not a group of its own", ids[2], ids[0])
		}
		if ids[3] != os.Getpid() && ids[3] != mustSid(t) {
			t.Errorf("call session %d is not nexa's (%d)", ids[3], mustSid(t))
		}
		ppid = ids[1]
	}
	if z := onlyZygote(t, ex); ppid != z || ppid == os.Getpid() {
		t.Fatalf("calls' parent's parent = %d, want the zygote's supervisor %d", ppid, z)
	}
	if s, w, f := counters(ex); s != 1 || w != 3 || f != 0 {
		t.Fatalf("starts %d, warm calls %d, fallbacks %d; want 1, 3, 0", s, w, f)
	}
}

func mustSid(t *testing.T) int {
	t.Helper()
	sid, err := unix.Getsid(0)
	if err != nil {
		t.Fatal(err)
	}
	return sid
}

// TestStateDoesNotLeakBetweenCalls: whatever one call does to its
// interpreter, the next call on the same executor does not see it.
func TestStateDoesNotLeakBetweenCalls(t *testing.T) {
	t.Parallel()
	requirePython(t)
	umask := syscall.Umask(0o022)
	syscall.Umask(umask)
	bothPaths(t, func(t *testing.T, cold bool) {
		ex := newExec(t, cold, Options{})
		dir := t.TempDir()
		if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		polluter := bodyTool("polluter", `
import builtins, json as _json, colorsys, random, signal, threading
builtins.NEXA_LEAK = "builtins"
_json.NEXA_LEAK = "module"
globals()["NEXA_GLOBAL"] = "global"
os.environ["NEXA_LEAK_ENV"] = "env"
os.putenv("NEXA_LEAK_PUTENV", "putenv")
os.chdir("sub")
sys.path.append("/nexa-leak")
sys.modules["nexa_fake_module"] = sys
sys.setrecursionlimit(4321)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
os.umask(0o077)
threading.Thread(target=time.sleep, args=(0.2,), daemon=False).start()
# The bootstrap's own classes come from the zygote, made once for every
# call: what one call does to them stays in its process.
ToolOutcomeUnknown.NEXA_LEAK = "class"
type(nexa_secrets).NEXA_LEAK = "class"
type(nexa_secrets).get = lambda self, key, default=None: "leaked"
return [random.random(), nexa_secrets.get("K"), os.environ["NEXA_CALL_ID"]]
`)
		observer := bodyTool("observer", `
import builtins, json as _json, random, signal, subprocess, threading
mask = os.umask(0o022)
return {
    "builtins": hasattr(builtins, "NEXA_LEAK"),
    "module": hasattr(_json, "NEXA_LEAK"),
    "global": "NEXA_GLOBAL" in globals(),
    "env": os.environ.get("NEXA_LEAK_ENV"),
    "putenv": subprocess.run(["sh", "-c", "printf %s \"$NEXA_LEAK_PUTENV\""], capture_output=True, text=True).stdout,
    "cwd": os.getcwd(),
    "path": "/nexa-leak" in sys.path,
    "colorsys": "colorsys" in sys.modules,
    "fake": "nexa_fake_module" in sys.modules,
    "recursion": sys.getrecursionlimit() != 4321,
    "sigterm": signal.getsignal(signal.SIGTERM) == signal.SIG_DFL,
    "umask": mask,
    "threads": threading.active_count(),
    "random": random.random(),
    "secret": nexa_secrets.get("K"),
    "classes": hasattr(ToolOutcomeUnknown, "NEXA_LEAK") or hasattr(type(nexa_secrets), "NEXA_LEAK"),
    "call": os.environ["NEXA_CALL_ID"],
    "sub_call": subprocess.run(["sh", "-c", "printf %s \"$NEXA_IDEMPOTENCY_KEY\""], capture_output=True, text=True).stdout,
}
`)
		first := mustSucceed(t, invoke(t, ex, polluter, nil, dir, "call-1", map[string]string{"K": "first-secret"}))
		var p []any
		if err := json.Unmarshal([]byte(first), &p); err != nil {
			t.Fatalf("polluter output %q: %v", first, err)
		}
		if p[1] != "leaked" || p[2] != "call-1" {
			t.Fatalf("polluter saw %v", p)
		}
		got := mustSucceed(t, invoke(t, ex, observer, nil, dir, "call-2", nil))
		var o map[string]any
		if err := json.Unmarshal([]byte(got), &o); err != nil {
			t.Fatalf("observer output %q: %v", got, err)
		}
		real, _ := filepath.EvalSymlinks(dir)
		want := map[string]any{
			"builtins": false, "module": false, "global": false, "env": nil, "putenv": "",
			"cwd": real, "path": false, "colorsys": false, "fake": false, "recursion": true,
			"sigterm": true, "umask": float64(umask), "threads": float64(1), "secret": nil, "classes": false, "call": "call-2",
			"sub_call": "run-1:call-2",
		}
		for k, v := range want {
			if o[k] != v {
				t.Errorf("%s = %v, want %v (observer saw %s)", k, o[k], v, got)
			}
		}
		if o["random"] == p[0] {
			t.Errorf("two calls drew the same random number %v: the generator state was shared", p[0])
		}
		if !cold {
			if s, w, f := counters(ex); s != 1 || w != 2 || f != 0 {
				t.Errorf("starts %d, warm calls %d, fallbacks %d; want 1, 2, 0", s, w, f)
			}
		}
	})
}

func TestEnvironmentBytesAndChanges(t *testing.T) {
	requirePython(t)
	body := `return [os.environb.get(b"NEXA_TEST_BYTES", b"").hex(), os.environ.get("NEXA_TEST_VAR")]`
	bothPaths(t, func(t *testing.T, cold bool) {
		// Values that are not UTF-8 reach the tool byte for byte.
		ex := newExec(t, cold, Options{Env: []string{"PATH=" + os.Getenv("PATH"), "NEXA_TEST_BYTES=\xff\xfeok"}})
		got := mustSucceed(t, invoke(t, ex, bodyTool("bytes", body), nil, t.TempDir(), "c", nil))
		if got != `["fffe6f6b", null]` {
			t.Fatalf("got %s", got)
		}
		// Without Options.Env, a change of nexa's environment reaches the
		// next call (through a new zygote on the warm path).
		ex = newExec(t, cold, Options{})
		dir := t.TempDir()
		for _, v := range []string{"one", "two"} {
			t.Setenv("NEXA_TEST_VAR", v)
			got := mustSucceed(t, invoke(t, ex, bodyTool("var", body), nil, dir, "c", nil))
			if want := `["", "` + v + `"]`; got != want {
				t.Fatalf("got %s, want %s", got, want)
			}
		}
		if !cold {
			if s, _, f := counters(ex); s != 2 || f != 0 {
				t.Fatalf("starts %d, fallbacks %d; want 2, 0", s, f)
			}
		}
	})
}

func TestWarmConcurrentCalls(t *testing.T) {
	t.Parallel()
	requirePython(t)
	ex := newExec(t, false, Options{})
	dir := t.TempDir()
	tool := bodyTool("conc", "time.sleep(0.05)\nprint('log of', x)\nreturn [x, os.environ['NEXA_CALL_ID'], os.getpid()]", "x")
	const n = 12
	var wg sync.WaitGroup
	results := make([]result, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = invoke(t, ex, tool, map[string]string{"x": fmt.Sprint("arg-", i)}, dir, fmt.Sprint("call-", i), nil)
		}()
	}
	wg.Wait()
	pids := map[float64]bool{}
	for i, r := range results {
		got := mustSucceed(t, r)
		var v []any
		if err := json.Unmarshal([]byte(got), &v); err != nil {
			t.Fatalf("call %d output %q: %v", i, got, err)
		}
		if v[0] != fmt.Sprint("arg-", i) || v[1] != fmt.Sprint("call-", i) {
			t.Errorf("call %d got %v", i, v)
		}
		if want := fmt.Sprint("log of arg-", i); strings.TrimSpace(r.log) != want {
			t.Errorf("call %d log %q, want %q", i, r.log, want)
		}
		pids[v[2].(float64)] = true
	}
	if len(pids) != n {
		t.Errorf("%d distinct processes for %d calls", len(pids), n)
	}
	if s, w, f := counters(ex); s != 1 || w != n || f != 0 {
		t.Fatalf("starts %d, warm calls %d, fallbacks %d; want 1, %d, 0", s, w, f, n)
	}
}

// childrenOf lists the children of every thread of process pid.
func childrenOf(t *testing.T, pid int) []int {
	t.Helper()
	lists, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	if err != nil || len(lists) == 0 {
		t.Fatalf("children of %d: %v (no /proc/PID/task/*/children)", pid, err)
	}
	var out []int
	for _, l := range lists {
		b, err := os.ReadFile(l)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range strings.Fields(string(b)) {
			n, err := strconv.Atoi(f)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, n)
		}
	}
	return out
}

func TestWarmZygoteKilledBetweenCalls(t *testing.T) {
	t.Parallel()
	requirePython(t)
	ex := newExec(t, false, Options{})
	dir := t.TempDir()
	tool := bodyTool("ping", "return 'pong'")
	mustSucceed(t, invoke(t, ex, tool, nil, dir, "c1", nil))
	z := onlyZygote(t, ex)
	// z is the zygote's supervisor; the interpreter that forks the
	// calls is its child and dies with it, a moment later. Wait for both:
	// a spare child forked before the kill runs a call only while that
	// interpreter is alive, so only then is the restart certain.
	kids := childrenOf(t, z)
	if err := syscall.Kill(z, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, z)
	for _, pid := range kids {
		waitGone(t, pid)
	}
	if got := mustSucceed(t, invoke(t, ex, tool, nil, dir, "c2", nil)); got != "pong" {
		t.Fatalf("after the zygote died: %q", got)
	}
	if s, w, f := counters(ex); s != 2 || w != 2 || f != 0 {
		t.Fatalf("starts %d, warm calls %d, fallbacks %d; want 2, 2, 0 (a restarted zygote)", s, w, f)
	}
	if z2 := onlyZygote(t, ex); z2 == z {
		t.Fatalf("the dead zygote %d is still in use", z)
	}
}

func TestWarmZygoteKilledDuringCall(t *testing.T) {
	t.Parallel()
	requirePython(t)
	ex := newExec(t, false, Options{})
	dir := t.TempDir()
	victim := bodyTool("victim", spawnSleeper+"os.kill(os.getppid(), 9)\ntime.sleep(30)\n")
	start := time.Now()
	r := invoke(t, ex, victim, nil, dir, "c1", nil)
	if !errors.Is(r.err, tool.ErrUnknownOutcome) || !strings.Contains(r.err.Error(), "warm interpreter stopped") {
		t.Fatalf("err = %v (outcome %+v), want an unknown outcome saying the zygote stopped", r.err, r.out)
	}
	t.Log(r.err)
	if time.Since(start) > hangCap {
		t.Errorf("the call took %s", time.Since(start))
	}
	waitGone(t, readPid(t, filepath.Join(dir, "child.pid")))
	// The next call gets a new zygote.
	if got := mustSucceed(t, invoke(t, ex, bodyTool("ping", "return 'pong'"), nil, dir, "c2", nil)); got != "pong" {
		t.Fatalf("after the zygote died: %q", got)
	}
}

func TestWarmZygoteCannotStartFallsBack(t *testing.T) {
	t.Parallel()
	requirePython(t)
	ex := newExec(t, false, Options{})
	ex.zygotes.program = "import sys; sys.stderr.write('injected failure'); sys.exit(3)"
	dir := t.TempDir()
	tool := bodyTool("fb", "return ["+grandparent+", os.environ['NEXA_CALL_ID']]")
	for i := 0; i < 3; i++ {
		got := mustSucceed(t, invoke(t, ex, tool, nil, dir, fmt.Sprint("c", i), nil))
		if want := fmt.Sprintf(`[%d, "c%d"]`, os.Getpid(), i); got != want {
			t.Fatalf("got %s, want %s (a per-call child of nexa)", got, want)
		}
	}
	if s, w, f := counters(ex); s != 0 || w != 0 || f != 3 {
		t.Fatalf("starts %d, warm calls %d, fallbacks %d; want 0, 0, 3", s, w, f)
	}
}

func TestWarmZygoteMisbehavingIsReplacedThenFallsBack(t *testing.T) {
	t.Parallel()
	requirePython(t)
	ex := newExec(t, false, Options{})
	// Says it is ready, then never forks.
	ex.zygotes.program = "import socket, time\ns = socket.socket(fileno=3)\ns.send(b'{\"ready\": true}')\ntime.sleep(60)\n"
	ex.zygotes.spawn = 300 * time.Millisecond
	dir := t.TempDir()
	got := mustSucceed(t, invoke(t, ex, bodyTool("mis", "return 'ok'"), nil, dir, "c", nil))
	if got != "ok" {
		t.Fatalf("got %q", got)
	}
	if s, w, f := counters(ex); s != 2 || w != 0 || f != 1 {
		t.Fatalf("starts %d, warm calls %d, fallbacks %d; want 2 (one restart), 0, 1", s, w, f)
	}
}

// descendants lists the live processes whose parent chain leads to pid.
func descendants(pid int) []int {
	parent := map[int]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 || i+2 >= len(stat) {
			continue
		}
		fields := strings.Fields(string(stat[i+2:]))
		if len(fields) < 2 || fields[0] == "Z" || fields[0] == "X" {
			continue
		}
		pp, _ := strconv.Atoi(fields[1])
		parent[p] = pp
	}
	var out []int
	for p := range parent {
		for q, n := parent[p], 0; q > 0 && n < 64; q, n = parent[q], n+1 {
			if q == pid {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// Not parallel: it counts every descendant of the test process.
func TestCloseLeavesNoProcesses(t *testing.T) {
	requirePython(t)
	ex := New(Options{})
	dir := t.TempDir()
	marker := fmt.Sprintf("nexa-close-marker-%d", time.Now().UnixNano())
	mustSucceed(t, invoke(t, ex, bodyTool("ping", "return 'pong'"), nil, dir, "c1", nil))
	// A second zygote, for another working directory, and a call in
	// flight on it with a subprocess of its own.
	other := t.TempDir()
	sleeper := bodyTool("inflight", `
import subprocess
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", marker])
open("spawned", "w").close()
time.sleep(300)
`, "marker")
	done := make(chan result, 1)
	go func() { done <- invoke(t, ex, sleeper, map[string]string{"marker": marker}, other, "c2", nil) }()
	for deadline := time.Now().Add(hangCap); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(other, "spawned")); err == nil {
			break
		}
	}
	zs := ex.zygotes.pids()
	if len(zs) != 2 {
		t.Fatalf("zygotes %v, want 2", zs)
	}
	if len(hostProcesses(marker)) != 1 {
		t.Fatalf("the in-flight call's subprocess is not running")
	}
	before := descendants(os.Getpid())
	if len(before) < 4 {
		t.Fatalf("descendants before Close: %v, want 2 zygotes, a call and its subprocess", before)
	}
	if err := ex.Close(); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if !errors.Is(r.err, tool.ErrUnknownOutcome) {
		t.Errorf("in-flight call: err = %v, want unknown outcome", r.err)
	}
	t.Log(r.err)
	waitNoHostProcesses(t, marker)
	for _, z := range zs {
		if !processGone(z) {
			t.Errorf("zygote %d still runs after Close", z)
		}
	}
	deadline := time.Now().Add(hangCap)
	for left := descendants(os.Getpid()); len(left) > 0; left = descendants(os.Getpid()) {
		if time.Now().After(deadline) {
			t.Fatalf("processes %v still run after Close", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Close is idempotent, and later calls run per call.
	if err := ex.Close(); err != nil {
		t.Fatal(err)
	}
	got := mustSucceed(t, invoke(t, ex, bodyTool("after", "return "+grandparent), nil, dir, "c3", nil))
	if got != strconv.Itoa(os.Getpid()) {
		t.Fatalf("call after Close: parent %s, want nexa %d", got, os.Getpid())
	}
}

func TestZygoteExitsWhenNexaGoes(t *testing.T) {
	t.Parallel()
	requirePython(t)
	ex := newExec(t, false, Options{})
	mustSucceed(t, invoke(t, ex, bodyTool("ping", "return 'pong'"), nil, t.TempDir(), "c", nil))
	z := onlyZygote(t, ex)
	// Closing nexa's end of the control socket is what the zygote sees
	// when nexa exits, however it exits.
	ex.zygotes.mu.Lock()
	var zz *zygote
	for _, slot := range ex.zygotes.slots {
		zz = slot.z
	}
	ex.zygotes.mu.Unlock()
	zz.conn.Close()
	waitGone(t, z)
}

func TestWarmRemovedWorkDir(t *testing.T) {
	t.Parallel()
	requirePython(t)
	bothPaths(t, func(t *testing.T, cold bool) {
		ex := newExec(t, cold, Options{})
		dir := filepath.Join(t.TempDir(), "work")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		tool := bodyTool("cwd", "open('ran', 'w').close()\nreturn os.getcwd()")
		mustSucceed(t, invoke(t, ex, tool, nil, dir, "c1", nil))
		// Removed: not started, and says why.
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		r := invoke(t, ex, tool, nil, dir, "c2", nil)
		if !errors.Is(r.err, ErrNotStarted) || !strings.Contains(r.err.Error(), "working directory") {
			t.Fatalf("removed working directory: err = %v, out %+v", r.err, r.out)
		}
		// Made again: the call runs there, not in the zygote's old one.
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		mustSucceed(t, invoke(t, ex, tool, nil, dir, "c3", nil))
		if _, err := os.Stat(filepath.Join(dir, "ran")); err != nil {
			t.Fatalf("the call did not run in the new directory: %v", err)
		}
	})
}

// TestInterpreterExitSemantics: a forked call ends like a fresh interpreter
// before Execute returns: non-daemon threads are joined, atexit handlers
// run, live buffered files are flushed and temporary files left open are
// removed (a forked call tears down what it created, then leaves with
// os._exit; see _nexa_leave_fork).
func TestInterpreterExitSemantics(t *testing.T) {
	t.Parallel()
	requirePython(t)
	body := `
import atexit, threading
keep = open("buffered.txt", "w")
keep.write("flushed at exit")
sys.modules["__main__"].nexa_test_keep = keep
def late():
    time.sleep(0.3)
    with open("thread.txt", "w") as f:
        f.write("joined")
threading.Thread(target=late).start()
def at_exit():
    with open("atexit.txt", "w") as f:
        f.write("ran")
atexit.register(at_exit)
import tempfile
tmp = tempfile.NamedTemporaryFile(dir=os.getcwd(), prefix="left-open-", delete=True)
sys.modules["__main__"].nexa_test_tmp = tmp
return "returned"
`
	bothPaths(t, func(t *testing.T, cold bool) {
		ex := newExec(t, cold, Options{})
		dir := t.TempDir()
		if got := mustSucceed(t, invoke(t, ex, bodyTool("exiter", body), nil, dir, "c", nil)); got != "returned" {
			t.Fatalf("got %q", got)
		}
		for file, want := range map[string]string{"buffered.txt": "flushed at exit", "thread.txt": "joined", "atexit.txt": "ran"} {
			if b, err := os.ReadFile(filepath.Join(dir, file)); err != nil || string(b) != want {
				t.Errorf("%s = %q, %v; want %q", file, b, err, want)
			}
		}
		// A temporary file the tool left open is removed at exit.
		if left, _ := filepath.Glob(filepath.Join(dir, "left-open-*")); len(left) != 0 {
			t.Errorf("temporary files left behind: %v", left)
		}
	})
}

func TestDroppedExecutorStopsItsZygote(t *testing.T) {
	requirePython(t)
	z := func() int {
		ex := New(Options{})
		mustSucceed(t, invoke(t, ex, bodyTool("ping", "return 'pong'"), nil, t.TempDir(), "c", nil))
		return onlyZygote(t, ex)
	}()
	deadline := time.Now().Add(hangCap)
	for !processGone(z) {
		if time.Now().After(deadline) {
			t.Fatalf("zygote %d of an unreachable executor still runs", z)
		}
		goruntime.GC()
		time.Sleep(50 * time.Millisecond)
	}
}

// TestZygoteOnlyModulesCanBeShadowed: modules only the zygote needs (socket,
// select, signal, ...) are imported by a call as a fresh interpreter would,
// so both paths see the same modules when the project has files of those
// names (neither imports them: the working directory is not on sys.path).
func TestZygoteOnlyModulesCanBeShadowed(t *testing.T) {
	t.Parallel()
	requirePython(t)
	dir := t.TempDir()
	mods := []string{"socket", "select", "selectors", "binascii"}
	for _, m := range mods {
		if err := os.WriteFile(filepath.Join(dir, m+".py"), []byte("ORIGIN = 'project'\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	body := "import importlib\nreturn {m: getattr(importlib.import_module(m), 'ORIGIN', 'stdlib') for m in names.split()}"
	outputs := map[bool]string{}
	bothPaths(t, func(t *testing.T, cold bool) {
		outputs[cold] = mustSucceed(t, call{cold: cold, dir: dir, tool: bodyTool("shadowed", body, "names"),
			args: map[string]string{"names": strings.Join(mods, " ")}}.do(t))
	})
	t.Logf("cold %s, warm %s", outputs[true], outputs[false])
	if outputs[true] != outputs[false] {
		t.Fatalf("cold %s, warm %s: a call sees different modules on the two paths", outputs[true], outputs[false])
	}
}

// idleSpare returns the pid of the child the zygote forked ahead of time
// for the next call, waiting (on the executor's own bookkeeping, which the
// zygote's message updates) until there is one.
func idleSpare(t *testing.T, ex *Executor) int {
	t.Helper()
	deadline := time.Now().Add(hangCap)
	for {
		ex.zygotes.mu.Lock()
		var z *zygote
		for _, slot := range ex.zygotes.slots {
			z = slot.z
		}
		ex.zygotes.mu.Unlock()
		if z != nil {
			z.mu.Lock()
			if len(z.idle) > 0 {
				pid := z.idle[0].pid
				z.mu.Unlock()
				return pid
			}
			z.mu.Unlock()
		}
		if time.Now().After(deadline) {
			t.Fatal("the zygote forked no spare child")
		}
		goruntime.Gosched()
	}
}

// waitExit waits until pid has exited, through a pidfd (no polling).
func waitExit(t *testing.T, pid int) {
	t.Helper()
	f := openPidfd(pid)
	if f == nil {
		if processGone(pid) {
			return
		}
		t.Skip("no pidfd here")
	}
	defer f.Close()
	n, err := unix.Poll([]unix.PollFd{{Fd: int32(f.Fd()), Events: unix.POLLIN}}, int(hangCap/time.Millisecond))
	if err != nil || n != 1 {
		t.Fatalf("process %d did not exit: %d, %v", pid, n, err)
	}
}

// TestSpareChildHoldsNothingOfOthers: the child a call runs in was forked
// before the call was known, but holds no descriptor but its standard
// streams and its result channel (not the zygote's control socket, not
// another child's socket, not a pipe of an earlier call), and no variable
// of an earlier call.
func TestSpareChildHoldsNothingOfOthers(t *testing.T) {
	t.Parallel()
	requirePython(t)
	ex := newExec(t, false, Options{})
	dir := t.TempDir()
	tool := bodyTool("fds", `
fds = {}
for name in os.listdir("/proc/self/fd"):
    try:
        fds[int(name)] = os.readlink("/proc/self/fd/" + name)
    except OSError:
        pass  # the directory listing's own descriptor, closed by now
return {"fds": sorted(fds), "kinds": sorted(set(v.split(":")[0] for k, v in fds.items() if k > 2)),
        "leak": os.environ.get("NEXA_SPARE_LEAK"), "call": os.environ["NEXA_CALL_ID"]}
`)
	polluter := bodyTool("polluter", "os.environ['NEXA_SPARE_LEAK'] = 'x'\nopen('held', 'w')\nimport socket\nglobals()['s'] = socket.socket()\nreturn 'ok'")
	for i := 0; i < 3; i++ {
		mustSucceed(t, invoke(t, ex, polluter, nil, dir, fmt.Sprint("p", i), nil))
		got := mustSucceed(t, invoke(t, ex, tool, nil, dir, fmt.Sprint("c", i), nil))
		var o struct {
			FDs   []int    `json:"fds"`
			Kinds []string `json:"kinds"`
			Leak  *string  `json:"leak"`
			Call  string   `json:"call"`
		}
		if err := json.Unmarshal([]byte(got), &o); err != nil {
			t.Fatalf("output %q: %v", got, err)
		}
		// 0, 1, 2 and the result channel (a pipe on a high descriptor).
		if len(o.FDs) != 4 || o.FDs[0] != 0 || o.FDs[1] != 1 || o.FDs[2] != 2 || o.FDs[3] < 200 {
			t.Errorf("call %d holds descriptors %v (%s), want 0, 1, 2 and the result channel", i, o.FDs, got)
		}
		if len(o.Kinds) != 1 || o.Kinds[0] != "pipe" {
			t.Errorf("call %d: descriptors above 2 are %v, want only the result pipe", i, o.Kinds)
		}
		if o.Leak != nil || o.Call != fmt.Sprint("c", i) {
			t.Errorf("call %d saw NEXA_SPARE_LEAK=%v, NEXA_CALL_ID=%s", i, o.Leak, o.Call)
		}
	}
	if s, w, f := counters(ex); s != 1 || w != 6 || f != 0 {
		t.Fatalf("starts %d, warm calls %d, fallbacks %d; want 1, 6, 0", s, w, f)
	}
}

// TestSpareChildDiesWithItsZygote: a child forked ahead of time that never
// gets a call does not outlive its zygote, whether the zygote is stopped
// (Close) or killed.
func TestSpareChildDiesWithItsZygote(t *testing.T) {
	t.Parallel()
	requirePython(t)
	for _, how := range []string{"close", "kill"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			ex := New(Options{})
			defer ex.Close()
			mustSucceed(t, invoke(t, ex, bodyTool("ping", "return 'pong'"), nil, t.TempDir(), "c", nil))
			spare := idleSpare(t, ex)
			if processGone(spare) {
				t.Fatalf("spare %d is not running", spare)
			}
			if how == "close" {
				if err := ex.Close(); err != nil {
					t.Fatal(err)
				}
			} else if err := syscall.Kill(onlyZygote(t, ex), syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			waitExit(t, spare)
		})
	}
}

// TestWarmCallSeesModulesAddedLater: a module file added to a PYTHONPATH
// directory after the zygote (and the child waiting for the next call)
// started is importable by the next call, even when the directory's
// modification time did not change (the import caches the zygote built
// are marked stale in every child).
func TestWarmCallSeesModulesAddedLater(t *testing.T) {
	t.Parallel()
	requirePython(t)
	lib := t.TempDir()
	bothPaths(t, func(t *testing.T, cold bool) {
		ex := newExec(t, cold, Options{Env: append(os.Environ(), "PYTHONPATH="+lib)})
		dir := t.TempDir()
		mod := fmt.Sprintf("nexa_late_%v", cold)
		tool := bodyTool("late", "import importlib\nreturn importlib.import_module(name).VALUE", "name")
		// The first call starts the zygote, which lists lib while it
		// imports the bootstrap's modules.
		r := invoke(t, ex, tool, map[string]string{"name": mod}, dir, "c1", nil)
		if r.err != nil || r.out.Success || !strings.Contains(r.out.Output, "ModuleNotFoundError") {
			t.Fatalf("before the module exists: %+v, %v", r.out, r.err)
		}
		st, err := os.Stat(lib)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(lib, mod+".py"), []byte("VALUE = 'late'\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(lib, st.ModTime(), st.ModTime()); err != nil {
			t.Fatal(err)
		}
		if got := mustSucceed(t, invoke(t, ex, tool, map[string]string{"name": mod}, dir, "c2", nil)); got != "late" {
			t.Fatalf("got %q", got)
		}
	})
}
