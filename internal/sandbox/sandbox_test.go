package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// requireBwrap returns the detected backend. It skips when bwrap is not in
// PATH (the isolation tests need the real thing) and fails when bwrap is
// installed but its self-test fails: then sandboxed tools would be refused
// on this machine, which the test environment must not hide.
func requireBwrap(t *testing.T) *Bwrap {
	t.Helper()
	if _, err := exec.LookPath(DefaultBinary); err != nil {
		t.Skipf("bwrap not in PATH (%v): the sandbox isolation tests need bubblewrap (apt-get install bubblewrap)", err)
	}
	b, err := Detect()
	if err != nil {
		t.Fatalf("bwrap is installed but unusable here: %v", err)
	}
	return b
}

// run wraps and runs cmd, returning its combined output and what it wrote
// on fd 3.
func run(t *testing.T, b *Bwrap, cmd *exec.Cmd, work string, readOnly ...string) (string, string, error) {
	t.Helper()
	return runProtected(t, b, cmd, work, Protected{}, readOnly...)
}

// runProtected is run with nexa's files protected by prot.
func runProtected(t *testing.T, b *Bwrap, cmd *exec.Cmd, work string, prot Protected, readOnly ...string) (string, string, error) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	cmd.ExtraFiles = []*os.File{w}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	release, err := b.WrapProtected(cmd, work, prot, readOnly...)
	if err != nil {
		w.Close()
		t.Fatalf("Wrap: %v", err)
	}
	err = Start(cmd)
	release()
	w.Close()
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	fd3, _ := io.ReadAll(r)
	err = cmd.Wait()
	return out.String(), string(fd3), err
}

func TestDetectIsCachedAndAvailable(t *testing.T) {
	b := requireBwrap(t)
	again, err := Detect()
	if err != nil || again != b {
		t.Fatalf("second Detect = %p, %v; want the cached %p", again, err, b)
	}
	if err := Available(); err != nil {
		t.Fatalf("Available = %v", err)
	}
	if !filepath.IsAbs(b.Path()) {
		t.Errorf("Path %q is not absolute", b.Path())
	}
	switch goruntime.GOARCH {
	case "amd64", "arm64", "riscv64":
		if !b.SocketFilter() {
			t.Errorf("no seccomp filter on %s", goruntime.GOARCH)
		}
	}
}

func TestSeccompProgramShape(t *testing.T) {
	p := seccompProgram()
	switch goruntime.GOARCH {
	case "amd64", "arm64", "riscv64":
		if len(p) == 0 {
			t.Fatalf("no program on %s", goruntime.GOARCH)
		}
	}
	if len(p)%8 != 0 {
		t.Fatalf("program is %d bytes, not whole sock_filter records", len(p))
	}
}

// assertUnavailable checks the shape every "no backend" error must have.
func assertUnavailable(t *testing.T, err error, wants ...string) {
	t.Helper()
	if err == nil {
		t.Fatal("err = nil, want an unavailable sandbox")
	}
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err %v does not match ErrUnavailable", err)
	}
	var ue *UnavailableError
	if !errors.As(err, &ue) {
		t.Fatalf("err %T is not *UnavailableError", err)
	}
	for _, w := range append(wants, "apt-get install bubblewrap", "dnf install bubblewrap") {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("err %q lacks %q", err, w)
		}
	}
}

func TestProbeWithoutBwrap(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	b, err := Probe(DefaultBinary)
	if b != nil {
		t.Fatalf("Probe returned a backend without bwrap")
	}
	assertUnavailable(t, err, "not installed or not in PATH")

	_, err = Probe(filepath.Join(t.TempDir(), "bwrap"))
	assertUnavailable(t, err, "missing or not executable")
}

func writeScript(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "bwrap")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestProbeFailingBwrap(t *testing.T) {
	fake := writeScript(t, "echo 'bwrap: No permissions to create a new namespace' >&2\nexit 1\n")
	b, err := Probe(fake)
	if b != nil {
		t.Fatal("Probe accepted a bwrap that cannot start anything")
	}
	assertUnavailable(t, err, "self-test failed", "No permissions to create a new namespace")
}

