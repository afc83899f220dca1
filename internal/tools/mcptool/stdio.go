package mcptool

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nexa-run/nexa/internal/proctree"
	"github.com/nexa-run/nexa/internal/tailbuf"
	"github.com/nexa-run/nexa/internal/toolenv"
)

// child is a started stdio server: one process, leader of its own process
// group, with our ends of its stdin, stdout and stderr.
type child struct {
	cmd    *exec.Cmd
	pid    int
	stdin  *os.File // our write end of the child's stdin
	stdout *os.File // our read end of the child's stdout
	stderr *os.File // our read end of the child's stderr
	tail   *tailbuf.Buffer

	// mu is held while the leader is reaped and while the group is
	// signalled, so a signal never reaches a recycled process group.
	mu      sync.Mutex
	reaped  bool
	waitErr error
	// exited is closed once the leader has exited, its group has been
	// killed and the leader has been reaped.
	exited     chan struct{}
	stderrDone chan struct{}
}

// startChild starts the command of a stdio spec in the working directory,
// in a process group of its own (so Close can stop everything it started,
// and the terminal's Ctrl-C does not reach it: the runtime decides when it
// stops). The command is executed directly, never through a shell, under
// a proctree supervisor, so it and all it started die if nexa dies.
func startChild(spec Spec, opts Options) (*child, error) {
	if err := stdioSupported(); err != nil {
		return nil, err
	}
	cmd := exec.Command(spec.Command, spec.Args...)
	if errors.Is(cmd.Err, exec.ErrDot) {
		// "server" found as ./server through PATH is refused by os/exec;
		// say how to run it on purpose.
		return nil, fmt.Errorf("%w (write ./%s to run a program of the working directory)", cmd.Err, spec.Command)
	}
	cmd.Dir = opts.WorkDir
	env, err := serverEnv(spec, opts)
	if err != nil {
		return nil, err
	}
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}

	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("stdin pipe: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW)
		return nil, fmt.Errorf("stdout pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW, outR, outW)
		return nil, fmt.Errorf("stderr pipe: %w", err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	startErr := proctree.Start(cmd)
	// The child holds its own copies; ours must go so EOF can be seen.
	closeAll(inR, outW, errW)
	if startErr != nil {
		closeAll(inW, outR, errR)
		return nil, startErr
	}
	c := &child{
		cmd:        cmd,
		pid:        cmd.Process.Pid,
		stdin:      inW,
		stdout:     outR,
		stderr:     errR,
		tail:       tailbuf.New(4096),
		exited:     make(chan struct{}),
		stderrDone: make(chan struct{}),
	}
	dst := &stderrSink{tail: c.tail, log: opts.Log}
	go func() {
		defer close(c.stderrDone)
		_, _ = io.Copy(dst, errR)
	}()
	go c.wait()
	return c, nil
}

// wait waits for the leader to exit without reaping it, kills what is left
// of its group (the leader is a zombie then, so the group id cannot have
// been reused), and reaps it.
func (c *child) wait() {
	proctree.WaitExitNoReap(c.pid)
	c.mu.Lock()
	_ = syscall.Kill(-c.pid, syscall.SIGKILL)
	c.waitErr = c.cmd.Wait()
	c.reaped = true
	c.mu.Unlock()
	close(c.exited)
}

// signalGroup sends sig to the child's process group unless the leader has
// already been reaped.
func (c *child) signalGroup(sig syscall.Signal) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.reaped {
		_ = syscall.Kill(-c.pid, sig)
	}
}

// hasExited reports whether the leader has exited and been reaped.
func (c *child) hasExited() bool {
	select {
	case <-c.exited:
		return true
	default:
		return false
	}
}

// status describes how the leader ended ("exit status 3", "signal: killed").
func (c *child) status() string {
	if !c.hasExited() {
		return "still running"
	}
	if c.waitErr == nil {
		return "exit status 0"
	}
	return c.waitErr.Error()
}

// stop ends the child: it was asked to exit by closing its stdin; after
// grace it gets SIGTERM, after another grace SIGKILL, each sent to the whole
// group. It returns an error only if the process could not be stopped.
func (c *child) stop(grace time.Duration) error {
	_ = c.stdin.Close() // EOF on stdin is the MCP way to ask a stdio server to exit
	if !waitFor(c.exited, grace) {
		c.signalGroup(syscall.SIGTERM)
		if !waitFor(c.exited, grace) {
			c.signalGroup(syscall.SIGKILL)
			if !waitFor(c.exited, 10*time.Second) {
				return fmt.Errorf("process %d did not exit after SIGKILL", c.pid)
			}
		}
	}
	// Everything in the group is dead; stderr reaches EOF unless a process
	// that left the group still holds it.
	if !waitFor(c.stderrDone, time.Second) {
		_ = c.stderr.Close()
		<-c.stderrDone
	} else {
		_ = c.stderr.Close()
	}
	_ = c.stdout.Close()
	return nil
}

// stderrTail is the end of what the child wrote to stderr, for messages.
func (c *child) stderrTail() string {
	if waitFor(c.exited, 0) {
		// Let the copier catch up with what a dead process wrote.
		waitFor(c.stderrDone, 200*time.Millisecond)
	}
	return strings.TrimSpace(c.tail.String())
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		_ = f.Close()
	}
}

// serverEnv is the least environment of a stdio server: the variables the
// MCP SDKs pass by default (toolenv.MCP), Options.Env, then the spec's own
// VAR=value assignments with their $NAME secrets resolved. Later entries
// win. Nothing else of nexa's environment (provider keys above all)
// reaches the server.
func serverEnv(spec Spec, opts Options) ([]string, error) {
	env := append(toolenv.MCP(os.Environ()), opts.Env...)
	for _, v := range spec.Env {
		val, err := v.Resolve(opts.Secret)
		if err != nil {
			return nil, err
		}
		env = append(env, v.Name+"="+val)
	}
	return env, nil
}

// waitFor reports whether ch was closed within d.
func waitFor(ch <-chan struct{}, d time.Duration) bool {
	select {
	case <-ch:
		return true
	default:
	}
	if d <= 0 {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}

// stderrSink copies a child's stderr to the tail buffer and the log. A
// failing log never stops the copy: an undrained stderr pipe would block
// the server.
type stderrSink struct {
	tail *tailbuf.Buffer
	log  io.Writer
}

// Write never fails.
func (s *stderrSink) Write(p []byte) (int, error) {
	_, _ = s.tail.Write(p)
	if s.log != nil {
		_, _ = s.log.Write(p)
	}
	return len(p), nil
}

// lockedWriter serialises writes of several servers to one log.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

// Write writes p whole under the lock.
func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
