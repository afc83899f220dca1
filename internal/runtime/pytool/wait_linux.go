package pytool

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// supported reports nil: Python tools run on this system.
func supported() error { return nil }

// waitExitNoReap blocks until process pid has exited, leaving it a zombie
// for cmd.Wait to reap.
func waitExitNoReap(pid int) {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return
		}
	}
}

// controlSocketpair makes the zygote's control socket: message boundaries
// kept (SOCK_SEQPACKET), closed on exec.
func controlSocketpair() ([2]int, error) {
	return syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
}