func TestProbeRejectsBwrapThatDoesNotIsolate(t *testing.T) {
	// Runs the command directly, ignoring every flag: the self-test
	// must notice that nothing is isolated.
	fake := writeScript(t, "while [ $# -gt 0 ] && [ \"$1\" != -- ]; do shift; done\nshift\nexec \"$@\"\n")
	b, err := Probe(fake)
	if b != nil {
		t.Fatal("Probe accepted a bwrap that isolates nothing")
	}
	assertUnavailable(t, err, "not a working sandbox")
}

func TestWrapConfinesWrites(t *testing.T) {
	b := requireBwrap(t)
	work := t.TempDir()
	outside := t.TempDir() // under /tmp: hidden inside
	// A host directory outside /tmp that is writable on the host.
	hostDir, err := os.MkdirTemp("/var/tmp", "nexa-sandbox-test-")
	if err != nil {
		hostDir, err = os.MkdirTemp(os.Getenv("HOME"), ".nexa-sandbox-test-")
		if err != nil {
			t.Skipf("no writable host directory outside /tmp: %v", err)
		}
	}
	defer os.RemoveAll(hostDir)
	token := fmt.Sprintf("nexa-sandbox-test-%d", time.Now().UnixNano())
	etcProbe := "/etc/" + token
	defer os.Remove(etcProbe)
	defer os.Remove("/tmp/" + token)

	script := `
OUTSIDE=$1 HOST=$2 ETC=$3 TOKEN=$4
try() { if ( eval "$2" ) 2>/dev/null; then echo "$1 ok" >&3; else echo "$1 denied" >&3; fi; }
try work 'echo in > inside.txt'
try outside 'echo x > "$OUTSIDE/x"'
try host 'echo x > "$HOST/x"'
try etc 'echo x > "$ETC"'
try tmp 'echo t > "/tmp/$TOKEN" && [ "$(cat "/tmp/$TOKEN")" = t ]'
try dev 'echo x > /dev/null'
`
	cmd := exec.Command("/bin/sh", "-c", script, "sh", outside, hostDir, etcProbe, token)
	out, fd3, err := run(t, b, cmd, work)
	if err != nil {
		t.Fatalf("sandboxed sh: %v (output %q)", err, out)
	}
	want := map[string]string{"work": "ok", "outside": "denied", "host": "denied", "etc": "denied", "tmp": "ok", "dev": "ok"}
	for k, v := range want {
		if !strings.Contains(fd3, k+" "+v+"\n") {
			t.Errorf("%s: want %s; report:\n%s", k, v, fd3)
		}
	}
	if got, err := os.ReadFile(filepath.Join(work, "inside.txt")); err != nil || string(got) != "in\n" {
		t.Errorf("write in the working directory: %q, %v", got, err)
	}
	for _, p := range []string{filepath.Join(outside, "x"), filepath.Join(hostDir, "x"), etcProbe, "/tmp/" + token} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists on the host after the sandboxed run", p)
		}
	}
}

func TestWrapKeepsArgumentsEnvironmentAndDescriptors(t *testing.T) {
	b := requireBwrap(t)
	work := t.TempDir()
	args := []string{"two words", "--", "$(id)", "'quoted'", "--bind / /", ""}
	cmd := exec.Command("/bin/sh", append([]string{"-c", `for a in "$@"; do printf '[%s]' "$a" >&3; done; printf '|%s|%s|%s' "$NEXA_TEST_VAR" "$TMPDIR" "$(pwd)" >&3`, "sh"}, args...)...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "NEXA_TEST_VAR=kept", "TMPDIR=/somewhere/else"}
	out, fd3, err := run(t, b, cmd, work)
	if err != nil {
		t.Fatalf("sandboxed sh: %v (output %q)", err, out)
	}
	real, _ := filepath.EvalSymlinks(work)
	want := "[two words][--][$(id)]['quoted'][--bind / /][]|kept|/tmp|" + real
	if fd3 != want {
		t.Fatalf("fd 3 = %q, want %q", fd3, want)
	}
}

