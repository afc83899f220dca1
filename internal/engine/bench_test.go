package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/nexa-run/nexa/internal/tool"
	"path/filepath"
	"testing"
	"time"

	"github.com/nexa-run/nexa/internal/engine"
	"github.com/nexa-run/nexa/internal/ir"
	"github.com/nexa-run/nexa/internal/provider"
	"github.com/nexa-run/nexa/internal/state"
	"github.com/nexa-run/nexa/internal/store/postgres"
	"github.com/nexa-run/nexa/internal/store/postgres/pgtest"
	"github.com/nexa-run/nexa/internal/store/sqlite"
)

// loopProvider asks for one tool call per turn until rounds are done.
type loopProvider struct{ rounds int }

func (p loopProvider) Complete(_ context.Context, req provider.Request, _ func(provider.Event)) (provider.Reply, error) {
	n := 0
	for _, m := range req.Messages {
		if m.Role == state.RoleAssistant {
			n++
		}
	}
	if n >= p.rounds {
		return provider.Reply{Message: state.Message{Role: state.RoleAssistant, Content: "done"}, Raw: json.RawMessage(`{}`)}, nil
	}
	call := state.ToolCall{ID: fmt.Sprintf("c%d", n), Name: "echo", Arguments: `{"text":"step"}`}
	return provider.Reply{Message: state.Message{Role: state.RoleAssistant, ToolCalls: []state.ToolCall{call}}, Raw: json.RawMessage(`{}`),
		Usage: state.Usage{InputTokens: 100, OutputTokens: 10, TotalTokens: 110}}, nil
}

func (loopProvider) Identity() state.ProviderIdentity {
	return state.ProviderIdentity{Kind: "bench", Model: "m"}
}

type echoExec struct{}

func (echoExec) Execute(_ context.Context, inv tool.Invocation) (tool.Outcome, error) {
	return tool.Outcome{Output: string(inv.Arguments), Success: true}, nil
}

// benchStores open a fresh store of each kind for the benchmarks: SQLite
// in a temporary file, PostgreSQL in a fresh schema of NEXA_TEST_POSTGRES
// (skipped without it).
var benchStores = []struct {
	name string
	open func(b *testing.B) state.Store
}{
	{"sqlite", func(b *testing.B) state.Store {
		s, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "runs.sqlite3"))
		if err != nil {
			b.Fatal(err)
		}
		return s
	}},
	{"postgres", func(b *testing.B) state.Store {
		s, err := postgres.Open(context.Background(), pgtest.FreshURL(b))
		if err != nil {
			b.Fatal(err)
		}
		return s
	}},
}

// BenchmarkRunStep measures the runtime's own cost per tool round (provider
// reply saved, started saved, result and tool message saved) with each
// store, for short and long runs; ns/step should not grow with the length
// of the run.
func BenchmarkRunStep(b *testing.B) {
	for _, bs := range benchStores {
		for _, rounds := range []int{10, 200} {
			b.Run(fmt.Sprintf("store=%s/rounds=%d", bs.name, rounds), func(b *testing.B) {
				benchRunStep(b, bs.open(b), rounds)
			})
		}
	}
}

// echoProgram is the one-tool program the load tests and benchmarks run:
// agent A with a low-risk tool echo(text) of the given body kind, served
// by echoExec.
func echoProgram(hash string, kind ir.BodyKind) *ir.Program {
	return &ir.Program{
		Hash: hash,
		Tools: []*ir.Tool{{Name: "echo", Description: "Echo", Risk: "low", Timeout: 5,
			Parameters: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}`),
			Body:       ir.Body{Kind: kind}}},
		Agents: []*ir.Agent{{Name: "A", Prompt: "p", Tools: []string{"echo"}, Retry: -1}},
	}
}

func benchRunStep(b *testing.B, s state.Store, rounds int) {
	defer s.Close()
	prog := echoProgram("sha256:bench", ir.BodyPython)
	r, err := engine.NewRunner(engine.Config{Program: prog, Agent: prog.Agents[0], Store: s, Provider: loopProvider{rounds: rounds},
		Executors: map[ir.BodyKind]tool.Executor{ir.BodyPython: echoExec{}}})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		st, err := r.Start(context.Background(), engine.NewRun{Task: "t", WorkDir: "/w"})
		if err != nil || st.Status != state.StatusCompleted {
			b.Fatalf("%v %s", err, st.Status)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rounds), "ns/step")
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N*rounds), "cpu-ns/step")
}

// sleepExec is a tool that takes a fixed time, like a lookup on a remote
// service.
type sleepExec struct{ d time.Duration }

func (s sleepExec) Execute(_ context.Context, inv tool.Invocation) (tool.Outcome, error) {
	time.Sleep(s.d)
	return tool.Outcome{Output: "slept", Success: true}, nil
}

// BenchmarkParallelTools measures how long the tools of a reply of three
// calls take, from the first call's start to the last call's end, when each
// call takes 100 ms: about 300 ms one after another (max-parallel=1),
// about 100 ms at once (the default). tools-ms/reply is that span.
func BenchmarkParallelTools(b *testing.B) {
	const toolTime = 100 * time.Millisecond
	for _, maxParallel := range []int{1, engine.DefaultMaxParallelTools} {
		b.Run(fmt.Sprintf("max-parallel=%d", maxParallel), func(b *testing.B) {
			s, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "runs.sqlite3"))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			prog := echoProgram("sha256:parallel", ir.BodyPython)
			var first, last time.Time
			observe := func(ev engine.Event) {
				switch {
				case ev.Kind == engine.EventToolStart && first.IsZero():
					first = time.Now()
				case ev.Kind == engine.EventToolDone:
					last = time.Now()
				}
			}
			r, err := engine.NewRunner(engine.Config{Program: prog, Agent: prog.Agents[0], Store: s, Provider: threeCallProvider{},
				Executors: map[ir.BodyKind]tool.Executor{ir.BodyPython: sleepExec{toolTime}}, Observe: observe, MaxParallelTools: maxParallel})
			if err != nil {
				b.Fatal(err)
			}
			var span time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				first, last = time.Time{}, time.Time{}
				st, err := r.Start(context.Background(), engine.NewRun{Task: "t", WorkDir: "/w"})
				if err != nil || st.Status != state.StatusCompleted {
					b.Fatalf("%v %s", err, st.Status)
				}
				span += last.Sub(first)
			}
			b.ReportMetric(float64(span.Milliseconds())/float64(b.N), "tools-ms/reply")
		})
	}
}
