package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nexa-run/nexa/internal/cli"
	"github.com/nexa-run/nexa/internal/engine"
	"github.com/nexa-run/nexa/internal/state"
	"github.com/nexa-run/nexa/internal/store/postgres"
	"github.com/nexa-run/nexa/internal/store/postgres/pgtest"
	"github.com/nexa-run/nexa/internal/testknob"
)

// killProgram's tool appends one line to a file named after its run and
// call: a tool executed twice leaves a file of two lines.
const killProgram = `@tool("Mark this call as executed")
fn mark(n: int): string {
    python! """
import os, time
p = os.path.join("marks", os.environ["NEXA_RUN_ID"] + "." + os.environ["NEXA_CALL_ID"])
with open(p, "a") as f:
    f.write("executed\n")
time.sleep(0.03)
return "marked"
"""
}

agent Marker uses mark {
    prompt: "Mark twice."
}
`

const killScript = `{"turns": [
  {"tool_calls": [{"id": "m1", "name": "mark", "arguments": {"n": 1}}]},
  {"tool_calls": [{"id": "m2", "name": "mark", "arguments": {"n": 2}}]},
  {"content": "Marked twice."}
]}`

// TestWorkersSurviveKill9 is the worker pool's crash check on PostgreSQL:
// three nexa worker processes drain 100 detached runs while one of them is
// killed with kill -9 after every few completed runs and started again.
// Each run executes two tool calls whose side effects are counted. No call
// may execute twice, no run may be lost, and none may be left stuck: a run
// whose call a kill cut off must stop at unknown_outcome (never run
// again); once an operator resolves the call, a worker completes the run.
func TestWorkersSurviveKill9(t *testing.T) {
	if !testknob.Enabled {
		t.Skip("needs NEXA_TEST_LEASE_TTL, a knob of test builds only: go test -tags nexatest")
	}
	if testing.Short() {
		t.Skip("drives 100 runs through worker processes")
	}
	url := pgtest.FreshURL(t)
	nexa, err := exec.LookPath("nexa")
	if err != nil {
		t.Fatalf("the nexa command of the test binary: %v", err)
	}
	dir := t.TempDir()
	t.Chdir(dir)
	for name, body := range map[string]string{"w.nx": killProgram, "model.json": killScript} {
		if err := os.WriteFile(name, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir("marks", 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("NEXA_STORE", url)

	const runs = 100
	ids := map[string]bool{}
	for i := range runs {
		var out, errb bytes.Buffer
		code := cli.Main([]string{"agent", "w.nx", "Marker", fmt.Sprintf("task %d", i), "--provider", "script:model.json", "--detach", "-q"}, strings.NewReader(""), &out, &errb)
		if code != 0 || !strings.Contains(out.String(), `"status": "queued"`) {
			t.Fatalf("submit run %d: exit %d\n%s\n%s", i, code, out.String(), errb.String())
		}
		ids[runIDOf(t, out.String())] = true
	}

	start := func(n int) *exec.Cmd {
		logf, err := os.OpenFile(fmt.Sprintf("worker-%d.log", n), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		defer logf.Close()
		cmd := exec.Command(nexa, "worker", "--poll-interval", "50ms", "--concurrency", "4")
		cmd.Env = append(os.Environ(), "NEXA_TEST_LEASE_TTL=1s")
		cmd.Stderr = logf
		if err := cmd.Start(); err != nil {
			t.Fatalf("start worker %d: %v", n, err)
		}
		return cmd
	}
	workers := []*exec.Cmd{start(0), start(1), start(2)}
	t.Cleanup(func() {
		for _, w := range workers {
			if w.ProcessState == nil {
				_ = w.Process.Kill()
				_ = w.Wait()
			}
		}
	})

	s, err := postgres.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// After every 5 more runs stop, one worker (in turn) is killed with
	// kill -9 and started again. The loop ends when every run has
	// stopped; the bound is a hang guard, not a timing.
	// A run whose call a kill cut off stops at unknown_outcome; the test
	// then does what an operator does: it looks at the tool's own effect
	// (the mark file) and records it with nexa runs resolve, which hands
	// the run back to the workers to complete.
	kills, nextKill, resolved := 0, 5, 0
	guard := time.Now().Add(10 * time.Minute)
	var stopped map[state.Status]int
	for {
		stopped = map[state.Status]int{}
		sums, err := s.List(context.Background(), state.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		done := 0
		for _, sum := range sums {
			stopped[sum.Status]++
			switch sum.Status {
			case state.StatusCompleted:
				done++
			case state.StatusUnknownOutcome:
				if resolveAsOperator(t, s, sum.ID) {
					resolved++
				}
			}
		}
		if done == runs {
			break
		}
		if time.Now().After(guard) {
			t.Fatalf("runs still not stopped: %v", stopped)
		}
		if done >= nextKill && done < runs-5 {
			w := kills % len(workers)
			_ = workers[w].Process.Signal(syscall.SIGKILL)
			_ = workers[w].Wait()
			workers[w] = start(w)
			kills++
			nextKill = done + 5
		}
		time.Sleep(50 * time.Millisecond) // polling the store for progress
	}

	// Drain the workers: each exits 0 holding nothing.
	for n, w := range workers {
		_ = w.Process.Signal(syscall.SIGTERM)
		if err := w.Wait(); err != nil {
			t.Errorf("worker %d after SIGTERM: %v", n, err)
		}
	}

	twice, lost := 0, 0
	for id := range ids {
		st, err := engine.Show(context.Background(), s, id)
		if err != nil {
			lost++
			t.Errorf("run %s: %v", id, err)
			continue
		}
		if st.Holder != nil {
			t.Errorf("run %s still held by %s after the workers drained", id, st.Holder.Owner)
		}
		for _, e := range st.Journal {
			b, err := os.ReadFile(filepath.Join("marks", id+"."+e.CallID))
			n := strings.Count(string(b), "executed")
			if n > 1 {
				twice++
				t.Errorf("run %s call %s executed %d times", id, e.CallID, n)
			}
			if e.Stage == state.StageCompleted && e.Outcome == "executed" && (err != nil || n != 1) {
				t.Errorf("run %s call %s recorded executed, but its tool left %d marks", id, e.CallID, n)
			}
		}
		if st.Status != state.StatusCompleted {
			t.Errorf("run %s is stuck in %s", id, st.Status)
		}
	}
	t.Logf("%d runs, %d kill -9 of a worker: %d completed, %d calls cut off by a kill stopped at unknown_outcome and were resolved by the operator (never run again), %d executions twice, %d lost",
		runs, kills, stopped[state.StatusCompleted], resolved, twice, lost)
	if kills == 0 {
		t.Error("no worker was killed")
	}
}

// resolveAsOperator records the outcome of the unknown call of run id as an
// operator would: from the tool's own effect, the mark file, which says
// whether the tool ran. The run is then runnable again, and a worker
// completes it without running the call. It reports false for a run
// resolved already, waiting for a worker.
func resolveAsOperator(t *testing.T, s state.Store, id string) bool {
	t.Helper()
	st, err := engine.Show(context.Background(), s, id)
	if err != nil {
		t.Fatal(err)
	}
	_, unknown := engine.OperatorCalls(st)
	switch {
	case len(unknown) == 0:
		return false
	case len(unknown) > 1:
		t.Fatalf("run %s stopped at unknown_outcome with %d unknown calls, want 1", id, len(unknown))
	}
	call := unknown[0].CallID
	success, output := "true", "marked"
	if _, err := os.Stat(filepath.Join("marks", id+"."+call)); err != nil {
		success, output = "false", "not executed: the kill came before the tool wrote its mark"
	}
	var out, errb bytes.Buffer
	code := cli.Main([]string{"runs", "resolve", id, call, "--output", output, "--success=" + success}, strings.NewReader(""), &out, &errb)
	if code == cli.ExitConflict {
		// The worker that stopped the run has not let go of it yet.
		return false
	}
	if code != 0 {
		t.Fatalf("runs resolve %s %s: exit %d\n%s", id, call, code, errb.String())
	}
	return true
}

// runIDOf reads run_id from a result object.
func runIDOf(t *testing.T, out string) string {
	t.Helper()
	i := strings.Index(out, `"run_id": "`)
	if i < 0 {
		t.Fatalf("no run_id in %s", out)
	}
	rest := out[i+len(`"run_id": "`):]
	return rest[:strings.IndexByte(rest, '"')]
}
