package mcptool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nexa-run/nexa/internal/ir"
	"github.com/nexa-run/nexa/internal/tool"
)

// Calls of one reply running at once go to one MCP session (the runtime
// calls the Manager from several goroutines): each call is in flight at the
// same time as the others (the server's gather tool answers only once all
// of them arrived), each gets its own answer and its own idempotency key,
// and a call that fails or is cut by its timeout does not disturb the
// others. Over stdio and Streamable HTTP; run under -race.
func TestCallsRunningAtOnce(t *testing.T) {
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			opts, _ := testOptions(t)
			spec := stdioSpec(t, "base")
			if transport == "http" {
				spec = startHTTPTestServer(t, "base").URL
			}
			m := NewManager(opts)
			t.Cleanup(func() { _ = m.Close() })
			if err := m.Connect(context.Background(), spec); err != nil {
				t.Fatal(err)
			}
			toolOf := func(name string) *ir.Tool {
				for _, ct := range m.Tools() {
					if ct.Name == name {
						return ct
					}
				}
				t.Fatalf("no tool %s", name)
				return nil
			}
			const n = 5
			type answer struct {
				out tool.Outcome
				err error
			}
			gathered := make([]answer, n)
			var failed, metaOut, slow answer
			var wg sync.WaitGroup
			call := func(dst *answer, name, callID string, args any, timeout time.Duration) {
				wg.Add(1)
				go func() {
					defer wg.Done()
					raw, _ := json.Marshal(args)
					out, err := m.Execute(context.Background(), tool.Invocation{RunID: "run1", CallID: callID, Tool: toolOf(name),
						Arguments: raw, Timeout: timeout})
					*dst = answer{out, err}
				}()
			}
			for i := 0; i < n; i++ {
				call(&gathered[i], "gather", fmt.Sprint("g", i), map[string]any{"group": "batch", "n": n, "id": fmt.Sprint("g", i)}, time.Minute)
			}
			call(&failed, "fail_tool", "f1", map[string]any{}, time.Minute)
			call(&metaOut, "echo_meta", "m1", map[string]any{}, time.Minute)
			// Cut by its own timeout while the others run: unknown. (It sleeps
			// 5 s, not more: an HTTP test server closing waits for it.)
			call(&slow, "slow_tool", "s1", map[string]any{"ms": 5000}, 200*time.Millisecond)
			wg.Wait()
			for i, a := range gathered {
				if want := fmt.Sprintf("g%d gathered", i); a.err != nil || !a.out.Success || a.out.Output != want {
					t.Errorf("gather %d: %+v, %v, want %q", i, a.out, a.err, want)
				}
			}
			if failed.err != nil || failed.out.Success || failed.out.Output != "boom: it failed" {
				t.Errorf("fail_tool: %+v, %v", failed.out, failed.err)
			}
			if metaOut.err != nil || metaOut.out.Output != "run1:m1" {
				t.Errorf("echo_meta: %+v, %v, want its own idempotency key", metaOut.out, metaOut.err)
			}
			if !errors.Is(slow.err, tool.ErrUnknownOutcome) {
				t.Errorf("slow_tool cut by its timeout: %+v, %v, want an unknown outcome", slow.out, slow.err)
			}
		})
	}
}
