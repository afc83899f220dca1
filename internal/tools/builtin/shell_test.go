package builtin

import (
	"bytes"
	"encoding/json"
	"errors"
	"github.com/nexa-run/nexa/internal/tool"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

type shellOut struct {
	ExitCode        int    `json:"exit_code"`
	Signal          string `json:"signal"`
	Stdout          string `json:"stdout"`
	Stderr          string `json:"stderr"`
	StdoutTruncated bool   `json:"stdout_truncated"`
}

func runShell(t *testing.T, ro runOpts, args map[string]any, success bool) shellOut {
	t.Helper()
	var res shellOut
	if err := json.Unmarshal([]byte(mustRun(t, ro, "shell_exec", args, success)), &res); err != nil {
		t.Fatal(err)
	}
	return res
}

func TestShellOutputAndExitCode(t *testing.T) {
	wd := t.TempDir()
	var log syncBuffer
	ro := runOpts{workDir: wd, log: &log}
	res := runShell(t, ro, map[string]any{"command": "echo hello; echo oops >&2; pwd"}, true)
	if res.ExitCode != 0 || res.Stdout != "hello\n"+wd+"\n" || res.Stderr != "oops\n" {
		t.Fatalf("%+v", res)
	}
	if !strings.Contains(log.String(), "hello") || !strings.Contains(log.String(), "oops") {
		t.Errorf("output not copied to the tool log: %q", log.String())
	}
	res = runShell(t, ro, map[string]any{"command": "echo partial; exit 3"}, false)
	if res.ExitCode != 3 || res.Stdout != "partial\n" {
		t.Fatalf("%+v", res)
	}
	res = runShell(t, ro, map[string]any{"command": "kill -9 $$"}, false)
	if res.ExitCode != -1 || res.Signal != "killed" {
		t.Fatalf("%+v", res)
	}
	// stdin is empty, so a command reading it does not wait.
	res = runShell(t, ro, map[string]any{"command": "cat; echo done"}, true)
	if res.Stdout != "done\n" {
		t.Fatalf("%+v", res)
	}
}

func TestShellEnvironment(t *testing.T) {
	ro := runOpts{workDir: t.TempDir(), opts: Options{Env: []string{"PATH=" + os.Getenv("PATH"), "NEXA_RUN_ID=stale", "KEEP=1"}}}
	res := runShell(t, ro, map[string]any{"command": `printf '%s|%s|%s|%s' "$NEXA_IDEMPOTENCY_KEY" "$NEXA_RUN_ID" "$NEXA_CALL_ID" "$KEEP"`}, true)
	if res.Stdout != "run1:call1|run1|call1|1" {
		t.Fatalf("%q", res.Stdout)
	}
}

func TestShellOutputCap(t *testing.T) {
	ro := runOpts{workDir: t.TempDir(), opts: Options{OutputLimit: 1000}}
	res := runShell(t, ro, map[string]any{"command": "i=0; while [ $i -lt 2000 ]; do echo line$i; i=$((i+1)); done"}, true)
	if !res.StdoutTruncated || len(res.Stdout) > 1100 || !strings.HasPrefix(res.Stdout, "line0\n") || !strings.HasSuffix(res.Stdout, "line1999\n") || !strings.Contains(res.Stdout, "bytes omitted") {
		t.Fatalf("%d %q", len(res.Stdout), res.Stdout)
	}
}

// gone reports whether pid no longer runs (a zombie waiting for a reaper
// counts as gone: it cannot do anything).
func gone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	// The state follows the parenthesised command name.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] == 'Z'
	}
	return false
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !gone(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("process %d survived", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func readPid(t *testing.T, path string) int {
	t.Helper()
	var pid int
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		b, err := os.ReadFile(path)
		if err == nil {
			if pid, err = strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
				return pid
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no pid in %s", path)
	return 0
}

func TestShellTimeoutKillsGroupAndIsUnknown(t *testing.T) {
	wd := t.TempDir()
	ro := runOpts{workDir: wd}
	start := time.Now()
	// The timeout only has to outlast the shell's start and one echo (it
	// did not under -race on a loaded machine at 1 s); the command then
	// waits for a grandchild that outlives any timeout.
	out, err := execTool(t, ro, "shell_exec", map[string]any{"command": "sleep 300 & echo $! > grandchild.pid; echo started; wait", "timeout": 5})
	if !errors.Is(err, tool.ErrUnknownOutcome) || errors.Is(err, tool.ErrNotExecuted) {
		t.Fatalf("err %v out %+v, want unknown outcome", err, out)
	}
	if el := time.Since(start); el > 30*time.Second {
		t.Fatalf("took %v", el)
	}
	waitGone(t, readPid(t, filepath.Join(wd, "grandchild.pid")))

	// The invocation's timeout applies when the argument asks for more.
	ro.timeout = 500 * time.Millisecond
	if _, err := execTool(t, ro, "shell_exec", map[string]any{"command": "sleep 30", "timeout": 60}); !errors.Is(err, tool.ErrUnknownOutcome) {
		t.Fatalf("err %v", err)
	}
}

func TestShellBackgroundProcessEndsWithCommand(t *testing.T) {
	wd := t.TempDir()
	start := time.Now()
	res := runShell(t, runOpts{workDir: wd}, map[string]any{"command": "sleep 30 & echo $! > bg.pid; echo quick"}, true)
	if res.Stdout != "quick\n" || time.Since(start) > 5*time.Second {
		t.Fatalf("%+v after %v", res, time.Since(start))
	}
	waitGone(t, readPid(t, filepath.Join(wd, "bg.pid")))
}

func TestShellStartFailureIsNotExecuted(t *testing.T) {
	_, err := execTool(t, runOpts{workDir: t.TempDir(), opts: Options{Shell: "/nonexistent/sh"}}, "shell_exec", map[string]any{"command": "true"})
	if !errors.Is(err, tool.ErrNotExecuted) {
		t.Fatalf("err %v", err)
	}
	_, err = execTool(t, runOpts{workDir: filepath.Join(t.TempDir(), "missing")}, "shell_exec", map[string]any{"command": "true"})
	if !errors.Is(err, tool.ErrNotExecuted) {
		t.Fatalf("err %v", err)
	}
}

func TestShellWhich(t *testing.T) {
	bin := t.TempDir()
	write(t, filepath.Join(bin, "mytool"), "#!/bin/sh\n")
	if err := os.Chmod(filepath.Join(bin, "mytool"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(bin, "noexec"), "")
	ro := runOpts{workDir: t.TempDir(), opts: Options{Env: []string{"PATH=relative:" + bin}}}
	var m map[string]any
	_ = json.Unmarshal([]byte(mustRun(t, ro, "shell_which", map[string]any{"program": "mytool"}, true)), &m)
	if m["found"] != true || m["path"] != filepath.Join(bin, "mytool") {
		t.Fatal(m)
	}
	m = nil
	_ = json.Unmarshal([]byte(mustRun(t, ro, "shell_which", map[string]any{"program": "noexec"}, true)), &m)
	if m["found"] != false {
		t.Fatal(m)
	}
	mustRun(t, ro, "shell_which", map[string]any{"program": "../bin/sh"}, false)
}

// syncBuffer is a log that tolerates concurrent writers.
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
