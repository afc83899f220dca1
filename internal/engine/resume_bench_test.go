package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/nexa-run/nexa/internal/tool"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nexa-run/nexa/internal/engine"
	"github.com/nexa-run/nexa/internal/ir"
	"github.com/nexa-run/nexa/internal/provider"
	"github.com/nexa-run/nexa/internal/state"
	"github.com/nexa-run/nexa/internal/store/sqlite"
)

// pausingProvider asks for one echo call per turn for rounds turns, then
// for one call of confirm (which needs approval), then answers.
type pausingProvider struct{ rounds int }

func (p pausingProvider) Complete(_ context.Context, req provider.Request, _ func(provider.Event)) (provider.Reply, error) {
	n := 0
	for i := len(req.Messages) - 1; i >= 0; i-- {
		// The last assistant message with calls names the turn.
		if m := req.Messages[i]; m.Role == state.RoleAssistant && len(m.ToolCalls) > 0 {
			fmt.Sscanf(m.ToolCalls[0].ID, "c%d", &n)
			n++
			break
		}
	}
	var call state.ToolCall
	switch {
	case n < p.rounds:
		call = state.ToolCall{ID: fmt.Sprintf("c%d", n), Name: "echo", Arguments: `{"text":"step"}`}
	case n == p.rounds:
		call = state.ToolCall{ID: fmt.Sprintf("c%d", n), Name: "confirm", Arguments: `{}`}
	default:
		return provider.Reply{Message: state.Message{Role: state.RoleAssistant, Content: "done"}, Raw: json.RawMessage(`{}`)}, nil
	}
	return provider.Reply{Message: state.Message{Role: state.RoleAssistant, ToolCalls: []state.ToolCall{call}}, Raw: json.RawMessage(`{"id":"r"}`),
		Usage: state.Usage{InputTokens: 100, OutputTokens: 10, TotalTokens: 110}}, nil
}

func (pausingProvider) Identity() state.ProviderIdentity {
	return state.ProviderIdentity{Kind: "bench", Model: "m"}
}

// confirmProgram is echoProgram with a second tool, confirm, that needs
// approval.
func confirmProgram() *ir.Program {
	prog := echoProgram("sha256:resume", ir.BodyPython)
	prog.Tools = append(prog.Tools, &ir.Tool{Name: "confirm", Description: "Confirm", Risk: "high", Timeout: 5,
		Parameters: json.RawMessage(`{"type":"object","properties":{}}`), Body: ir.Body{Kind: ir.BodyPython}})
	prog.Agents[0].Tools = append(prog.Agents[0].Tools, "confirm")
	return prog
}

// BenchmarkResume2000 resumes a run paused for approval after 2,000 tool
// rounds, as `nexa agent --resume RUN --approve CALL` does after start-up:
// lease, load the whole run, check, save the decision, run the approved
// call, ask the model once more and save the answer. Each iteration
// resumes a fresh copy of the paused run (made outside the timer).
// Run it with -benchmem; docs/benchmarks.md#resume.
func BenchmarkResume2000(b *testing.B) {
	const rounds = 2000
	ctx := context.Background()
	dir := b.TempDir()
	base := filepath.Join(dir, "base.sqlite3")
	s, err := sqlite.Open(ctx, base)
	if err != nil {
		b.Fatal(err)
	}
	prog := confirmProgram()
	opts := func(s state.Store) engine.Config {
		return engine.Config{Program: prog, Agent: prog.Agents[0], Store: s, Provider: pausingProvider{rounds: rounds},
			Executors: map[ir.BodyKind]tool.Executor{ir.BodyPython: echoExec{}}}
	}
	r, err := engine.NewRunner(opts(s))
	if err != nil {
		b.Fatal(err)
	}
	workDir := b.TempDir()
	paused, err := r.Start(ctx, engine.NewRun{Task: "t", WorkDir: workDir})
	if err != nil || paused.Status != state.StatusWaitingApproval {
		b.Fatalf("set-up: %v, status %s", err, paused.Status)
	}
	s.Close() // checkpoints the WAL: the file holds the whole run
	snapshot, err := os.ReadFile(base)
	if err != nil {
		b.Fatal(err)
	}
	req := engine.ResumeRequest{Agent: "A", SourceHash: prog.Hash, Provider: pausingProvider{}.Identity(), WorkDir: workDir}
	confirm := fmt.Sprintf("c%d", rounds)
	b.ReportAllocs()
	b.ResetTimer()
	var cpu time.Duration
	for i := 0; i < b.N; i++ {
		// A fresh copy of the store, opened by a fresh handle, as a
		// new process would find it.
		b.StopTimer()
		path := filepath.Join(dir, fmt.Sprintf("copy-%d.sqlite3", i))
		if err := os.WriteFile(path, snapshot, 0o600); err != nil {
			b.Fatal(err)
		}
		s, err := sqlite.Open(ctx, path)
		if err != nil {
			b.Fatal(err)
		}
		r, err := engine.NewRunner(opts(s))
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		cpu0 := cpuTime()
		st, err := r.Resume(ctx, engine.ResumeOptions{RunID: paused.ID, Request: req,
			Decisions: []engine.Decision{{CallID: confirm, Approve: true}}})
		cpu += cpuTime() - cpu0
		if err != nil || st.Status != state.StatusCompleted {
			b.Fatalf("resume: %v, status %s", err, st.Status)
		}
		b.StopTimer()
		s.Close()
		for _, suffix := range []string{"", "-wal", "-shm"} {
			os.Remove(path + suffix)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
}
