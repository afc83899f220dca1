package pytool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/nexa-run/nexa/internal/sandbox"
	"github.com/nexa-run/nexa/internal/tool"
)

// siblingsBody is a tool body that marks its start in the working
// directory, waits (bounded) until all n calls have marked theirs, prints
// a line to the log, and then ends as its argument asks: "ok" returns the
// call's own argument and id, "error" raises, "unknown" raises
// ToolOutcomeUnknown. A call that returns was running at the same time as
// every other call of the batch.
const siblingsBody = `
open("start-" + x, "w").write("1")
for _ in range(6000):
    if len([f for f in os.listdir(".") if f.startswith("start-")]) >= n:
        break
    time.sleep(0.01)
else:
    raise RuntimeError(x + " ran without its siblings")
print("log of", x)
if end == "error":
    raise ValueError("failed " + x)
if end == "unknown":
    raise ToolOutcomeUnknown("cannot tell for " + x)
return [x, os.environ["NEXA_CALL_ID"]]
`

// concurrentCalls runs n calls of one tool at once on ex, with a mix of
// endings, and checks that each call got its own arguments, environment,
// outcome and log lines (the engine joins the calls' logs line by line).
func concurrentCalls(t *testing.T, ex *Executor, sandboxed bool) {
	t.Helper()
	decl := bodyTool("sib", siblingsBody, "x", "end", `n:{"type":"integer"}`)
	decl.Sandbox = sandboxed
	dir := t.TempDir()
	ends := []string{"ok", "error", "ok", "unknown", "ok", "ok"}
	n := len(ends)
	logs := make([]*syncBuffer, n)
	for i := range logs {
		logs[i] = &syncBuffer{}
	}
	type answer struct {
		out tool.Outcome
		err error
	}
	answers := make([]answer, n)
	var wg sync.WaitGroup
	for i, end := range ends {
		wg.Add(1)
		go func() {
			defer wg.Done()
			args, _ := json.Marshal(map[string]any{"x": fmt.Sprint("a", i), "end": end, "n": n})
			out, err := ex.Execute(context.Background(), tool.Invocation{RunID: "run-1", CallID: fmt.Sprint("call-", i), Tool: decl,
				Arguments: args, WorkDir: dir, Timeout: hangCap, Log: logs[i]})
			answers[i] = answer{out, err}
		}()
	}
	wg.Wait()
	for i, end := range ends {
		a, x := answers[i], fmt.Sprint("a", i)
		switch end {
		case "ok":
			if a.err != nil || !a.out.Success || a.out.Sandboxed != sandboxed {
				t.Fatalf("call %d: %+v, %v (log %q)", i, a.out, a.err, logs[i].String())
			}
			var v []string
			if err := json.Unmarshal([]byte(a.out.Output), &v); err != nil || len(v) != 2 || v[0] != x || v[1] != fmt.Sprint("call-", i) {
				t.Fatalf("call %d answered %q, want its own argument and call id", i, a.out.Output)
			}
		case "error":
			if a.err != nil || a.out.Success || !strings.Contains(a.out.Output, "failed "+x) {
				t.Fatalf("call %d: %+v, %v, want its own error", i, a.out, a.err)
			}
		case "unknown":
			if !errors.Is(a.err, tool.ErrUnknownOutcome) || !strings.Contains(a.err.Error(), "cannot tell for "+x) {
				t.Fatalf("call %d: %+v, %v, want its own unknown outcome", i, a.out, a.err)
			}
		}
	}
	for i := range ends {
		if want := fmt.Sprint("log of a", i); !strings.Contains(logs[i].String(), want+"\n") {
			t.Fatalf("the log of call %d lacks %q: %q", i, want, logs[i].String())
		}
		for j := range ends {
			if j != i && strings.Contains(logs[i].String(), fmt.Sprint("log of a", j)+"\n") {
				t.Fatalf("the log of call %d holds a line of call %d: %q", i, j, logs[i].String())
			}
		}
	}
}

// Calls of one reply run at once on one executor, as the runtime makes
// them (--max-parallel-tools): warm (forked by one zygote), cold (one
// interpreter each) and sandboxed calls each keep their own arguments,
// environment, outcome and log lines. Run under -race.
func TestCallsRunningAtOnce(t *testing.T) {
	requirePython(t)
	t.Run("warm", func(t *testing.T) { concurrentCalls(t, newExec(t, false, Options{}), false) })
	t.Run("cold", func(t *testing.T) { concurrentCalls(t, newExec(t, true, Options{}), false) })
	t.Run("sandboxed", func(t *testing.T) {
		if _, err := exec.LookPath(sandbox.DefaultBinary); err != nil {
			t.Skipf("bwrap not in PATH (%v): sandboxed calls need bubblewrap (apt-get install bubblewrap)", err)
		}
		// A detector of its own, so the concurrent first calls are the
		// ones that run its self-test.
		var (
			once sync.Once
			bw   *sandbox.Bwrap
			err  error
		)
		ex := newExec(t, false, Options{Sandbox: func() (*sandbox.Bwrap, error) {
			once.Do(func() { bw, err = sandbox.Probe(sandbox.DefaultBinary) })
			return bw, err
		}})
		if err := sandbox.Available(); err != nil {
			t.Fatalf("bwrap is installed but unusable here: %v", err)
		}
		concurrentCalls(t, ex, true)
	})
}
