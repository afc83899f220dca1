package pytool

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// supported reports nil: Python tools run on this system.
func supported() error { return nil }

// controlSocketpair makes the zygote's control socket: message boundaries
// kept (SOCK_SEQPACKET), closed on exec.
func controlSocketpair() ([2]int, error) {
	return syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
}

// openPidfd returns a pidfd of pid (non-blocking, so it can be polled), or
// nil where the kernel has none.
func openPidfd(pid int) *os.File {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return nil
	}
	return os.NewFile(uintptr(fd), "pidfd")
}
