//go:build linux

package proctree

import (
	"bytes"
	"fmt"
	"os"
	"os/signal"
	goruntime "runtime"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// dispatching records that this program called RunIfSupervisor, so that
// Start may run it again as a supervisor.
var dispatching atomic.Bool

// RunIfSupervisor turns this process into a tool's supervisor when Start
// started it as one (argv[0] "nexa-supervisor"), and then never returns;
// otherwise it does nothing. A program that starts tools through Start
// calls it first thing in main, and so does the TestMain of a test binary
// that does: Start re-executes the running binary.
func RunIfSupervisor() {
	if len(os.Args) < 3 || os.Args[0] != supervisorName {
		dispatching.Store(true)
		return
	}
	// The command is forked from this thread; its parent-death signal
	// must not fire while the supervisor lives.
	goruntime.LockOSThread()
	os.Exit(supervise(os.Args[1:]))
}

// supervise runs argv (extra-descriptor count, program, arguments) and
// returns only if it cannot report otherwise.
func supervise(argv []string) int {
	extra, err := strconv.Atoi(argv[0])
	if err != nil || extra < 0 || len(argv) < 3 {
		fmt.Fprintln(os.Stderr, "nexa: the tool supervisor is internal to nexa and is not run by hand")
		return 2
	}
	report := 3 + extra
	syscall.CloseOnExec(report)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fmt.Fprintf(os.Stderr, "nexa: tool supervisor: %v\n", err)
	}
	files := make([]uintptr, 0, report)
	for fd := 0; fd < report; fd++ {
		files = append(files, uintptr(fd))
	}
	pid, err := syscall.ForkExec(argv[1], argv[2:], &syscall.ProcAttr{
		Env:   os.Environ(),
		Files: files,
		Sys:   &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		errno, ok := err.(syscall.Errno)
		if !ok {
			errno = syscall.EINVAL
		}
		_, _ = syscall.Write(report, []byte(strconv.Itoa(int(errno))))
		return 127
	}
	_ = syscall.Close(report)
	// The command has its own copies of the extra descriptors; a pipe's
	// end of file must not wait for the supervisor.
	for fd := 3; fd < report; fd++ {
		_ = syscall.Close(fd)
	}

	exited := make(chan syscall.WaitStatus, 1)
	go reap(pid, exited)
	select {
	case sig := <-sigs:
		killDescendants(false)
		dieOf(sig.(syscall.Signal))
	case ws := <-exited:
		killDescendants(true)
		select {
		case sig := <-sigs:
			killDescendants(false)
			dieOf(sig.(syscall.Signal))
		default:
		}
		if ws.Signaled() {
			dieOf(ws.Signal())
		}
		return ws.ExitStatus()
	}
	return 1
}

// reap waits for every child (the command, and orphans reparented to the
// subreaper), sending the command's status to exited.
func reap(command int, exited chan<- syscall.WaitStatus) {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		switch {
		case err == syscall.EINTR:
		case err != nil:
			// No child left: the command has been reaped already.
			return
		case pid == command:
			exited <- ws
		}
	}
}

// hasChildren reports whether the supervisor still has a child, living or
// not yet reaped. Every living descendant descends from one: a process
// whose parent dies is reparented to the subreaper.
func hasChildren() bool {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return err != unix.ECHILD
		}
	}
}

// killDescendants sends SIGKILL to every living descendant (only those in
// the supervisor's process group when groupOnly) until none is left.
func killDescendants(groupOnly bool) {
	self := os.Getpid()
	pgid := syscall.Getpgrp()
	deadline := time.Now().Add(killBound)
	pause := time.Millisecond
	for hasChildren() {
		victims := descendants(self, pgid, groupOnly)
		if len(victims) == 0 || time.Now().After(deadline) {
			return
		}
		for _, p := range victims {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		// A killed process takes a moment to become a zombie; new
		// children forked before the kill show up in the next scan.
		time.Sleep(pause)
		pause = min(2*pause, 20*time.Millisecond)
	}
}

// killBound is how long the supervisor keeps killing descendants that
// keep appearing (a fork bomb) or do not die (uninterruptible sleep).
const killBound = 5 * time.Second

// procInfo is what /proc/PID/stat says about a process.
type procInfo struct {
	ppid, pgrp int
	zombie     bool
}

// descendants lists the living descendants of root (in group pgid only,
// when groupOnly), from a scan of /proc.
func descendants(root, pgid int, groupOnly bool) []int {
	dir, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	names, _ := dir.Readdirnames(-1)
	dir.Close()
	procs := map[int]procInfo{}
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		if info, ok := readStat(pid); ok {
			procs[pid] = info
		}
	}
	var out []int
	for pid, info := range procs {
		if pid == root || info.zombie || (groupOnly && info.pgrp != pgid) {
			continue
		}
		// Walk up to root; a cycle cannot occur in a consistent
		// snapshot, but a torn one is bounded by the map's size.
		p, steps := info.ppid, 0
		for p != root && p > 1 && steps < len(procs) {
			up, ok := procs[p]
			if !ok {
				break
			}
			p, steps = up.ppid, steps+1
		}
		if p == root {
			out = append(out, pid)
		}
	}
	return out
}

// readStat parses /proc/PID/stat: "pid (comm) state ppid pgrp ...", where
// comm may itself contain spaces and parentheses.
func readStat(pid int) (procInfo, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procInfo{}, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procInfo{}, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 3 {
		return procInfo{}, false
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	pgrp, err2 := strconv.Atoi(string(f[2]))
	if err1 != nil || err2 != nil {
		return procInfo{}, false
	}
	return procInfo{ppid: ppid, pgrp: pgrp, zombie: string(f[0]) == "Z" || string(f[0]) == "X"}, true
}

// dieOf ends the supervisor by sig with the default action, so that its
// parent sees the same status the command had. The Go runtime handles
// most signals itself; the raw sigaction restores the default first.
func dieOf(sig syscall.Signal) {
	signal.Reset(sig)
	// An all-zero kernel sigaction is SIG_DFL with no flags and an empty
	// mask on every architecture.
	var dfl [4]uint64
	_, _, _ = syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&dfl)), 0, 8, 0, 0)
	_ = syscall.Tgkill(os.Getpid(), syscall.Gettid(), sig)
	// A signal whose default is not to terminate (SIGCHLD, SIGCONT...)
	// cannot be reproduced.
	os.Exit(128 + int(sig))
}
