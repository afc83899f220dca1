package testknob

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestKnobsOnlyInTestBuilds: a test build reads the knobs (ignoring what
// is not a usable duration); any other build returns zero whatever the
// environment says. The same table runs in both builds.
func TestKnobsOnlyInTestBuilds(t *testing.T) {
	for _, c := range []struct {
		lease, offset         string
		wantLease, wantOffset time.Duration
	}{
		{"", "", 0, 0},
		{"1s", "31m", time.Second, 31 * time.Minute},
		{"250ms", "-1h", 250 * time.Millisecond, -time.Hour},
		{"-1s", "0", 0, 0},
		{"soon", "later", 0, 0},
		{"30", "20", 0, 0}, // a bare number is not a Go duration
	} {
		t.Setenv(LeaseTTLVar, c.lease)
		t.Setenv(ClockOffsetVar, c.offset)
		if !Enabled {
			c.wantLease, c.wantOffset = 0, 0
		}
		if got := LeaseTTL(); got != c.wantLease {
			t.Errorf("%s=%q (Enabled %v): LeaseTTL() = %v, want %v", LeaseTTLVar, c.lease, Enabled, got, c.wantLease)
		}
		if got := ClockOffset(); got != c.wantOffset {
			t.Errorf("%s=%q (Enabled %v): ClockOffset() = %v, want %v", ClockOffsetVar, c.offset, Enabled, got, c.wantOffset)
		}
	}
}

// TestProductionBuildReadsNoEnvironment: built without the tag, as the
// binaries users run are, the package imports nothing that could read the
// environment; built with it, it does (so the check can fail).
func TestProductionBuildReadsNoEnvironment(t *testing.T) {
	if imports := goListImports(t); slices.Contains(imports, "os") {
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
