// Package sandbox runs tool processes under bubblewrap (bwrap), the
// isolation backend behind `sandbox: true` (runtime spec §8). It never runs
// anything unsandboxed: when no working backend exists, every entry point
// returns an error matching ErrUnavailable that says what is missing and how
// to install it, and callers refuse the call.
//
// # Use
//
//	b, err := sandbox.Detect()          // cached: find bwrap, self-test it once
//	release, err := b.Wrap(cmd, workDir) // rewrite cmd to run inside
//	                                     // (WrapProtected: and keep nexa's files out)
//	err = sandbox.Start(cmd)             // start from a thread that never exits
//	release()
//
// Available() is Detect's error alone, for runtime.Config.SandboxAvailable;
// pytool.Options.Sandbox takes Detect itself.
//
// # Detection
//
// Detect looks for bwrap in PATH and starts a fixed shell script with
// exactly the flags tools get. The self-test must exit 0, report through an
// inherited descriptor (fd 3), see only the loopback interface, have its
// write in the working directory show up on the host, and have its writes
// outside it and in /tmp not show up. bwrap needs to create namespaces:
// it works as root (also in a container that allows it) and as a normal user
// where unprivileged user namespaces are enabled (or bwrap is setuid). The
// result, success or failure, is cached for the life of the process.
//
// # Guarantees
//
// A wrapped command runs as
//
//	bwrap --unshare-all --die-with-parent --new-session --cap-drop ALL
//	      --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp --tmpfs /run
//	      [--symlink TARGET /run/NAME]… [--ro-bind-try P P]…
//	      --bind WORKDIR WORKDIR --chdir WORKDIR --setenv TMPDIR /tmp
//	      [--seccomp FD]
//	      [--tmpfs DIR --remount-ro DIR]… [--ro-bind /dev/null FILE]…
//	      [--ro-bind FILE FILE]… -- PROGRAM ARGS…
//
// which gives:
//
//   - No network: a new network namespace with only a loopback interface;
//     nothing on the host's 127.0.0.1 is reachable, external addresses are
//     unreachable, name resolution fails at once.
//   - Read-only system: the whole host file system is mounted read-only;
//     root inside has no capabilities, so it cannot remount it.
//   - Private /tmp and /run: empty tmpfs mounts, gone when the call ends.
//     Hiding /run also hides host daemons' sockets and FIFOs (D-Bus, Docker,
//     systemd's initctl, $XDG_RUNTIME_DIR); top-level symbolic links in /run
//     (NixOS's /run/current-system) are recreated.
//   - The working directory is the only writable place on the host (bound
//     read-write at its real path; the process starts there). It may not be
//     / or a system directory (/usr, /etc, /var, /tmp, …) nor lie in /proc,
//     /sys or /dev.
//   - nexa's own files are out of reach (WrapProtected, see Protected):
//     directories (.nexa, logs, locks) are covered by an empty read-only
//     tmpfs and files (a store named anywhere, its -wal/-shm/-journal,
//     secrets files) by a read-only /dev/null, also inside the working
//     directory; a missing file name inside the working directory is
//     reserved by an empty placeholder. Files nexa runs later (the program,
//     legacy tool files) are bound read-only onto themselves.
//   - Separate PID, IPC, UTS (and where possible user and cgroup)
//     namespaces: host processes are invisible and cannot be signalled or
//     traced; System V IPC and POSIX message queues are private.
//   - No controlling terminal (--new-session), so TIOCSTI cannot inject
//     keystrokes into the user's shell.
//   - Lifetime: killing bwrap (pytool SIGKILLs its process group) kills
//     everything inside, detached children included: --die-with-parent
//     makes bwrap's init (PID 1 of the sandbox's PID namespace) die with
//     bwrap, and the kernel kills a PID namespace whose init dies. If nexa
//     itself dies, the sandbox dies with it. Start forks from a thread that
//     never exits, because the parent-death signal follows the forking
//     thread, not the process.
//   - On amd64, arm64 and riscv64, a seccomp filter refuses socket(AF_UNIX)
//     (EACCES; socketpair still works), io_uring (ENOSYS) and the kernel
//     keyring (EPERM), and kills other-ABI system calls. Unix sockets are
//     reachable through read-only mounts, and host daemons keep them in
//     many places (/var/run/docker.sock, ~/.docker, /var/snap/lxd), so
//     this closes the way out that the mounts leave open.
//   - Descriptors: the command keeps stdin/stdout/stderr and cmd.ExtraFiles
//     at their numbers; bwrap closes the seccomp descriptor before exec.
//
// The interpreter and libraries stay usable because the whole system is
// visible read-only; an interpreter installed inside /tmp or /run (a
// virtual environment in /tmp) has its installation directory re-exposed
// read-only, and callers can name other such paths (a tool's source file).
//
// # Limits
//
// The sandbox contains what a tool can change and whom it can talk to; it
// does not make a hostile tool harmless:
//
//   - Confidentiality: everything the user can read stays readable (home
//     directory, SSH keys, cloud credentials, the environment, which still
//     holds whatever nexa passes tools, and the secrets nexa hands the tool).
//     A tool can return what it read as its result, which goes to the model
//     provider. Keep secrets out of reach of sandboxed tools.
//   - The working directory is fully writable but for Protected, including
//     files that run later outside the sandbox (.git/hooks, Makefiles,
//     virtual environments, shell scripts) and symbolic links pointing
//     anywhere.
//   - Resources: no CPU, memory, disk, process-count or file-size limits
//     beyond the tool's timeout and the user's own limits.
//   - The kernel is shared: a kernel vulnerability, side channels, or
//     nested user namespaces (allowed where the host allows them) are not
//     covered. Without the seccomp filter (other architectures) Unix sockets
//     outside /tmp and /run stay reachable.
//   - Descriptors nexa itself inherited without close-on-exec reach the
//     command (bwrap does not close them); pytool's bootstrap closes every
//     descriptor it does not use before user code runs.
//   - When nexa runs as root, the tool runs as root without capabilities:
//     it can still read every root-readable file and write to root-owned
//     files in the working directory.
//   - Only Linux; in containers, bwrap needs namespaces to be allowed
//     (docker's default seccomp/AppArmor profiles and masked /proc often
//     refuse them, and then Detect reports the sandbox as unavailable).
package sandbox
