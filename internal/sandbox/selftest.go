package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// selfTestTimeout bounds the self-test; a healthy bwrap needs milliseconds.
const selfTestTimeout = 15 * time.Second

// selfTestScript runs inside the sandbox under /bin/sh with $1 = the
// working directory, $2 = a host directory outside it, $3 = a random
// token. It uses shell built-ins only. It writes the token into the
// working directory (must appear on the host), tries to write outside it
// and into /tmp (must not appear on the host), lists the network
// interfaces on fd 3 (only loopback may exist) and finally writes
// "ok TOKEN" on fd 3, which proves inherited descriptors reach the
// command.
const selfTestScript = `set -e
echo "$3" > "$1/probe"
(echo "$3" > "$2/probe") 2>/dev/null || true
(echo "$3" > "/tmp/nexa-sandbox-probe-$3") 2>/dev/null || true
while IFS= read -r line; do echo "net $line" >&3; done < /proc/net/dev
echo "ok $3" >&3
`

// selfTest starts a trivial command with exactly the flags tools get and
// checks that it worked and was isolated. Any failure is an
// *UnavailableError carrying bubblewrap's stderr.
func (b *Bwrap) selfTest() (err error) {
	fail := func(reason string, cause error, output string) error {
		return &UnavailableError{Binary: b.path, Reason: reason, Err: cause, Output: output}
	}
	sh := "/bin/sh"
	if _, err := os.Stat(sh); err != nil {
		p, lerr := exec.LookPath("sh")
		if lerr != nil {
			return fail("cannot run the sandbox self-test: no /bin/sh", lerr, "")
		}
		sh = p
	}
	base, err := os.MkdirTemp("", "nexa-sandbox-selftest-")
	if err != nil {
		return fail("cannot create a directory for the sandbox self-test", err, "")
	}
	defer os.RemoveAll(base)
	work := filepath.Join(base, "work")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{work, outside} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return fail("cannot create a directory for the sandbox self-test", err, "")
		}
	}
	var raw [8]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return fail("cannot create a token for the sandbox self-test", err, "")
	}
	token := hex.EncodeToString(raw[:])
	hostTmpProbe := filepath.Join("/tmp", "nexa-sandbox-probe-"+token)
	defer os.Remove(hostTmpProbe)

	resR, resW, err := os.Pipe()
	if err != nil {
		return fail("cannot create a pipe for the sandbox self-test", err, "")
	}
	defer resR.Close()

	ctx, cancel := context.WithTimeout(context.Background(), selfTestTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, sh, "-c", selfTestScript, "sh", work, outside, token)
	cmd.Dir = work
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LC_ALL=C"}
	var stderr bytes.Buffer
	cmd.Stdout = &limitedBuffer{buf: &stderr, max: 4096}
	cmd.Stderr = cmd.Stdout
	cmd.ExtraFiles = []*os.File{resW}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second

	release, err := b.Wrap(cmd, work)
	if err != nil {
		resW.Close()
		return fail("cannot prepare the sandbox self-test", err, "")
	}
	startErr := Start(cmd)
	release()
	resW.Close()
	if startErr != nil {
		return fail("cannot start bubblewrap "+b.path, startErr, "")
	}
	result, _ := io.ReadAll(io.LimitReader(resR, 64<<10))
	waitErr := cmd.Wait()
	output := stderr.String()
	if ctx.Err() != nil {
		return fail(fmt.Sprintf("the sandbox self-test did not finish within %s", selfTestTimeout), ctx.Err(), output)
	}
	if waitErr != nil {
		return fail("bubblewrap "+b.path+" is installed but could not start a sandboxed process (self-test failed)", waitErr, output)
	}
	return checkSelfTest(b.path, string(result), token, work, outside, hostTmpProbe, output)
}

// checkSelfTest verifies what the self-test script reported and left.
func checkSelfTest(binary, result, token, work, outside, hostTmpProbe, output string) error {
	fail := func(reason string) error {
		return &UnavailableError{Binary: binary, Reason: "bubblewrap ran the self-test but " + reason + "; it is not a working sandbox", Output: output}
	}
	okSeen := false
	sc := bufio.NewScanner(strings.NewReader(result))
	lineNo := 0
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "ok "+token:
			okSeen = true
		case strings.HasPrefix(line, "net "):
			lineNo++
			// Two header lines, then "  iface: counters…".
			if lineNo <= 2 {
				continue
			}
			iface, _, found := strings.Cut(strings.TrimPrefix(line, "net "), ":")
			if found && strings.TrimSpace(iface) != "lo" {
				return fail(fmt.Sprintf("the sandbox sees network interface %q (only loopback is allowed)", strings.TrimSpace(iface)))
			}
		}
	}
	if !okSeen {
		return fail("the sandboxed command did not report through an inherited descriptor")
	}
	if lineNo < 3 {
		return fail("the sandbox's network interfaces could not be listed")
	}
	got, err := os.ReadFile(filepath.Join(work, "probe"))
	if err != nil || strings.TrimSpace(string(got)) != token {
		return fail("a file written in the working directory did not appear on the host")
	}
	if _, err := os.Lstat(filepath.Join(outside, "probe")); !errors.Is(err, os.ErrNotExist) {
		return fail("the sandboxed command could write outside the working directory")
	}
	if _, err := os.Lstat(hostTmpProbe); !errors.Is(err, os.ErrNotExist) {
		return fail("the sandboxed command wrote to the host's /tmp (it must be private)")
	}
	return nil
}

// limitedBuffer keeps the first max bytes and discards the rest, so a
// misbehaving bwrap cannot fill memory; it never fails, so the process is
// never blocked.
type limitedBuffer struct {
	buf *bytes.Buffer
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.max - l.buf.Len(); room > 0 {
		if len(p) > room {
			l.buf.Write(p[:room])
		} else {
			l.buf.Write(p)
		}
	}
	return len(p), nil
}
