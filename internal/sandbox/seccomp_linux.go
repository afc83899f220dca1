//go:build linux && (amd64 || arm64 || riscv64)

package sandbox

import (
	"encoding/binary"
	goruntime "runtime"

	"golang.org/x/sys/unix"
)

// seccompProgram returns the classic-BPF seccomp filter bubblewrap installs
// (--seccomp) just before it executes the command, as struct sock_filter
// records in native byte order. The mounts cannot stop a process from
// connecting to a Unix socket it can see (sockets ignore read-only
// mounts), and sockets of host daemons may live anywhere (Docker's in
// /var/run or a home directory, LXD's under /var/snap), so the filter:
//
//   - fails socket(AF_UNIX, …) with EACCES (socketpair still works, so
//     pipes between a tool's own processes do);
//   - fails io_uring_setup/enter/register with ENOSYS, because io_uring
//     can create and connect sockets without those system calls;
//   - fails add_key/request_key/keyctl with EPERM: the kernel keyring is
//     not namespaced and may hold the user's credentials;
//   - kills the process on a system call of another ABI (32-bit int 0x80
//     on amd64, x32), which would bypass the numbers checked here.
//
// The architectures built here are little-endian and have a direct socket
// system call (no socketcall multiplexer).
func seccompProgram() []byte {
	const (
		ld  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jge = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
		ret = unix.BPF_RET | unix.BPF_K

		// Offsets in struct seccomp_data.
		offNr   = 0
		offArch = 4
		offArg0 = 16 // low 32 bits of args[0] on a little-endian machine

		allow = unix.SECCOMP_RET_ALLOW
		kill  = unix.SECCOMP_RET_KILL_PROCESS
	)
	var arch uint32
	switch goruntime.GOARCH {
	case "amd64":
		arch = unix.AUDIT_ARCH_X86_64
	case "arm64":
		arch = unix.AUDIT_ARCH_AARCH64
	case "riscv64":
		arch = unix.AUDIT_ARCH_RISCV64
	default:
		return nil
	}
	errno := func(e unix.Errno) uint32 { return unix.SECCOMP_RET_ERRNO | uint32(e) }

	prog := []unix.SockFilter{
		{Code: ld, K: offArch},
		{Code: jeq, Jt: 1, Jf: 0, K: arch},
		{Code: ret, K: kill},
		{Code: ld, K: offNr},
	}
	if goruntime.GOARCH == "amd64" {
		// x32 system calls have bit 30 set.
		prog = append(prog,
			unix.SockFilter{Code: jge, Jt: 0, Jf: 1, K: 0x40000000},
			unix.SockFilter{Code: ret, K: kill},
		)
	}
	denied := []struct {
		nr     uint32
		action uint32
	}{
		{unix.SYS_IO_URING_SETUP, errno(unix.ENOSYS)},
		{unix.SYS_IO_URING_ENTER, errno(unix.ENOSYS)},
		{unix.SYS_IO_URING_REGISTER, errno(unix.ENOSYS)},
		{unix.SYS_ADD_KEY, errno(unix.EPERM)},
		{unix.SYS_REQUEST_KEY, errno(unix.EPERM)},
		{unix.SYS_KEYCTL, errno(unix.EPERM)},
	}
	for _, d := range denied {
		prog = append(prog,
			unix.SockFilter{Code: jeq, Jt: 0, Jf: 1, K: d.nr},
			unix.SockFilter{Code: ret, K: d.action},
		)
	}
	prog = append(prog,
		// socket(AF_UNIX, …) → EACCES; everything else is allowed.
		unix.SockFilter{Code: jeq, Jt: 0, Jf: 3, K: unix.SYS_SOCKET},
		unix.SockFilter{Code: ld, K: offArg0},
		unix.SockFilter{Code: jeq, Jt: 0, Jf: 1, K: unix.AF_UNIX},
		unix.SockFilter{Code: ret, K: errno(unix.EACCES)},
		unix.SockFilter{Code: ret, K: allow},
	)

	out := make([]byte, 0, 8*len(prog))
	for _, in := range prog {
		out = binary.NativeEndian.AppendUint16(out, in.Code)
		out = append(out, in.Jt, in.Jf)
		out = binary.NativeEndian.AppendUint32(out, in.K)
	}
	return out
}
