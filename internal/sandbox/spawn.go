package sandbox

import (
	"os/exec"

	"github.com/nexa-run/nexa/internal/proctree"
)

// Start starts cmd (normally one rewritten by Wrap) from a thread that lives
// as long as the process (see package proctree). bubblewrap's
// --die-with-parent is PR_SET_PDEATHSIG, which fires when the *thread* that
// forked bwrap exits, not the process; a command started from an arbitrary
// goroutine could be killed at a random moment. bubblewrap needs no
// supervisor: its death ends its PID namespace and everything in it.
// Waiting for the command (cmd.Wait, waitid) works from any goroutine.
func Start(cmd *exec.Cmd) error {
	return proctree.StartDirect(cmd)
}
