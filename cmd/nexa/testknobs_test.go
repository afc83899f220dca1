package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/nexa-run/nexa/internal/failpoint"
	"github.com/nexa-run/nexa/internal/testknob"
)

// testKnobsCondition is the story condition [testknobs]: true when this
// test binary was built with the tag nexatest (as `make test` builds it),
// so that failpoints and the other NEXA_TEST_* knobs work. Without the tag
// a story that needs one can `[!testknobs] skip` with its reason, except
// under CI, where it is an error that fails the story: in CI the crash
// stories must run.
func testKnobsCondition() (bool, error) {
	if failpoint.Enabled && testknob.Enabled {
		return true, nil
	}
	if os.Getenv("CI") != "" {
		return false, errors.New("this test binary was built without -tags nexatest, but CI is set: the stories that need test knobs must run in CI (make test)")
	}
	return false, nil
}

// TestProductionBinaryIgnoresFailpoints builds nexa as users get it (go
// build, without the tag) and runs the first crash of the agent_crash
// story with its failpoint armed: the binary does not stop at the point,
// the run completes and its tool ran once.
func TestProductionBinaryIgnoresFailpoints(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the nexa binary; not in -short mode")
	}
	bin := filepath.Join(t.TempDir(), "nexa")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "GOFLAGS=") // no tag from the caller's GOFLAGS
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	story, err := txtar.ParseFile("../../testdata/scripts/agent_crash.txtar")
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	files := map[string][]byte{}
	for _, f := range story.Files {
		files[f.Name] = f.Data
		if err := os.WriteFile(filepath.Join(work, f.Name), f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := exec.Command(bin, "agent", "w.nx", "W", "go", "--provider", "script:model.json")
	run.Dir = work
	run.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + work, "TMPDIR=" + work, "NO_COLOR=1",
		"NEXA_TEST_FAILPOINT=after-reply-saved"}
	var stdout, stderr bytes.Buffer
	run.Stdout, run.Stderr = &stdout, &stderr
	if err := run.Run(); err != nil {
		t.Fatalf("nexa agent with NEXA_TEST_FAILPOINT=after-reply-saved: %v (the production binary must ignore it)\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), `"status": "completed"`) {
		t.Errorf("the run did not complete:\n%s", stdout.String())
	}
	effects, err := os.ReadFile(filepath.Join(work, "effects.txt"))
	if err != nil || !bytes.Equal(effects, files["want-one.txt"]) {
		t.Errorf("effects.txt = %q, %v; want %q", effects, err, files["want-one.txt"])
	}
}
