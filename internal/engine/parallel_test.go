package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexa-run/nexa/internal/ir"
	"github.com/nexa-run/nexa/internal/state"
	"github.com/nexa-run/nexa/internal/tool"
)

// waitBound only guards against a hang: a call that waits for its siblings
// gives up after it, which fails the test; no outcome depends on it.
const waitBound = time.Minute

// barrier lets n calls through once all n have arrived: a call that
// returns from wait was running at the same time as the n-1 others. Run
// one after another, the first call would wait in vain.
type barrier struct {
	mu   sync.Mutex
	n    int
	open chan struct{}
}

func newBarrier(n int) *barrier { return &barrier{n: n, open: make(chan struct{})} }

// wait reports whether all n calls arrived within waitBound.
func (b *barrier) wait() bool {
	b.mu.Lock()
	b.n--
	if b.n == 0 {
		close(b.open)
	}
	b.mu.Unlock()
	select {
	case <-b.open:
		return true
	case <-time.After(waitBound):
		return false
	}
}

// together is an executor for calls that must overlap: each waits at the
// barrier of its call id's group and fails if its siblings never came.
func together(groups map[string]*barrier, then func(inv tool.Invocation) (tool.Outcome, error)) func(inv tool.Invocation) (tool.Outcome, error) {
	return func(inv tool.Invocation) (tool.Outcome, error) {
		if b := groups[inv.CallID]; b != nil && !b.wait() {
			return tool.Outcome{Output: "the calls beside " + inv.CallID + " never started", Success: false}, nil
		}
		if then != nil {
			return then(inv)
		}
		return tool.Outcome{Output: "ok:" + inv.CallID, Success: true}, nil
	}
}

// journalRows lists, per save, "CALL:STAGE" of the journal rows it wrote.
func journalRows(saves []state.Delta) [][]string {
	out := make([][]string, len(saves))
	for i, d := range saves {
		for _, e := range d.Journal {
			out[i] = append(out[i], e.CallID+":"+string(e.Stage))
		}
	}
	return out
}

// Three calls of one reply run at once: the started marks of all three
// are saved in one write before any tool runs (each tool sees its own
// entry started in the store), each result is saved in its own write as
// the driver takes it, whatever order they end in, and the tool messages
// go back in the order of the calls.
func TestCallsOfOneReplyRunTogetherEachWithItsOwnStages(t *testing.T) {
	h := newHarness(t, assistant(call("c1", "lookup", `{"q":"a"}`), call("c2", "lookup", `{"q":"b"}`), call("c3", "lookup", `{"q":"c"}`)), answer("done"))
	all := newBarrier(3)
	// The calls end in the order c3, c1, c2: each is let go once the
	// result of the one before it is saved.
	release := map[string]chan struct{}{"c1": make(chan struct{}), "c2": make(chan struct{}), "c3": make(chan struct{})}
	close(release["c3"])
	next := map[string]string{"c3": "c1", "c1": "c2"}
	h.store.onSave = func(d state.Delta) {
		for _, e := range d.Journal {
			if n, ok := next[e.CallID]; ok && e.Stage == state.StageCompleted {
				close(release[n])
			}
		}
	}
	h.exec.fn = func(inv tool.Invocation) (tool.Outcome, error) {
		st, err := h.store.Load(context.Background(), inv.RunID)
		if err != nil || st.Entry(inv.CallID).Stage != state.StageStarted {
			return tool.Outcome{Output: "not durably started"}, nil
		}
		if !all.wait() {
			return tool.Outcome{Output: "alone"}, nil
		}
		select {
		case <-release[inv.CallID]:
		case <-time.After(waitBound):
			return tool.Outcome{Output: "never released"}, nil
		}
		return tool.Outcome{Output: "ok:" + inv.CallID, Success: true}, nil
	}
	st := h.start(NewRun{})
	if st.Status != state.StatusCompleted {
		t.Fatalf("status %s, error %+v", st.Status, st.Error)
	}
	for _, id := range []string{"c1", "c2", "c3"} {
		if e := st.Entry(id); !e.Success || e.Result != "ok:"+id || e.Attempts != 1 {
			t.Fatalf("entry %s: %+v", id, e)
		}
	}
	want := [][]string{
		{"c1:not_started", "c2:not_started", "c3:not_started"},
		{"c1:started", "c2:started", "c3:started"},
		{"c3:completed"},
		{"c1:completed"},
		{"c2:completed"},
		nil,
	}
	if got := journalRows(h.store.saves); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("journal rows per commit:\n%v\nwant\n%v", got, want)
	}
	var order []string
	for _, m := range st.Messages {
		if m.Role == state.RoleTool {
			order = append(order, m.ToolCallID+"="+m.Content)
		}
	}
	if got := strings.Join(order, " "); got != "c1=ok:c1 c2=ok:c2 c3=ok:c3" {
		t.Fatalf("tool messages %s, want them in the order of the calls", got)
	}
	if st.Usage.ToolCalls != 3 {
		t.Fatalf("usage.tool_calls %d", st.Usage.ToolCalls)
	}
}

