package pytool

import "syscall"

// supported reports nil: Python tools run on this system.
func supported() error { return nil }

// controlSocketpair makes the zygote's control socket: message boundaries
// kept (SOCK_SEQPACKET), closed on exec.
func controlSocketpair() ([2]int, error) {
	return syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
}
