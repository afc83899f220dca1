package mcptool

import "golang.org/x/sys/unix"

// stdioSupported reports nil: this system can wait for a server without
// reaping it, which stopping its whole process group safely needs.
func stdioSupported() error { return nil }

// waitExitNoReap blocks until the process has exited, leaving it a zombie.
func waitExitNoReap(pid int) {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return
		}
	}
}
