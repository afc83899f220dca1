package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"
)

// DefaultBinary is the bubblewrap executable Detect looks for in PATH.
const DefaultBinary = "bwrap"

// InstallHint tells the user how to get a working backend. It is part of
// every UnavailableError so that the message of a refused sandboxed call is
// actionable on its own.
const InstallHint = "install bubblewrap: apt-get install bubblewrap (Debian/Ubuntu), " +
	"dnf install bubblewrap (Fedora/RHEL), pacman -S bubblewrap (Arch), apk add bubblewrap (Alpine), " +
	"zypper install bubblewrap (openSUSE); it must be able to create namespaces: run as root, or enable " +
	"unprivileged user namespaces (sysctl user.max_user_namespaces > 0; Debian: kernel.unprivileged_userns_clone=1; " +
	"Ubuntu 24.04+: an AppArmor profile for bwrap or kernel.apparmor_restrict_unprivileged_userns=0); " +
	"inside a container, allow it (for example docker run --security-opt seccomp=unconfined --security-opt apparmor=unconfined, or --privileged)"

// ErrUnavailable is matched (errors.Is) by every error that means no
// working sandbox backend exists here, so callers can refuse a sandboxed
// call instead of running it unisolated.
var ErrUnavailable = errors.New("sandbox unavailable")

// UnavailableError explains why no sandbox can be used: what is missing or
// what failed, bubblewrap's own words when it ran, and how to fix it.
type UnavailableError struct {
	// Binary is the bubblewrap executable that was looked for or tried.
	Binary string
	// Reason says what is missing or what failed.
	Reason string
	// Output is what bubblewrap (or the self-test) wrote to stderr, if
	// anything; it names no user data (the self-test runs a fixed script).
	Output string
	// Err is the underlying cause, if any.
	Err error
}

// Error renders the reason, the cause, bubblewrap's output and the
// install hint, in that order.
func (e *UnavailableError) Error() string {
	var b strings.Builder
	b.WriteString("no working sandbox backend: ")
	b.WriteString(e.Reason)
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	if out := strings.TrimSpace(e.Output); out != "" {
		b.WriteString(" (bubblewrap said: ")
		b.WriteString(strings.Join(strings.Fields(out), " "))
		b.WriteString(")")
	}
	b.WriteString("; ")
	b.WriteString(InstallHint)
	return b.String()
}

// Unwrap exposes the cause.
func (e *UnavailableError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrUnavailable) true.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

// Bwrap is a bubblewrap backend that passed its self-test on this machine.
// It is immutable and safe for concurrent use. Obtain one from Detect or
// Probe; the zero value is not usable.
type Bwrap struct {
	// path is the absolute path of the bwrap executable.
	path string
	// filter is the seccomp program (see seccomp_linux.go), nil where
	// none is built for this architecture.
	filter []byte
	// runLinks are the symbolic links at the top of /run, recreated in
	// the sandbox's private /run (NixOS puts the system profile there).
	runLinks [][2]string
}

// Path returns the bubblewrap executable this backend runs, for
// diagnostics (nexa doctor, logs).
func (b *Bwrap) Path() string { return b.path }

// SocketFilter reports whether the seccomp filter (no AF_UNIX sockets, no
// io_uring, no kernel keyring) is applied; it is built for amd64, arm64
// and riscv64 only.
func (b *Bwrap) SocketFilter() bool { return b.filter != nil }

var detected struct {
	once sync.Once
	b    *Bwrap
	err  error
}

// Detect finds bwrap in PATH and self-tests it, once per process: the
// result (backend or error) is cached, because the answer does not change
// while nexa runs and the self-test costs a process start. The error, if
// any, matches ErrUnavailable and says what is missing and how to install
// it. The CLI passes Detect to pytool.Options.Sandbox.
func Detect() (*Bwrap, error) {
	detected.once.Do(func() {
		detected.b, detected.err = Probe(DefaultBinary)
	})
	return detected.b, detected.err
}

// Available runs Detect and returns only its error: nil when sandboxed
// tools can run. It has the shape of runtime.Config.SandboxAvailable, which
// refuses a sandboxed call (the run fails with sandbox_unavailable) before
// anything is executed.
func Available() error {
	_, err := Detect()
	return err
}

// Probe checks the given bubblewrap executable without caching: bin is a
// name looked up in PATH or a path. It runs the self-test (see selftest.go)
// with exactly the flags used for tools. Tests and explicit configuration
// use it; everything else should use Detect.
func Probe(bin string) (*Bwrap, error) {
	if goruntime.GOOS != "linux" {
		return nil, &UnavailableError{Binary: bin, Reason: "the bubblewrap sandbox needs Linux, and this is " + goruntime.GOOS}
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		reason := fmt.Sprintf("bubblewrap (%s) is not installed or not in PATH", bin)
		if strings.ContainsRune(bin, filepath.Separator) {
			reason = fmt.Sprintf("bubblewrap executable %s is missing or not executable", bin)
		}
		return nil, &UnavailableError{Binary: bin, Reason: reason, Err: err}
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	b := &Bwrap{path: path, filter: seccompProgram(), runLinks: runSymlinks()}
	if err := b.selfTest(); err != nil {
		return nil, err
	}
	return b, nil
}

// runSymlinks lists the symbolic links directly under /run with their
// targets. Links are harmless to recreate (what they point to is subject to
// the same view) and NixOS needs /run/current-system for its binaries.
func runSymlinks() [][2]string {
	entries, err := os.ReadDir("/run")
	if err != nil {
		return nil
	}
	var links [][2]string
	for _, e := range entries {
		if e.Type()&os.ModeSymlink == 0 {
			continue
		}
		p := "/run/" + e.Name()
		target, err := os.Readlink(p)
		if err != nil {
			continue
		}
		links = append(links, [2]string{target, p})
	}
	return links
}
