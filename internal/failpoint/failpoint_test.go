package failpoint

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// helperVar makes the test binary, started again by a test below, call Hit
// instead of running tests.
const helperVar = "FAILPOINT_TEST_HELPER"

// TestMain is the helper process: with helperVar set to a point name it
// reaches that point three times, printing how often before each, then
// exits 0, unless Hit killed it.
func TestMain(m *testing.M) {
	if name := os.Getenv(helperVar); name != "" {
		for i := 1; i <= 3; i++ {
			fmt.Println(i)
			Hit(name)
		}
		fmt.Println("survived")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// reach runs the helper process with NEXA_TEST_FAILPOINT=armed and returns
// what it printed and whether SIGKILL ended it.
func reach(t *testing.T, armed, point string) (out string, killed bool) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "NEXA_TEST_FAILPOINT="+armed, helperVar+"="+point)
	b, err := cmd.Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		ws, ok := ee.Sys().(syscall.WaitStatus)
		if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("helper process: %v\n%s", err, b)
		}
		return string(b), true
	}
	if err != nil {
		t.Fatalf("helper process: %v", err)
	}
	return string(b), false
}

// TestHitKillsOnlyInTestBuilds: in a test build an armed point kills the
// process with SIGKILL on the hit it names, and other points do nothing;
// in a production build nothing is ever killed, whatever
// NEXA_TEST_FAILPOINT says.
func TestHitKillsOnlyInTestBuilds(t *testing.T) {
	for _, c := range []struct {
		armed, point string
		want         string // printed before the end; "" when it survives
	}{
		{"after-started", "after-started", "1\n"},
		{"a, after-started@2", "after-started", "1\n2\n"},
		{"after-started@3", "after-started", "1\n2\n3\n"},
		{"after-started@x", "after-started", "1\n"}, // not a count: the first hit
		{"before-result-saved", "after-started", ""},
		{"", "after-started", ""},
	} {
		want := c.want
		if !Enabled {
			want = ""
		}
		out, killed := reach(t, c.armed, c.point)
		switch {
		case want == "" && (killed || out != "1\n2\n3\nsurvived\n"):
			t.Errorf("NEXA_TEST_FAILPOINT=%q, reaching %s (Enabled %v): killed %v after printing %q, want no kill", c.armed, c.point, Enabled, killed, out)
		case want != "" && (!killed || out != want):
			t.Errorf("NEXA_TEST_FAILPOINT=%q, reaching %s: killed %v after printing %q, want SIGKILL after %q", c.armed, c.point, killed, out, want)
		}
	}
}

// TestProductionBuildReadsNoEnvironment: built without the tag, as the
// binaries users run are, the package imports nothing that could read the
// environment or send a signal; built with it, it does (so the check can
// fail).
func TestProductionBuildReadsNoEnvironment(t *testing.T) {
	if imports := goListImports(t); slices.Contains(imports, "os") || slices.Contains(imports, "syscall") {
		t.Errorf("without -tags nexatest the package imports %v: it must not read the environment", imports)
	}
	if imports := goListImports(t, "-tags=nexatest"); !slices.Contains(imports, "os") {
		t.Errorf("with -tags nexatest the package imports %v, without os: the check above proves nothing", imports)
	}
}

// goListImports lists this package's imports as `go list` sees them with
// flags, ignoring any GOFLAGS of the caller (which may carry the tag).
func goListImports(t *testing.T, flags ...string) []string {
	t.Helper()
	args := append([]string{"list"}, flags...)
	cmd := exec.Command("go", append(args, "-f", "{{join .Imports \" \"}}", ".")...)
	cmd.Env = append(os.Environ(), "GOFLAGS=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(cmd.Args[1:], " "), err, out)
	}
	return strings.Fields(string(out))
}
