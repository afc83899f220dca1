package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// hiddenTrees are the host directories replaced by private, empty tmpfs
// mounts inside the sandbox. /tmp is the promised private /tmp; /run holds
// the sockets and FIFOs of host daemons (D-Bus, Docker, systemd's initctl,
// $XDG_RUNTIME_DIR), which a read-only mount does not protect: connecting
// to a socket or writing to a FIFO is allowed on a read-only file system.
var hiddenTrees = []string{"/tmp", "/run"}

// refusedWorkDirs cannot be the writable working directory: binding them
// read-write would undo the read-only system (or expose host devices and
// processes), which the sandbox promises.
var refusedWorkDirs = map[string]bool{
	"/": true, "/bin": true, "/boot": true, "/etc": true, "/lib": true, "/lib32": true,
	"/lib64": true, "/libx32": true, "/sbin": true, "/usr": true, "/var": true,
	"/run": true, "/tmp": true, "/nix": true, "/nix/store": true,
}

// refusedWorkTrees may not contain the working directory either.
var refusedWorkTrees = []string{"/proc", "/sys", "/dev"}

// Wrap rewrites cmd, which must not have been started, so that it runs
// inside the sandbox with workDir as its working directory and the only
// writable place. readOnly names extra paths the command must be able to
// read (a tool's source file) that would otherwise be hidden: only paths
// strictly inside /tmp or /run are added; everything else is already
// visible read-only. The program (cmd.Path) is kept, so an interpreter
// anywhere on the host stays usable; if it lives inside /tmp or /run its
// installation directory is exposed read-only.
//
// cmd.ExtraFiles are passed through unchanged (bubblewrap keeps inherited
// descriptors open for the command: fd 3 stays fd 3); Wrap appends one
// descriptor carrying the seccomp program, which bubblewrap reads and
// closes before the command starts. cmd.Env, Stdin, Stdout, Stderr and
// SysProcAttr are left alone: a process group set with Setpgid contains
// bubblewrap, and killing bubblewrap kills everything in the sandbox
// (--die-with-parent and the PID namespace).
//
// The returned release must be called once cmd.Start has returned
// (successfully or not) to close the parent's copy of that descriptor.
// Start the command with Start (not cmd.Start) so --die-with-parent is tied
// to a thread that lives as long as the process.
func (b *Bwrap) Wrap(cmd *exec.Cmd, workDir string, readOnly ...string) (release func(), err error) {
	return b.WrapProtected(cmd, workDir, Protected{}, readOnly...)
}

// WrapProtected is Wrap with nexa's own files out of the command's reach:
// prot's directories and files are replaced by empty read-only ones and its
// read-only files cannot be changed, wherever they are (inside the working
// directory too, which is otherwise writable). See Protected.
func (b *Bwrap) WrapProtected(cmd *exec.Cmd, workDir string, prot Protected, readOnly ...string) (release func(), err error) {
	if b == nil || b.path == "" {
		return nil, &UnavailableError{Reason: "no bubblewrap backend was detected"}
	}
	if cmd == nil {
		return nil, errors.New("sandbox: no command to wrap")
	}
	if cmd.Process != nil {
		return nil, errors.New("sandbox: the command was already started")
	}
	if cmd.Err != nil {
		return nil, fmt.Errorf("sandbox: command %s: %w", cmd.Path, cmd.Err)
	}
	if len(cmd.Args) == 0 {
		return nil, errors.New("sandbox: the command has no arguments")
	}
	work, err := resolveWorkDir(workDir, cmd.Dir)
	if err != nil {
		return nil, err
	}
	program := cmd.Path
	if !filepath.IsAbs(program) {
		base := cmd.Dir
		if base == "" {
			base = work
		}
		abs, err := filepath.Abs(filepath.Join(base, program))
		if err != nil {
			return nil, fmt.Errorf("sandbox: program %s: %w", cmd.Path, err)
		}
		program = abs
	}

	var seccompFD int
	var filterR *os.File
	if b.filter != nil {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, fmt.Errorf("sandbox: create seccomp pipe: %w", err)
		}
		// A pipe holds 64 KiB; the program is a few hundred bytes, so
		// this write cannot block.
		_, werr := w.Write(b.filter)
		cerr := w.Close()
		if werr != nil || cerr != nil {
			r.Close()
			return nil, fmt.Errorf("sandbox: write seccomp program: %w", errors.Join(werr, cerr))
		}
		filterR = r
		seccompFD = 3 + len(cmd.ExtraFiles)
	}

	args := b.args(work, program, readOnly, seccompFD)
	args = append(args, protectArgs(prot, work)...)
	args = append(args, "--", program)
	args = append(args, cmd.Args[1:]...)

	cmd.Path = b.path
	cmd.Args = append([]string{b.path}, args...)
	if filterR != nil {
		cmd.ExtraFiles = append(cmd.ExtraFiles, filterR)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			if filterR != nil {
				filterR.Close()
			}
		})
	}, nil
}

