package main

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// procBound caps the polling commands below: generous, since CI machines
// are slow and shared; a passing story never waits that long.
const procBound = 30 * time.Second

// cmdWaitFile: waitfile FILE waits until FILE exists (a marker a tool
// writes once it is where the story needs it), failing after procBound.
func cmdWaitFile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: waitfile FILE")
	}
	path := ts.MkAbs(args[0])
	for deadline := time.Now().Add(procBound); ; {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("%s did not appear within %s", args[0], procBound)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// cmdPidsDead: pidsdead FILE checks that every process whose pid is listed
// in FILE (one a line) has ended, waiting up to procBound. A process that
// is still alive then fails the story, and is killed so that a failing
// story leaves nothing running.
func cmdPidsDead(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: pidsdead FILE")
	}
	var pids []int
	for _, f := range strings.Fields(ts.ReadFile(args[0])) {
		pid, err := strconv.Atoi(f)
		if err != nil || pid <= 1 {
			ts.Fatalf("%s: bad pid %q", args[0], f)
		}
		pids = append(pids, pid)
	}
	if len(pids) == 0 {
		ts.Fatalf("%s lists no pid", args[0])
	}
	deadline := time.Now().Add(procBound)
	for _, pid := range pids {
		for processAlive(pid) {
			if time.Now().After(deadline) {
				for _, p := range pids {
					_ = syscall.Kill(p, syscall.SIGKILL)
				}
				ts.Fatalf("process %d (listed in %s) still runs %s later", pid, args[0], procBound)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// processAlive reports whether pid exists and has not exited: a zombie
// (dead, not yet reaped by whoever inherited it) counts as dead.
func processAlive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return syscall.Kill(pid, 0) == nil && !procMounted()
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// procMounted reports whether /proc describes processes (Linux).
func procMounted() bool {
	_, err := os.Stat("/proc/self/stat")
	return err == nil
}

// cmdMarked: marked MARKER COUNT waits until exactly COUNT living processes
// have MARKER in their command line, failing after procBound. It finds the
// processes of a sandbox, whose pids inside are not the host's. When COUNT
// is 0 and some are left, they are killed so that a failing story leaves
// nothing running.
func cmdMarked(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: marked MARKER COUNT")
	}
	want, err := strconv.Atoi(args[1])
	if err != nil || want < 0 {
		ts.Fatalf("marked: bad count %q", args[1])
	}
	for deadline := time.Now().Add(procBound); ; {
		found := markedProcesses(args[0])
		if len(found) == want {
			return
		}
		if time.Now().After(deadline) {
			if want == 0 {
				for _, p := range found {
					_ = syscall.Kill(p, syscall.SIGKILL)
				}
			}
			ts.Fatalf("%d processes with %q in their command line, want %d", len(found), args[0], want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// markedProcesses lists the living processes whose command line contains
// marker.
func markedProcesses(marker string) []int {
	entries, _ := os.ReadDir("/proc")
	var found []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.Contains(string(cmdline), marker) && processAlive(pid) {
			found = append(found, pid)
		}
	}
	return found
}