// withAlone adds a low-risk tool "alone" declared parallel: false to the
// harness's program and agent.
func withAlone(h *harness) {
	h.prog.Tools = append(h.prog.Tools, &ir.Tool{Name: "alone", Description: "Runs alone", Parameters: schema(`"q":{"type":"string"}`, "q"),
		Risk: "low", Timeout: 30, Exclusive: true, Body: ir.Body{Kind: ir.BodyPython}})
	h.prog.Agents[0].Tools = append(h.prog.Agents[0].Tools, "alone")
}

// A call of a parallel: false tool runs with no other call of its reply
// running: the calls before it run together and end first, the calls
// after it start once it ended, and they run together again.
func TestExclusiveToolRunsAlone(t *testing.T) {
	h := newHarness(t, assistant(call("a", "lookup", `{"q":"a"}`), call("b", "lookup", `{"q":"b"}`), call("x", "alone", `{"q":"x"}`),
		call("c", "lookup", `{"q":"c"}`), call("d", "lookup", `{"q":"d"}`)), answer("done"))
	withAlone(h)
	first, last := newBarrier(2), newBarrier(2)
	var (
		mu       sync.Mutex
		log      []string
		active   int
		xBeside  = -1
		groups   = map[string]*barrier{"a": first, "b": first, "c": last, "d": last}
		inner    = together(groups, nil)
		recorded = func(s string) { mu.Lock(); log = append(log, s); mu.Unlock() }
	)
	h.exec.fn = func(inv tool.Invocation) (tool.Outcome, error) {
		mu.Lock()
		active++
		if inv.CallID == "x" {
			xBeside = active - 1
		}
		log = append(log, inv.CallID+"+")
		mu.Unlock()
		out, err := inner(inv)
		mu.Lock()
		active--
		mu.Unlock()
		recorded(inv.CallID + "-")
		return out, err
	}
	st := h.start(NewRun{})
	if st.Status != state.StatusCompleted {
		t.Fatalf("status %s, error %+v", st.Status, st.Error)
	}
	for _, id := range []string{"a", "b", "x", "c", "d"} {
		if e := st.Entry(id); !e.Success {
			t.Fatalf("entry %s: %+v", id, e)
		}
	}
	if xBeside != 0 {
		t.Fatalf("the parallel: false call ran beside %d other call(s)", xBeside)
	}
	pos := map[string]int{}
	for i, s := range log {
		pos[s] = i
	}
	if pos["x+"] < pos["a-"] || pos["x+"] < pos["b-"] || pos["c+"] < pos["x-"] || pos["d+"] < pos["x-"] {
		t.Fatalf("order of starts (+) and ends (-): %v", log)
	}
}

