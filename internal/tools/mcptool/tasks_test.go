package mcptool

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nexa-run/nexa/internal/tool"
)

// A task is handed over before it is polled, polled to completion, and its
// side effect happens once.
func TestTaskPolledToCompletion(t *testing.T) {
	opts, _ := testOptions(t)
	s := connect(t, stdioSpec(t, "tasks"), opts)
	var handed []string
	out, err := s.CallWith(context.Background(), "long_write", json.RawMessage(`{"text":"hello"}`), CallOptions{
		Handed: func(id string) error {
			// Nothing was polled yet: the task is still working.
			if b, err := os.ReadFile(filepath.Join(opts.WorkDir, "effects.txt")); err == nil {
				t.Errorf("effects.txt before the id was handed: %q", b)
			}
			handed = append(handed, id)
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(handed) != 1 || len(handed[0]) != 32 {
		t.Fatalf("handed ids %q, want one task id", handed)
	}
	if !out.Success || out.Output != "wrote hello" {
		t.Errorf("outcome %+v", out)
	}
	if b, _ := os.ReadFile(filepath.Join(opts.WorkDir, "effects.txt")); string(b) != "hello\n" {
		t.Errorf("effects.txt = %q", b)
	}
}

// A failing Handed (the journal could not be written) stops the call before
// any poll.
func TestTaskHandedFailureStops(t *testing.T) {
	opts, _ := testOptions(t)
	s := connect(t, stdioSpec(t, "tasks"), opts)
	boom := errors.New("store is gone")
	_, err := s.CallWith(context.Background(), "long_write", json.RawMessage(`{"text":"x"}`), CallOptions{Handed: func(string) error { return boom }})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the Handed error", err)
	}
	if _, err := os.Stat(filepath.Join(opts.WorkDir, "effects.txt")); err == nil {
		t.Error("the task was polled to completion after Handed failed")
	}
}

// A new server process answers for the task of the one before: Resume polls
// it to completion (the crash case, without the crash).
func TestTaskResumedByAnotherProcess(t *testing.T) {
	opts, _ := testOptions(t)
	s := connect(t, stdioSpec(t, "tasks"), opts)
	stop := make(chan struct{})
	var id string
	_, err := s.CallWith(context.Background(), "long_write", json.RawMessage(`{"text":"once"}`), CallOptions{
		Stop:   stop,
		Handed: func(h string) error { id = h; close(stop); return nil },
	})
	if !errors.Is(err, tool.ErrDetached) {
		t.Fatalf("err = %v, want ErrDetached after Stop", err)
	}
	_ = s.Close()
	s2 := connect(t, stdioSpec(t, "tasks"), opts)
	out, err := s2.Resume(context.Background(), "long_write", id, CallOptions{})
	if err != nil || out.Output != "wrote once" {
		t.Fatalf("Resume = %+v, %v", out, err)
	}
	if b, _ := os.ReadFile(filepath.Join(opts.WorkDir, "effects.txt")); string(b) != "once\n" {
		t.Errorf("effects.txt = %q, want the effect once", b)
	}
	// A task the server does not know: unknown outcome, not a guess.
	_, err = s2.Resume(context.Background(), "long_write", "nosuchtask", CallOptions{})
	if !errors.Is(err, tool.ErrUnknownOutcome) || !strings.Contains(err.Error(), "Task not found") {
		t.Errorf("Resume of an unknown task: %v", err)
	}
}

// The deadline cancels the task; the server's cancelled status is a known
// failed call.
func TestTaskCancelledAtDeadline(t *testing.T) {
	opts, _ := testOptions(t)
	s := connect(t, stdioSpec(t, "tasks"), opts)
	out, err := s.CallWith(context.Background(), "never_ends", nil, CallOptions{
		Deadline: time.Now().Add(100 * time.Millisecond),
		Handed:   func(string) error { return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	if out.Success || !strings.Contains(out.Output, "was cancelled by nexa because the run's deadline passed") {
		t.Errorf("outcome %+v", out)
	}
	if b, _ := os.ReadFile(filepath.Join(opts.WorkDir, "cancelled.txt")); len(b) == 0 {
		t.Error("the server got no tasks/cancel")
	}
}

// Structured content is checked against the output schema.
func TestStructuredResults(t *testing.T) {
	opts, _ := testOptions(t)
	s := connect(t, stdioSpec(t, "tasks"), opts)
	out := mustCall(t, s, "count_words", `{"text":"one two three"}`)
	if !out.Success || out.Output != "counted: 3\n{\"words\":3}" || string(out.Structured) != `{"words":3}` {
		t.Errorf("valid structured result: %+v (structured %s)", out, out.Structured)
	}
	out = mustCall(t, s, "count_words", `{"text":"break it"}`)
	if out.Success || out.Structured != nil ||
		!strings.Contains(out.Output, "error: the result of MCP tool count_words was refused: its structured content does not match its output schema: at /words:") {
		t.Errorf("invalid structured result: %+v", out)
	}
}
