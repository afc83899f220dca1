package native

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/nexa-run/nexa/internal/tool"
)

// lockedLog is one log shared by calls running at once, as the runtime's
// tool log is.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// Calls of one native tool running at once share its lowered body (one
// *ir.Tool) and one executor, and each computes with its own variables.
// Run under -race.
func TestCallsRunningAtOnce(t *testing.T) {
	decl := nativeTool(`{"type":"object","properties":{"x":{"type":"string"}},"required":["x"],"additionalProperties":false}`,
		set("y", interp("<", name("x"), ">"), 1),
		prt(name("y"), 2),
		set("y", interp(name("y"), name("y")), 3),
		ret(name("y"), 4))
	ex := New()
	log := &lockedLog{}
	const n = 16
	outs := make([]tool.Outcome, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], errs[i] = ex.Execute(context.Background(), tool.Invocation{RunID: "r", CallID: fmt.Sprint("c", i), Tool: decl,
				Arguments: []byte(fmt.Sprintf(`{"x":"v%d"}`, i)), Log: log})
		}()
	}
	wg.Wait()
	for i := 0; i < n; i++ {
		if want := fmt.Sprintf("<v%d><v%d>", i, i); errs[i] != nil || !outs[i].Success || outs[i].Output != want {
			t.Fatalf("call %d: %+v, %v, want %q", i, outs[i], errs[i], want)
		}
	}
	if got := strings.Count(log.b.String(), "\n"); got != n {
		t.Fatalf("the log has %d lines, want %d: %q", got, n, log.b.String())
	}
}