// A batch that ends with an unknown outcome leaves each call its own
// stage: the unknown one started, the one that ran beside it completed
// with its result, the one that had not started yet not started. The run
// reports only the started one as unknown; once it is resolved, a resume
// runs the one that never started, and nothing runs twice.
func TestUnknownOutcomeInABatchLeavesEachCallItsOwnStage(t *testing.T) {
	h := newHarness(t, assistant(call("c1", "lookup", `{"q":"a"}`), call("c2", "lookup", `{"q":"b"}`), call("c3", "alone", `{"q":"c"}`)), answer("done"))
	withAlone(h)
	both := newBarrier(2)
	h.exec.fn = together(map[string]*barrier{"c1": both, "c2": both}, func(inv tool.Invocation) (tool.Outcome, error) {
		if inv.CallID == "c1" {
			return tool.Outcome{}, fmt.Errorf("connection lost: %w", tool.ErrUnknownOutcome)
		}
		return tool.Outcome{Output: "ok:" + inv.CallID, Success: true}, nil
	})
	st := h.start(NewRun{})
	if st.Status != state.StatusUnknownOutcome {
		t.Fatalf("status %s", st.Status)
	}
	if u := UnknownCalls(st); len(u) != 1 || u[0].CallID != "c1" {
		t.Fatalf("unknown calls %+v, want c1 only", u)
	}
	stored, err := h.store.Load(context.Background(), st.ID)
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]state.Stage{"c1": state.StageStarted, "c2": state.StageCompleted, "c3": state.StageNotStarted} {
		if got := stored.Entry(id).Stage; got != want {
			t.Fatalf("stored stage of %s is %s, want %s", id, got, want)
		}
	}
	if e := stored.Entry("c2"); e.Result != "ok:c2" || !e.Success {
		t.Fatalf("c2 lost its result: %+v", e)
	}
	h.exec.fn = nil
	_, err = h.store.Update(context.Background(), st.ID, func(s *state.RunState) (state.Delta, error) {
		return Resolve(s, "c1", "verified", true, "ops", h.now)
	})
	if err != nil {
		t.Fatal(err)
	}
	st, err = h.resume(st.ID)
	if err != nil || st.Status != state.StatusCompleted {
		t.Fatalf("resume after resolve: %v %s", err, st.Status)
	}
	h.exec.mu.Lock()
	calls := append([]string(nil), h.exec.calls...)
	h.exec.mu.Unlock()
	if len(calls) != 3 || calls[2] != "c3" {
		t.Fatalf("executions %v, want c1 and c2 once each, then c3", calls)
	}
}

// Two calls that need a person wait together; once both are approved, a
// resume runs them at the same time.
func TestApprovedCallsOfOneReplyRunTogether(t *testing.T) {
	h := newHarness(t, assistant(call("r1", "record_review", `{"content":"a"}`), call("r2", "record_review", `{"content":"b"}`)), answer("done"))
	st := h.start(NewRun{})
	if st.Status != state.StatusWaitingApproval {
		t.Fatalf("status %s", st.Status)
	}
	if ids := PendingCallIDs(st); strings.Join(ids, ",") != "r1,r2" {
		t.Fatalf("pending %v, want both", ids)
	}
	both := newBarrier(2)
	h.exec.fn = together(map[string]*barrier{"r1": both, "r2": both}, nil)
	st, err := h.resume(st.ID, Decision{CallID: "r1", Approve: true}, Decision{CallID: "r2", Approve: true})
	if err != nil || st.Status != state.StatusCompleted {
		t.Fatalf("resume: %v %s", err, st.Status)
	}
	for _, id := range []string{"r1", "r2"} {
		if e := st.Entry(id); !e.Success || e.Result != "ok:"+id {
			t.Fatalf("entry %s: %+v", id, e)
		}
	}
}

// A stop request while calls run lets them finish and keeps their
// results; the calls not yet started stay not started, and the run is
// interrupted (resumable).
func TestStopDuringABatchLetsRunningCallsFinish(t *testing.T) {
	h := newHarness(t, assistant(call("c1", "lookup", `{"q":"a"}`), call("c2", "lookup", `{"q":"b"}`), call("c3", "lookup", `{"q":"c"}`)), answer("done"))
	h.parallel = 2
	h.stop = make(chan struct{})
	var once sync.Once
	both := newBarrier(2)
	h.exec.fn = together(map[string]*barrier{"c1": both, "c2": both}, func(inv tool.Invocation) (tool.Outcome, error) {
		once.Do(func() { close(h.stop) })
		return tool.Outcome{Output: "ok:" + inv.CallID, Success: true}, nil
	})
	st := h.start(NewRun{})
	if st.Status != state.StatusInterrupted {
		t.Fatalf("status %s", st.Status)
	}
	stored, err := h.store.Load(context.Background(), st.ID)
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]state.Stage{"c1": state.StageCompleted, "c2": state.StageCompleted, "c3": state.StageNotStarted} {
		if got := stored.Entry(id).Stage; got != want {
			t.Fatalf("stored stage of %s is %s, want %s", id, got, want)
		}
	}
	if !stored.Entry("c1").Success || !stored.Entry("c2").Success {
		t.Fatalf("c1 and c2 did not run together: %+v", stored.Journal)
	}
	h.stop = nil
	h.exec.fn = nil
	st, err = h.resume(st.ID)
	if err != nil || st.Status != state.StatusCompleted || len(h.exec.calls) != 3 {
		t.Fatalf("resume: %v %s, executions %v", err, st.Status, h.exec.calls)
	}
}

