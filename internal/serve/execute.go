package serve

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/nexa-run/nexa/internal/state"
)

// CommandResumer continues a run as `nexa agent FILE AGENT --resume RUN`
// would, in a child process of the nexa binary started in the run's
// working directory with the run's provider flags. That process compiles
// the program, connects its tools and calls Runner.Resume, which takes the
// run's lease: a run another executor drives is refused, never driven
// twice, and the resume checks (same sources, agent, provider, tools) are
// the CLI's own.
type CommandResumer struct {
	// Exe is the nexa binary.
	Exe string
	// StoreFlag is the --store value to repeat (empty: NEXA_STORE or the
	// default store of the run's directory).
	StoreFlag string
	// Output receives the child's standard output and error.
	Output io.Writer
}

// Resume runs the child and waits for it. Exit codes 0 (completed), 3
// (waiting for approval again) and 4 (unknown outcome) are the run moving
// on, not failures of the resume.
func (c CommandResumer) Resume(ctx context.Context, run *state.RunState) error {
	args := []string{"agent", run.Config.SourceFile, run.Config.Agent, "--resume", run.ID, "--quiet"}
	args = append(args, run.Config.ResumeFlags...)
	if c.StoreFlag != "" {
		args = append(args, "--store", c.StoreFlag)
	}
	cmd := exec.CommandContext(ctx, c.Exe, args...)
	cmd.Dir = run.Config.WorkDir
	cmd.Stdout, cmd.Stderr = c.Output, c.Output
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		switch ee.ExitCode() {
		case 0, 3, 4:
			return nil
		}
		return fmt.Errorf("nexa agent --resume %s exited with code %d", run.ID, ee.ExitCode())
	}
	if err != nil {
		return fmt.Errorf("nexa agent --resume %s: %w", run.ID, err)
	}
	return nil
}

// SelfCommand is the path that starts this nexa binary again, for
// CommandResumer.Exe: the name it was started by, made absolute (the child
// runs in the run's directory), falling back to the executable's path.
// The name comes first so a binary that dispatches on its name (a test
// binary standing in for nexa) is started as itself.
func SelfCommand() (string, error) {
	name := os.Args[0]
	if strings.ContainsRune(name, filepath.Separator) {
		if abs, err := filepath.Abs(name); err == nil {
			return abs, nil
		}
	} else if p, err := exec.LookPath(name); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			return abs, nil
		}
	}
	return os.Executable()
}
