//go:build !(linux && (amd64 || arm64 || riscv64))

package sandbox

// seccompProgram returns nil: no filter is built for this architecture
// (see seccomp_linux.go), so the sandbox relies on the mounts and
// namespaces alone; Bwrap.SocketFilter reports false.
func seccompProgram() []byte { return nil }