// --max-tool-calls counts calls as they start: of three calls that could
// run together under a budget of two, two run and the third is not
// executed.
func TestToolCallBudgetHoldsForCallsStartedTogether(t *testing.T) {
	h := newHarness(t, assistant(call("c1", "lookup", `{"q":"a"}`), call("c2", "lookup", `{"q":"b"}`), call("c3", "lookup", `{"q":"c"}`)), answer("done"))
	both := newBarrier(2)
	h.exec.fn = together(map[string]*barrier{"c1": both, "c2": both}, nil)
	st := h.start(NewRun{Budgets: state.Budgets{MaxToolCalls: 2}})
	if st.Status != state.StatusBudgetExhausted || !strings.Contains(st.Error.Message, "call c3 was not executed") {
		t.Fatalf("status %s, error %+v", st.Status, st.Error)
	}
	if st.Usage.ToolCalls != 2 || st.Entry("c3").Stage != state.StageNotStarted || !st.Entry("c1").Success || !st.Entry("c2").Success {
		t.Fatalf("usage %+v, journal %+v", st.Usage, st.Journal)
	}
}

// bufLog is a tool log with no lock of its own: calls that write to it at
// once race unless the runner serializes their writes.
type bufLog struct{ strings.Builder }

func (*bufLog) Close() error { return nil }

// Calls running at once print to the run's one tool log; each line
// arrives whole, even one a tool printed in several writes (an unbuffered
// interpreter writes a print's text and its newline apart), and a last
// line without a newline arrives, ended, when its call ends.
func TestCallsRunningTogetherShareTheToolLog(t *testing.T) {
	h := newHarness(t, assistant(call("c1", "lookup", `{"q":"a"}`), call("c2", "lookup", `{"q":"b"}`), call("c3", "lookup", `{"q":"c"}`)), answer("done"))
	log := &bufLog{}
	h.log = log
	all := newBarrier(3)
	h.exec.fn = together(map[string]*barrier{"c1": all, "c2": all, "c3": all}, func(inv tool.Invocation) (tool.Outcome, error) {
		for i := 0; i < 199; i++ {
			fmt.Fprintf(inv.Log, "%s line", inv.CallID)
			fmt.Fprintf(inv.Log, " %d", i)
			fmt.Fprint(inv.Log, "\n")
		}
		fmt.Fprintf(inv.Log, "%s line 199", inv.CallID)
		return tool.Outcome{Output: "ok", Success: true}, nil
	})
	st := h.start(NewRun{})
	if st.Status != state.StatusCompleted {
		t.Fatalf("status %s", st.Status)
	}
	lines := strings.Split(strings.TrimSuffix(log.String(), "\n"), "\n")
	if len(lines) != 600 {
		t.Fatalf("the log has %d lines, want 600", len(lines))
	}
	for _, l := range lines {
		var id string
		var n int
		if _, err := fmt.Sscanf(l, "%s line %d", &id, &n); err != nil {
			t.Fatalf("a mixed line in the log: %q", l)
		}
	}
}

// The request tells the server whether the calls of one reply may run at
// once (OpenAI's parallel_tool_calls): yes by default, no with
// --max-parallel-tools 1.
func TestRequestSaysWhetherCallsRunTogether(t *testing.T) {
	for _, tc := range []struct {
		parallel int
		want     bool
	}{{0, true}, {4, true}, {1, false}} {
		h := newHarness(t, answer("done"))
		h.parallel = tc.parallel
		h.start(NewRun{})
		if h.prov.last.ParallelToolCalls != tc.want || len(h.prov.last.Tools) == 0 {
			t.Errorf("max parallel %d: ParallelToolCalls %v, want %v", tc.parallel, h.prov.last.ParallelToolCalls, tc.want)
		}
	}
}

// A bound above the most calls of a reply that execute is refused.
func TestMaxParallelToolsAboveTheLimitIsRefused(t *testing.T) {
	prog := testProgram()
	_, err := NewRunner(Config{Program: prog, Agent: prog.Agents[0], Store: newMemStore(), Provider: &turnsProvider{}, MaxParallelTools: MaxCallsPerReply + 1})
	var re *Error
	if !errors.As(err, &re) || re.Code != CodeUsage {
		t.Fatalf("err %v, want a usage error", err)
	}
}