func TestWrapRefusesSystemWorkDirs(t *testing.T) {
	b := requireBwrap(t)
	for _, dir := range []string{"/", "/usr", "/etc", "/tmp", "/proc/self", "/sys", "/dev", filepath.Join(t.TempDir(), "missing")} {
		cmd := exec.Command("/bin/true")
		if _, err := b.Wrap(cmd, dir); err == nil {
			t.Errorf("Wrap accepted working directory %s", dir)
		} else if cmd.Path != "/bin/true" {
			t.Errorf("a refused Wrap changed the command: %v", cmd.Args)
		}
	}
	var nilB *Bwrap
	if _, err := nilB.Wrap(exec.Command("/bin/true"), t.TempDir()); !errors.Is(err, ErrUnavailable) {
		t.Errorf("nil backend: err = %v", err)
	}
	missing := exec.Command("nexa-no-such-program-anywhere")
	if _, err := b.Wrap(missing, t.TempDir()); err == nil {
		t.Errorf("Wrap accepted a command whose program was not found")
	}
}

func TestWrapExposesProgramsAndPathsHiddenByTmp(t *testing.T) {
	b := requireBwrap(t)
	// A "virtual environment" in /tmp (hidden by the private /tmp): its
	// program and the directory around it must stay usable, read-only.
	venv := t.TempDir()
	if err := os.MkdirAll(filepath.Join(venv, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(venv, "lib.txt"), []byte("library\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(venv, "bin", "tool")
	script := "#!/bin/sh\ncat \"$(dirname \"$0\")/../lib.txt\" >&3\nif (echo x > \"$(dirname \"$0\")/../new\") 2>/dev/null; then echo writable >&3; fi\ncat \"$1\" >&3\n"
	if err := os.WriteFile(prog, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	extra := t.TempDir()
	data := filepath.Join(extra, "data.txt")
	if err := os.WriteFile(data, []byte("extra\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(prog, data)
	out, fd3, err := run(t, b, cmd, t.TempDir(), extra)
	if err != nil {
		t.Fatalf("program in /tmp: %v (output %q)", err, out)
	}
	if fd3 != "library\nextra\n" {
		t.Fatalf("fd 3 = %q, want the library and extra files, read-only", fd3)
	}
}

// markerProcesses lists live host processes whose command line contains
// marker.
func markerProcesses(marker string) []string {
	entries, _ := os.ReadDir("/proc")
	var found []string
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(cmdline, []byte(marker)) {
			continue
		}
		stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && (stat[i+2] == 'Z' || stat[i+2] == 'X') {
			continue
		}
		found = append(found, e.Name()+": "+strings.ReplaceAll(string(cmdline), "\x00", " "))
	}
	return found
}

func TestKillingTheProcessGroupKillsTheSandbox(t *testing.T) {
	b := requireBwrap(t)
	work := t.TempDir()
	marker := fmt.Sprintf("nexa-sandbox-marker-%d.sh", time.Now().UnixNano())
	if err := os.WriteFile(filepath.Join(work, marker), []byte("sleep 300\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// One child in the sandbox's session, one that started its own.
	cmd := exec.Command("/bin/sh", "-c", `sh ./"$1" & setsid sh ./"$1" & echo started >&3; wait`, "sh", marker)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmd.ExtraFiles = []*os.File{w}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	release, err := b.Wrap(cmd, work)
	if err != nil {
		t.Fatal(err)
	}
	err = Start(cmd)
	release()
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	if n, _ := r.Read(buf); !strings.Contains(string(buf[:n]), "started") {
		t.Fatalf("sandboxed command did not start: %q", buf[:n])
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(markerProcesses(marker)) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the sandboxed children never showed up on the host: %v", markerProcesses(marker))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	deadline = time.Now().Add(30 * time.Second)
	for {
		left := markerProcesses(marker)
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sandboxed processes survived the kill: %v", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestWrapProtectedKeepsNexaFilesOutOfReach: the store directory, a store
// file named anywhere in the working directory (with its SQLite siblings,
// existing or not) and the files nexa runs later are neither readable nor
// writable from inside, although the working directory is.
func TestWrapProtectedKeepsNexaFilesOutOfReach(t *testing.T) {
	b := requireBwrap(t)
	work := t.TempDir()
	files := map[string]string{
		".nexa/runs.sqlite3":  "store-content",
		".nexa/logs/run.log":  "log-content",
		"mystore.db":          "other-store",
		"mystore.db-wal":      "wal-content",
		"prog.nx":             "program-content",
		"tools/legacy.py":     "legacy-content",
		"ordinary/other.txt":  "ordinary",
		"data/secrets.nxs":    "secret-file",
		"data/not-secret.txt": "plain",
	}
	for name, content := range files {
		p := filepath.Join(work, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	prot := Protected{
		Dirs:     []string{filepath.Join(work, ".nexa")},
		Files:    []string{filepath.Join(work, ".nexa/runs.sqlite3"), filepath.Join(work, "mystore.db"), filepath.Join(work, "mystore.db-wal"), filepath.Join(work, "mystore.db-journal"), filepath.Join(work, "data/secrets.nxs")},
		ReadOnly: []string{filepath.Join(work, "prog.nx"), filepath.Join(work, "tools/legacy.py")},
	}
	script := `
try() { if ( eval "$2" ) 2>/dev/null; then echo "$1 ok" >&3; else echo "$1 denied" >&3; fi; }
try read_store 'grep -q store-content .nexa/runs.sqlite3'
try read_log 'grep -q log-content .nexa/logs/run.log'
try write_nexa 'echo x > .nexa/planted'
try write_store 'echo x > mystore.db && grep -q x mystore.db'
try read_other_store 'grep -q other-store mystore.db'
try read_wal 'grep -q wal-content mystore.db-wal'
try plant_journal 'echo x > mystore.db-journal && grep -q x mystore.db-journal'
try replace_store 'rm -f mystore.db'
try read_secrets 'grep -q secret-file data/secrets.nxs'
try read_program 'grep -q program-content prog.nx'
try write_program 'echo x > prog.nx'
try write_legacy 'echo x > tools/legacy.py'
try write_ordinary 'echo changed > ordinary/other.txt'
try write_beside 'echo x > data/new.txt'
`
	cmd := exec.Command("/bin/sh", "-c", script)
	out, fd3, err := runProtected(t, b, cmd, work, prot)
	if err != nil {
		t.Fatalf("sandboxed sh: %v (output %q)", err, out)
	}
	want := map[string]string{
		"read_store": "denied", "read_log": "denied", "write_nexa": "denied", "write_store": "denied",
		"read_other_store": "denied", "read_wal": "denied", "plant_journal": "denied", "replace_store": "denied",
		"read_secrets": "denied", "read_program": "ok", "write_program": "denied", "write_legacy": "denied",
		"write_ordinary": "ok", "write_beside": "ok",
	}
	for k, v := range want {
		if !strings.Contains(fd3, k+" "+v+"\n") {
			t.Errorf("%s: want %s; report:\n%s", k, v, fd3)
		}
	}
	for name, content := range files {
		if name == "ordinary/other.txt" {
			continue
		}
		if got, err := os.ReadFile(filepath.Join(work, name)); err != nil || string(got) != content {
			t.Errorf("%s on the host: %q, %v; want %q", name, got, err, content)
		}
	}
	if _, err := os.Lstat(filepath.Join(work, ".nexa/planted")); err == nil {
		t.Errorf(".nexa/planted exists on the host")
	}
	if got, err := os.ReadFile(filepath.Join(work, "mystore.db-journal")); err != nil || len(got) != 0 {
		t.Errorf("mystore.db-journal on the host: %q, %v; want the empty placeholder", got, err)
	}
}
