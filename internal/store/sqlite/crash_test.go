package sqlite

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nexa-run/nexa/internal/state"
)

// crashEnv names the store the helper process writes to.
const crashEnv = "NEXA_STORE_CRASH_HELPER"

var crashRuns = []string{"crash-0", "crash-1", "crash-2"}

// The rows of a crash run are a function of its revision R:
//   - messages seq 0..R (R+1 of them);
//   - journal entry "call" with Attempts R, plus "c-2".."c-R" (R entries);
//   - provider item 0 whose usage has TotalTokens R;
//   - header usage ToolCalls R.
//
// A save from R to R+1 writes exactly what changes.
func crashStep(st *state.RunState) state.Delta {
	r := int(st.Revision) + 1
	m := message(r)
	st.Messages = append(st.Messages, m)
	call := entry("call", 0, r)
	added := entry("c-"+strconv.Itoa(r), r, 1)
	st.Journal[0] = call
	st.Journal = append(st.Journal, added)
	st.ProviderItems[0].Usage.TotalTokens = r
	st.Usage.ToolCalls = r
	return state.Delta{
		Messages:      []state.Message{m},
		Journal:       []state.JournalEntry{call, added},
		ProviderItems: st.ProviderItems[:1],
	}
}

func crashCreate(id string) *state.RunState {
	st := newRun(id, 2, 0)
	st.Journal = []state.JournalEntry{entry("call", 0, 1)}
	st.ProviderItems = []state.ProviderItem{{Seq: 0, Raw: []byte(`{}`), Usage: state.Usage{TotalTokens: 1}}}
	st.Usage.ToolCalls = 1
	return st
}

// checkCrashRun verifies that a run's rows are exactly those of its revision.
func checkCrashRun(st *state.RunState) error {
	r := int(st.Revision)
	if len(st.Messages) != r+1 {
		return fmt.Errorf("revision %d with %d messages", r, len(st.Messages))
	}
	for i, m := range st.Messages {
		if m.Seq != i || m.Content != message(i).Content {
			return fmt.Errorf("message %d is %+v", i, m)
		}
	}
	if len(st.Journal) != r {
		return fmt.Errorf("revision %d with %d journal entries", r, len(st.Journal))
	}
	if e := st.Journal[0]; e.CallID != "call" || e.Attempts != r {
		return fmt.Errorf("revision %d with journal[0] %s attempts %d", r, e.CallID, e.Attempts)
	}
	if len(st.ProviderItems) != 1 || st.ProviderItems[0].Usage.TotalTokens != r {
		return fmt.Errorf("revision %d with provider items %+v", r, st.ProviderItems)
	}
	if st.Usage.ToolCalls != r {
		return fmt.Errorf("revision %d with usage.tool_calls %d", r, st.Usage.ToolCalls)
	}
	return nil
}

// TestHelperProcess is the child of TestCrashKill9: it saves the crash runs
// in a tight loop, reporting each committed revision on stdout, until it is
// killed. It does nothing in a normal test run.
func TestHelperProcess(t *testing.T) {
	path := os.Getenv(crashEnv)
	if path == "" {
		t.Skip("helper process for TestCrashKill9")
	}
	fail := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, format+"\n", args...)
		os.Exit(3)
	}
	ctx := context.Background()
	s, err := Open(ctx, path)
	if err != nil {
		fail("open: %v", err)
	}
	runs := map[string]*state.RunState{}
	for _, id := range crashRuns {
		st, err := s.Load(ctx, id)
		if errors.Is(err, state.ErrNotFound) {
			st = crashCreate(id)
			err = s.Create(ctx, st)
		}
		if err != nil {
			fail("load/create %s: %v", id, err)
		}
		if err := checkCrashRun(st); err != nil {
			fail("inconsistent %s at start: %v", id, err)
		}
		fmt.Printf("saved %s %d\n", id, st.Revision)
		runs[id] = st
	}
	for i := 0; ; i++ {
		id := crashRuns[i%len(crashRuns)]
		if id == "crash-2" {
			// Exercise Update's path too.
			st, err := s.Update(ctx, id, func(st *state.RunState) (state.Delta, error) {
				return crashStep(st), nil
			})
			if err != nil {
				fail("update %s: %v", id, err)
			}
			fmt.Printf("saved %s %d\n", id, st.Revision)
			continue
		}
		st := runs[id]
		if err := s.Save(ctx, st, crashStep(st)); err != nil {
			fail("save %s: %v", id, err)
		}
		fmt.Printf("saved %s %d\n", id, st.Revision)
	}
}

// TestCrashKill9 kills a process that saves in a tight loop with SIGKILL at
// random moments, several times, and then checks that the store opens, every
// run loads with rows consistent with its revision, and no revision the
// child reported as committed is lost.
func TestCrashKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	path := DefaultPath(t.TempDir())
	reported := map[string]int64{}
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	const rounds = 8
	totalSaves := 0
	for round := 0; round < rounds; round++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashEnv+"="+path)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// The first rounds die early (during Open or the first saves), the
		// later ones mid-loop: after a number of reported saves, never
		// after a delay, so a slow machine tests the same thing.
		target := rng.IntN(3)
		if round >= 2 {
			target = 5 + rng.IntN(300)
		}
		reached := make(chan struct{})
		done := make(chan int)
		go func() {
			n := 0
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				f := strings.Fields(sc.Text())
				if len(f) != 3 || f[0] != "saved" {
					continue
				}
				rev, err := strconv.ParseInt(f[2], 10, 64)
				if err != nil {
					continue
				}
				mu.Lock()
				if rev < reported[f[1]] {
					t.Errorf("round %d: %s reported revision %d after %d: a committed save was lost", round, f[1], rev, reported[f[1]])
				}
				reported[f[1]] = rev
				mu.Unlock()
				n++
				if n == target {
					close(reached)
				}
			}
			done <- n
		}()
		if target > 0 {
			select {
			case <-reached: // the child saves until killed, so this comes
			case n := <-done:
				cmd.Wait()
				t.Fatalf("round %d: child stopped after %d saves by itself:\n%s", round, n, stderr.String())
			}
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		n := <-done
		err = cmd.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != -1 {
			t.Fatalf("round %d: child did not die by the signal: %v\n%s", round, err, stderr.String())
		}
		totalSaves += n
		t.Logf("round %d: killed after %d reported saves (%d read in all)", round, target, n)
	}
	if totalSaves < 20 { // cannot happen with the targets above; a guard for edits
		t.Fatalf("only %d saves in %d rounds: the test proved little", totalSaves, rounds)
	}

	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatalf("open after crashes: %v", err)
	}
	defer s.Close()
	for _, id := range crashRuns {
		st, err := s.Load(context.Background(), id)
		if errors.Is(err, state.ErrNotFound) && reported[id] == 0 {
			continue
		}
		if err != nil {
			t.Fatalf("load %s: %v", id, err)
		}
		if err := checkCrashRun(st); err != nil {
			t.Errorf("%s: %v", id, err)
		}
		if st.Revision < reported[id] {
			t.Errorf("%s: stored revision %d < committed revision %d reported by the child", id, st.Revision, reported[id])
		}
		t.Logf("%s: revision %d (child reported %d)", id, st.Revision, reported[id])
	}
	var ok string
	if err := s.db.QueryRow("PRAGMA integrity_check").Scan(&ok); err != nil || ok != "ok" {
		t.Errorf("integrity_check: %q %v", ok, err)
	}
}
