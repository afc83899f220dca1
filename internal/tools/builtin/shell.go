package builtin

import (
	"context"
	"errors"
	"fmt"
	"github.com/nexa-run/nexa/internal/tool"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nexa-run/nexa/internal/proctree"
	"github.com/nexa-run/nexa/internal/stdlib"
)

// drainWait bounds how long output is still read once the command's process
// group is dead: a process that left the group (setsid) may keep the pipes
// open forever.
const drainWait = 2 * time.Second

// environ is the base environment of commands.
func (o *Options) environ() []string {
	if o.Env != nil {
		return o.Env
	}
	return os.Environ()
}

// callEnv is the base environment with the call's identity on top
// (docs/reference/runtime.md#idempotency-key), replacing any inherited values of the same names.
func callEnv(base []string, inv tool.Invocation, dir string) []string {
	set := map[string]string{
		"NEXA_IDEMPOTENCY_KEY": inv.IdempotencyKey(),
		"NEXA_RUN_ID":          inv.RunID,
		"NEXA_CALL_ID":         inv.CallID,
		"PWD":                  dir,
	}
	env := make([]string, 0, len(base)+len(set))
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if _, ours := set[k]; !ours {
			env = append(env, kv)
		}
	}
	for _, k := range []string{"NEXA_IDEMPOTENCY_KEY", "NEXA_RUN_ID", "NEXA_CALL_ID", "PWD"} {
		env = append(env, k+"="+set[k])
	}
	return env
}

// shellTimeout is the command's bound: the invocation's timeout (the tool's,
// cut to the run's deadline), shortened by a smaller timeout argument.
func shellTimeout(inv tool.Invocation, arg int) time.Duration {
	limit := inv.Timeout
	if limit <= 0 {
		t, _ := stdlib.Lookup("shell_exec")
		limit = time.Duration(t.Timeout) * time.Second
	}
	if arg > 0 {
		if d := time.Duration(arg) * time.Second; d < limit {
			return d
		}
	}
	return limit
}

type shellResult struct {
	ExitCode        int    `json:"exit_code"`
	Signal          string `json:"signal,omitempty"`
	Stdout          string `json:"stdout"`
	Stderr          string `json:"stderr"`
	StdoutTruncated bool   `json:"stdout_truncated,omitempty"`
	StderrTruncated bool   `json:"stderr_truncated,omitempty"`
}

func shellExec(ctx context.Context, c *call) (tool.Outcome, error) {
	var a struct {
		Command string `json:"command"`
		Timeout *int   `json:"timeout"`
	}
	if err := c.decode(&a); err != nil {
		return argError(err), nil
	}
	if strings.TrimSpace(a.Command) == "" {
		return fail("command is empty"), nil
	}
	name := c.inv.Tool.Name
	dir, err := workDir(c.inv.WorkDir)
	if err != nil {
		return tool.Outcome{}, notExecuted(name, err.Error())
	}
	arg := 0
	if a.Timeout != nil {
		arg = *a.Timeout
	}
	timeout := shellTimeout(c.inv, arg)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	// The command is the model's argument; running it is this tool's whole
	// purpose, and its high risk level makes every call need approval.
	// proctree.Start ties the command and all it starts to nexa's life.
	cmd := exec.Command(c.opts.Shell, "-c", a.Command)
	cmd.Dir = dir
	cmd.Env = callEnv(c.opts.environ(), c.inv, dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}

	outR, outW, err := os.Pipe()
	if err != nil {
		return tool.Outcome{}, notExecuted(name, "create pipe: "+err.Error())
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(outR, outW)
		return tool.Outcome{}, notExecuted(name, "create pipe: "+err.Error())
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	if err := proctree.Start(cmd); err != nil {
		closeAll(outR, outW, errR, errW)
		return tool.Outcome{}, notExecuted(name, fmt.Sprintf("start %s: %v", c.opts.Shell, err))
	}
	closeAll(outW, errW)
	pgid := cmd.Process.Pid

	log := &logWriter{w: c.inv.Log}
	stdout, stderr := newHeadTail(c.opts.OutputLimit), newHeadTail(c.opts.OutputLimit)
	var readers sync.WaitGroup
	for _, p := range []struct {
		r   *os.File
		dst io.Writer
	}{{outR, stdout}, {errR, stderr}} {
		readers.Add(1)
		go func() {
			defer readers.Done()
			_, _ = io.Copy(io.MultiWriter(p.dst, log), p.r)
		}()
	}
	drained := make(chan struct{})
	go func() { readers.Wait(); close(drained) }()
	finish := func() {
		// Background processes of the command end with it, so nothing
		// keeps running (or holding the pipes) after the call.
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		select {
		case <-drained:
		case <-time.After(drainWait):
		}
		closeAll(outR, errR)
		<-drained
	}

	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case werr := <-waited:
		finish()
		res := shellResult{ExitCode: cmd.ProcessState.ExitCode()}
		if ws, isWS := cmd.ProcessState.Sys().(syscall.WaitStatus); isWS && ws.Signaled() {
			res.Signal = ws.Signal().String()
		}
		var exitErr *exec.ExitError
		if werr != nil && !errors.As(werr, &exitErr) {
			return fail("command could not be waited for: %v", werr), nil
		}
		res.Stdout, res.StdoutTruncated = stdout.String()
		res.Stderr, res.StderrTruncated = stderr.String()
		out := okJSON(res)
		out.Success = out.Success && res.ExitCode == 0
		return out, nil
	case <-ctx.Done():
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-waited
		finish()
		why := "its timeout of " + timeout.String()
		if c.inv.DeadlineBound && timeout == c.inv.Timeout {
			why = "the run's deadline"
		}
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			why = "cancellation"
		}
		return tool.Outcome{}, unknown(name, "command killed (with its process group) by %s; what it did before is unknown", why)
	}
}

func closeAll(files ...*os.File) {
	for _, f := range files {
		_ = f.Close()
	}
}

// workDir checks that the run's working directory exists.
func workDir(dir string) (string, error) {
	if dir == "" {
		return "", errors.New("the run has no working directory")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("working directory %q: %w", dir, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("working directory %q: %w", dir, err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("working directory %q is not a directory", dir)
	}
	return abs, nil
}

// pathOf returns PATH from an environment list.
func pathOf(env []string) string {
	p := ""
	for _, kv := range env {
		if v, found := strings.CutPrefix(kv, "PATH="); found {
			p = v
		}
	}
	return p
}

func shellWhich(_ context.Context, c *call) (tool.Outcome, error) {
	var a struct {
		Program string `json:"program"`
	}
	if err := c.decode(&a); err != nil {
		return argError(err), nil
	}
	if a.Program == "" || strings.ContainsRune(a.Program, '/') || strings.ContainsRune(a.Program, 0) {
		return fail("program must be a name such as git, without a slash"), nil
	}
	for _, dir := range filepath.SplitList(pathOf(c.opts.environ())) {
		// Relative PATH entries would depend on the directory nexa was
		// started in; skip them as exec.LookPath does.
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		cand := filepath.Join(dir, a.Program)
		fi, err := os.Stat(cand)
		if err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return okJSON(map[string]any{"found": true, "path": cand}), nil
		}
	}
	return okJSON(map[string]any{"found": false, "program": a.Program}), nil
}