// args returns bubblewrap's options (without the program) for a command
// running program in work. seccompFD 0 means no filter. The order matters:
// later mounts go on top of earlier ones.
func (b *Bwrap) args(work, program string, readOnly []string, seccompFD int) []string {
	a := []string{
		// New user (where possible), IPC, PID, network, UTS and cgroup
		// namespaces: no network but a private loopback, no view of
		// host processes.
		"--unshare-all",
		// Kill the sandbox when bwrap's parent (nexa) dies; with the
		// PID namespace, killing bwrap kills everything inside.
		"--die-with-parent",
		// No controlling terminal: TIOCSTI cannot push keystrokes into
		// the user's shell.
		"--new-session",
		// Root inside keeps no capabilities (bwrap keeps them for
		// root unless told otherwise).
		"--cap-drop", "ALL",
		// The host file system, read-only.
		"--ro-bind", "/", "/",
		// A minimal /dev (null, zero, random, tty, a private shm…)
		// and a /proc for the new PID namespace.
		"--dev", "/dev",
		"--proc", "/proc",
	}
	for _, dir := range hiddenTrees {
		a = append(a, "--tmpfs", dir)
	}
	for _, l := range b.runLinks {
		a = append(a, "--symlink", l[0], l[1])
	}
	// Read-only exceptions inside the hidden trees: the interpreter's
	// installation and the caller's extra paths.
	seen := map[string]bool{}
	for _, p := range append([]string{interpreterRoot(program)}, readOnly...) {
		p = exposable(p, work)
		if p == "" || seen[p] {
			continue
		}
		seen[p] = true
		a = append(a, "--ro-bind-try", p, p)
	}
	a = append(a,
		// The working directory, the only writable place; last, so it
		// wins over everything above.
		"--bind", work, work,
		"--chdir", work,
		"--setenv", "TMPDIR", "/tmp",
	)
	if seccompFD > 0 {
		a = append(a, "--seccomp", strconv.Itoa(seccompFD))
	}
	return a
}

// resolveWorkDir makes the working directory absolute and free of symbolic
// links (bubblewrap binds real paths) and refuses system directories.
func resolveWorkDir(workDir, cmdDir string) (string, error) {
	dir := workDir
	if dir == "" {
		dir = cmdDir
	}
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", fmt.Errorf("sandbox: working directory: %w", err)
		}
		dir = wd
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("sandbox: working directory %s: %w", dir, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("sandbox: working directory %s is not usable: %w", dir, err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", fmt.Errorf("sandbox: working directory %s is not usable: %w", dir, err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("sandbox: working directory %s is not a directory", dir)
	}
	if refusedWorkDirs[real] {
		return "", fmt.Errorf("sandbox: working directory %s (%s) would make a system directory writable; use a project directory", dir, real)
	}
	for _, tree := range refusedWorkTrees {
		if within(real, tree) {
			return "", fmt.Errorf("sandbox: working directory %s (%s) is inside %s; use a project directory", dir, real, tree)
		}
	}
	if strings.ContainsRune(real, 0) {
		return "", fmt.Errorf("sandbox: working directory %q contains a NUL byte", dir)
	}
	return real, nil
}

// interpreterRoot guesses the installation directory of program: the
// parent of its bin directory (a virtual environment or a prefix), else
// its own directory.
func interpreterRoot(program string) string {
	dir := filepath.Dir(filepath.Clean(program))
	if filepath.Base(dir) == "bin" {
		return filepath.Dir(dir)
	}
	return dir
}

// exposable returns where to bind p read-only, or "" when p needs no
// exception: it does not exist, it is inside the working directory (bound
// anyway), or its real location is outside the hidden trees (the read-only
// root and the recreated /run links show it). The destination is p itself
// when p is inside a hidden tree (a virtual environment in /tmp), else its
// real path.
func exposable(p, work string) string {
	if p == "" || !filepath.IsAbs(p) || strings.ContainsRune(p, 0) {
		return ""
	}
	p = filepath.Clean(p)
	real, err := filepath.EvalSymlinks(p)
	if err != nil || within(real, work) || !hidden(real) {
		return ""
	}
	if hidden(p) && !within(p, work) {
		return p
	}
	return real
}

// hidden reports whether p is strictly inside one of the hidden trees.
func hidden(p string) bool {
	for _, tree := range hiddenTrees {
		if p != tree && within(p, tree) {
			return true
		}
	}
	return false
}

// within reports whether p is dir or below it (both clean and absolute).
func within(p, dir string) bool {
	if dir == "/" {
		return true
	}
	return p == dir || strings.HasPrefix(p, dir+"/")
}
