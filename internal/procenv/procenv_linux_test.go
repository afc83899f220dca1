//go:build linux

package procenv

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

const (
	canaryKey = "sk-canary-PROCENV-0001"
	canaryPW  = "pg-canary-PROCENV-0002"
	childMode = "NEXA_PROCENV_TEST_CHILD"
)

// TestHelperChild is the child process of the tests below, not a test: it
// hides its secrets as nexa's main does (or only rewrites the block),
// reports what os.Getenv still returns and whether it is dumpable, then
// waits for its parent to close stdin.
func TestHelperChild(t *testing.T) {
	mode := os.Getenv(childMode)
	if mode == "" {
		t.Skip("run as a child process by the tests below")
	}
	var err error
	if mode == "overwrite" {
		err = overwriteEnviron()
	} else {
		err = HideSecrets()
	}
	dumpable, _ := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	fmt.Printf("err=%v dumpable=%d key=%s store=%s\n", err, dumpable, os.Getenv("OPENAI_API_KEY"), os.Getenv("NEXA_STORE"))
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// startChild runs TestHelperChild in mode with a key and a store password
// in its environment and returns its pid, the line it printed, and a
// function that ends it.
func startChild(t *testing.T, mode string) (int, string, func()) {
	t.Helper()
	if _, err := os.Stat("/proc/self/environ"); err != nil {
		t.Skip("no /proc")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperChild$")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), childMode + "=" + mode, "OPENAI_API_KEY=" + canaryKey,
		"NEXA_STORE=postgres://app:" + canaryPW + "@db/app", "PLAIN=visible-value"}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("child printed nothing: %v", err)
	}
	return cmd.Process.Pid, strings.TrimSpace(line), func() {
		_ = stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("child: %v", err)
		}
	}
}

// The block the kernel shows as /proc/PID/environ no longer holds the
// values, yet the process itself still reads them: this is what protects
// nexa from a reader that ignores the dumpable flag (root).
func TestOverwriteHidesValuesFromProcEnviron(t *testing.T) {
	pid, line, done := startChild(t, "overwrite")
	defer done()
	want := "err=<nil> dumpable=1 key=" + canaryKey + " store=postgres://app:" + canaryPW + "@db/app"
	if line != want {
		t.Fatalf("child: %s\nwant   %s", line, want)
	}
	environ, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(environ, []byte("canary")) {
		t.Fatalf("/proc/%d/environ still holds a secret: %q", pid, environ)
	}
	for _, entry := range []string{"OPENAI_API_KEY=" + strings.Repeat("*", len(canaryKey)),
		"NEXA_STORE=postgres://app:" + strings.Repeat("*", len(canaryPW)) + "@db/app", "PLAIN=visible-value"} {
		if !bytes.Contains(environ, []byte(entry+"\x00")) {
			t.Errorf("/proc/%d/environ lacks %q: %q", pid, entry, environ)
		}
	}
}

// HideSecrets as main calls it: the process is not dumpable, still reads
// its environment, and a reader of /proc/PID/environ (root or not) finds
// no secret, either because it may not read it or because it is masked.
func TestHideSecretsLeavesNothingToRead(t *testing.T) {
	pid, line, done := startChild(t, "hide")
	defer done()
	want := "err=<nil> dumpable=0 key=" + canaryKey + " store=postgres://app:" + canaryPW + "@db/app"
	if line != want {
		t.Fatalf("child: %s\nwant   %s", line, want)
	}
	environ, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	switch {
	case errors.Is(err, os.ErrPermission):
		t.Logf("not readable, as expected without CAP_SYS_PTRACE: %v", err)
	case err != nil:
		t.Fatal(err)
	case bytes.Contains(environ, []byte("canary")):
		t.Fatalf("/proc/%d/environ still holds a secret: %q", pid, environ)
	}
}
