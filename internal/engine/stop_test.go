package engine_test

import (
	"context"
	"encoding/json"
	"github.com/nexa-run/nexa/internal/tool"
	"path/filepath"
	"testing"

	"github.com/nexa-run/nexa/internal/engine"
	"github.com/nexa-run/nexa/internal/ir"
	"github.com/nexa-run/nexa/internal/provider"
	"github.com/nexa-run/nexa/internal/state"
	"github.com/nexa-run/nexa/internal/store/sqlite"
)

// stallProvider answers its first requests with one echo call each and
// then waits for its context, reporting on started that it is waiting.
type stallProvider struct {
	calls   int
	started chan<- struct{}
}

func (p stallProvider) Complete(ctx context.Context, req provider.Request, _ func(provider.Event)) (provider.Reply, error) {
	n := 0
	for _, m := range req.Messages {
		if m.Role == state.RoleAssistant {
			n++
		}
	}
	if n < p.calls {
		call := state.ToolCall{ID: "c" + string(rune('a'+n)), Name: "echo", Arguments: `{"text":"x"}`}
		return provider.Reply{Message: state.Message{Role: state.RoleAssistant, ToolCalls: []state.ToolCall{call}}, Raw: json.RawMessage(`{}`)}, nil
	}
	close(p.started)
	<-ctx.Done()
	return provider.Reply{}, ctx.Err()
}

func (stallProvider) Identity() state.ProviderIdentity {
	return state.ProviderIdentity{Kind: "bench", Model: "m"}
}

// A stop request ends the provider request in flight, several rounds into
// a drive (the requests share one watcher of the stop channel), and the
// run is saved as interrupted: the stop cut the request, not the writes.
func TestStopEndsProviderRequestInFlight(t *testing.T) {
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "runs.sqlite3"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	stop := make(chan struct{})
	waiting := make(chan struct{})
	prog := echoProgram("sha256:stop", ir.BodyPython)
	r, err := engine.NewRunner(engine.Config{Program: prog, Agent: prog.Agents[0], Store: s,
		Provider: stallProvider{calls: 3, started: waiting}, Stop: stop,
		Executors: map[ir.BodyKind]tool.Executor{ir.BodyPython: echoExec{}}})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		<-waiting
		close(stop)
	}()
	st, err := r.Start(context.Background(), engine.NewRun{Task: "t", WorkDir: t.TempDir()})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if st.Status != state.StatusInterrupted || st.Usage.ToolCalls != 3 {
		t.Fatalf("run ended %s after %d tool calls, want interrupted after 3", st.Status, st.Usage.ToolCalls)
	}
	got, err := s.Load(context.Background(), st.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != state.StatusInterrupted || len(got.Journal) != 3 {
		t.Fatalf("stored run is %s with %d journal entries, want interrupted with 3", got.Status, len(got.Journal))
	}
}
