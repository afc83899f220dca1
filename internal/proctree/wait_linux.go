package proctree

import "golang.org/x/sys/unix"

// WaitExitNoReap blocks until process pid has exited and leaves it a
// zombie for cmd.Wait to reap. Until it is reaped its pid, and so its
// process-group id, cannot be reused, so a caller can still signal the
// whole group (the tool's children) without hitting a stranger.
func WaitExitNoReap(pid int) {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return
		}
	}
}
