//go:build linux

package proctree

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// supervisorName is argv[0] of a supervisor; RunIfSupervisor recognises it.
const supervisorName = "nexa-supervisor"

// selfExe is this very binary, even if its file was replaced or removed.
const selfExe = "/proc/self/exe"

// parentGone is the supervisor's parent-death signal: a catchable one, so
// that it can kill the tree before dying.
const parentGone = syscall.SIGTERM

// spawner starts processes from one OS thread that never exits.
var spawner struct {
	once sync.Once
	reqs chan spawnRequest
}

type spawnRequest struct {
	cmd  *exec.Cmd
	done chan error
}

// startFromLongLivedThread starts cmd from a dedicated OS thread that lives
// as long as the process: the parent-death signal fires when the thread
// that forked the child exits, and the Go runtime ends a thread when a
// goroutine locked to it returns. Waiting for the command works from any
// goroutine.
func startFromLongLivedThread(cmd *exec.Cmd) error {
	spawner.once.Do(func() {
		spawner.reqs = make(chan spawnRequest)
		go spawnLoop(spawner.reqs)
	})
	done := make(chan error, 1)
	spawner.reqs <- spawnRequest{cmd: cmd, done: done}
	return <-done
}

func spawnLoop(reqs <-chan spawnRequest) {
	// Never unlocked: this goroutine never returns, so its thread is
	// never terminated and no child's parent-death signal fires while
	// nexa runs.
	goruntime.LockOSThread()
	for r := range reqs {
		r.done <- r.cmd.Start()
	}
}

// withPdeathsig returns a copy of attr (which may be nil) with sig as the
// parent-death signal.
func withPdeathsig(attr *syscall.SysProcAttr, sig syscall.Signal) *syscall.SysProcAttr {
	var a syscall.SysProcAttr
	if attr != nil {
		a = *attr
	}
	a.Pdeathsig = sig
	return &a
}

// StartDirect starts cmd with SIGKILL as its parent-death signal, from a
// thread that never exits, without a supervisor. It is only for commands
// that end their whole tree when they die (bubblewrap with
// --die-with-parent and a PID namespace).
func StartDirect(cmd *exec.Cmd) error {
	cmd.SysProcAttr = withPdeathsig(cmd.SysProcAttr, syscall.SIGKILL)
	return startFromLongLivedThread(cmd)
}

// Start starts cmd under a supervisor that kills the command and all its
// descendants when nexa dies (see the package documentation). cmd must not
// have been started; after Start, cmd.Process is the supervisor and
// cmd.Wait reports the command's exit status.
func Start(cmd *exec.Cmd) error {
	if cmd.Process != nil {
		return errors.New("proctree: command already started")
	}
	if cmd.Err != nil || cmd.Path == "" {
		// Let exec.Cmd report what is wrong with the command.
		return cmd.Start()
	}
	if _, err := os.Stat(selfExe); err != nil {
		// No /proc: no way to re-execute nexa, nor to find descendants.
		// The command at least dies with nexa.
		return StartDirect(cmd)
	}
	if !dispatching.Load() {
		// Started again, this binary would not act as the supervisor
		// but run as itself (a test binary would run its tests again).
		return fmt.Errorf("start %s: this program does not call proctree.RunIfSupervisor at start-up, so it cannot supervise the processes it starts", cmd.Path)
	}
	reportR, reportW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("start %s: report pipe: %w", cmd.Path, err)
	}
	defer reportR.Close()

	path, args, extra := cmd.Path, cmd.Args, cmd.ExtraFiles
	if len(args) == 0 {
		args = []string{path}
	}
	cmd.Path = selfExe
	cmd.Args = append([]string{supervisorName, strconv.Itoa(len(extra)), path}, args...)
	cmd.ExtraFiles = append(append([]*os.File(nil), extra...), reportW)
	attr := cmd.SysProcAttr
	cmd.SysProcAttr = withPdeathsig(attr, parentGone)

	err = startFromLongLivedThread(cmd)
	reportW.Close()
	// What the caller set is what it sees again.
	cmd.Path, cmd.Args, cmd.ExtraFiles, cmd.SysProcAttr = path, args, extra, attr
	if err != nil {
		return err
	}
	// The supervisor closes the report pipe once the command has been
	// executed, or writes why it could not be.
	msg, _ := io.ReadAll(io.LimitReader(reportR, 64))
	if len(msg) == 0 {
		return nil
	}
	_ = cmd.Wait()
	errno, perr := strconv.Atoi(strings.TrimSpace(string(msg)))
	if perr != nil {
		return fmt.Errorf("start %s: supervisor: %s", path, msg)
	}
	return &os.PathError{Op: "fork/exec", Path: path, Err: syscall.Errno(errno)}
}
