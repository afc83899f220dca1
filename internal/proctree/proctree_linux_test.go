//go:build linux

package proctree_test

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nexa-run/nexa/internal/proctree"
)

// parentEnv makes the test binary a stand-in for nexa: it starts the tree
// script of treeScript in the directory named by the variable and blocks
// until it is killed.
const parentEnv = "NEXA_PROCTREE_TEST_PARENT"

func TestMain(m *testing.M) {
	proctree.RunIfSupervisor()
	if dir := os.Getenv(parentEnv); dir != "" {
		cmd := exec.Command("/bin/sh", "-c", treeScript)
		cmd.Dir = dir
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := proctree.Start(cmd); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		for {
			time.Sleep(time.Hour) // until the test kills this process
		}
	}
	os.Exit(m.Run())
}

// treeScript starts a command with a child in its group, a grandchild
// orphaned by a subshell that has exited (so reparented), and a child that
// left the group and the session; each records its pid, then "ready".
const treeScript = `
sleep 1000 & echo $! >> pids
( sleep 1000 & echo $! >> pids )
setsid sleep 1000 & echo $! >> pids
echo $$ >> pids
touch ready
wait
`

// waitFor polls cond (bounded, generous: CI machines are slow and shared).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

func readPids(t *testing.T, path string) []int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, l := range strings.Fields(string(b)) {
		p, err := strconv.Atoi(l)
		if err != nil {
			t.Fatalf("bad pid %q in %s", l, path)
		}
		pids = append(pids, p)
	}
	return pids
}

func TestTreeDiesWithParentKilled(t *testing.T) {
	dir := t.TempDir()
	parent := exec.Command(os.Args[0], "-test.run=^$")
	parent.Env = append(os.Environ(), parentEnv+"="+dir)
	parent.Stderr = os.Stderr
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = parent.Process.Kill(); _ = parent.Wait() })
	waitFor(t, "the tree is ready", func() bool {
		_, err := os.Stat(filepath.Join(dir, "ready"))
		return err == nil
	})
	pids := readPids(t, filepath.Join(dir, "pids"))
	if len(pids) != 4 {
		t.Fatalf("want 4 pids, got %v", pids)
	}
	t.Cleanup(func() {
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
	})
	for _, p := range pids {
		if !alive(p) {
			t.Fatalf("process %d is not running before its parent is killed", p)
		}
	}

	if err := parent.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = parent.Wait()
	for _, p := range pids {
		waitFor(t, "process "+strconv.Itoa(p)+" is dead", func() bool { return !alive(p) })
	}
}

func TestExitStatusIsTheCommands(t *testing.T) {
	for _, tc := range []struct {
		script string
		code   int
		signal syscall.Signal
	}{
		{"exit 0", 0, 0},
		{"exit 3", 3, 0},
		{"kill -TERM $$", -1, syscall.SIGTERM},
		{"kill -KILL $$", -1, syscall.SIGKILL},
		{"kill -SEGV $$", -1, syscall.SIGSEGV},
	} {
		cmd := exec.Command("/bin/sh", "-c", "ulimit -c 0; "+tc.script)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := proctree.Start(cmd); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
		if got := cmd.ProcessState.ExitCode(); got != tc.code {
			t.Errorf("%s: exit code %d, want %d", tc.script, got, tc.code)
		}
		if tc.signal != 0 && (!ws.Signaled() || ws.Signal() != tc.signal) {
			t.Errorf("%s: status %v, want killed by %v", tc.script, ws, tc.signal)
		}
	}
}

func TestDescriptorsReachTheCommand(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmd := exec.Command("/bin/sh", "-c", "read line; echo \"$line on 1\"; echo \"$PWD on 3\" >&3")
	cmd.Dir = t.TempDir()
	cmd.Stdin = strings.NewReader("hello\n")
	var out strings.Builder
	cmd.Stdout = &out
	cmd.ExtraFiles = []*os.File{w}
	if err := proctree.Start(cmd); err != nil {
		t.Fatal(err)
	}
	w.Close()
	// End of file on the extra descriptor must come with the command's
	// exit: the supervisor keeps no copy.
	got, _ := io.ReadAll(r)
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if out.String() != "hello on 1\n" || string(got) != cmd.Dir+" on 3\n" {
		t.Fatalf("stdout %q, fd 3 %q", out.String(), got)
	}
	if cmd.Path != "/bin/sh" || cmd.Args[0] != "/bin/sh" {
		t.Fatalf("the command was not given back as set: %s %q", cmd.Path, cmd.Args)
	}
}

func TestGroupRemnantsDieWithTheCommand(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command("/bin/sh", "-c", "sleep 1000 & echo $! > pid")
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := proctree.Start(cmd); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	pid := readPids(t, filepath.Join(dir, "pid"))[0]
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	waitFor(t, "the background child is dead", func() bool { return !alive(pid) })
}

func TestStartErrors(t *testing.T) {
	cmd := exec.Command(filepath.Join(t.TempDir(), "missing"))
	err := proctree.Start(cmd)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing program: %v", err)
	}
	if cmd.ProcessState == nil {
		t.Fatal("the supervisor of a command that could not start was not reaped")
	}
	cmd = exec.Command("/bin/true")
	cmd.Dir = filepath.Join(t.TempDir(), "nowhere")
	if err := proctree.Start(cmd); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing directory: %v", err)
	}
	notExec := filepath.Join(t.TempDir(), "plain")
	if err := os.WriteFile(notExec, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := proctree.Start(exec.Command(notExec)); !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("not executable: %v", err)
	}
}
