package sandbox

import (
	"os/exec"
	goruntime "runtime"
	"sync"
)

// spawner starts processes from one OS thread that never exits.
var spawner struct {
	once sync.Once
	reqs chan spawnRequest
}

type spawnRequest struct {
	cmd  *exec.Cmd
	done chan error
}

// Start starts cmd (normally one rewritten by Wrap) from a dedicated OS
// thread that lives as long as the process. bubblewrap's --die-with-parent
// is PR_SET_PDEATHSIG, which fires when the *thread* that forked bwrap
// exits, not the process; the Go runtime ends a thread when a goroutine
// locked to it returns, so a command started from an arbitrary goroutine
// could be killed at a random moment. Waiting for the command (cmd.Wait,
// waitid) works from any goroutine.
func Start(cmd *exec.Cmd) error {
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
	// never terminated and children's parent-death signal never fires
	// while nexa runs.
	goruntime.LockOSThread()
	for r := range reqs {
		r.done <- r.cmd.Start()
	}
}
