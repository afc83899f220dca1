package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nexa-run/nexa/internal/engine"
	"github.com/nexa-run/nexa/internal/runevents"
	"github.com/nexa-run/nexa/internal/schemacheck"
	"github.com/nexa-run/nexa/internal/state"
	"github.com/nexa-run/nexa/internal/store/sqlite"
)

// driven is a run held by a fake driver, in a store of its own, whose
// steps a test applies between the watcher's polls.
type driven struct {
	t   *testing.T
	s   *sqlite.SQLite
	st  *state.RunState
	now time.Time
}

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func newDriven(t *testing.T) *driven {
	t.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "runs.sqlite3"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	st := &state.RunState{
		ID: "run_01JD7AAAAAAAAAAAAAAAAAAAAA", Status: state.StatusRunning, CreatedAt: t0, UpdatedAt: t0,
		Config:   state.Config{SourceFile: "w.nx", Agent: "W"},
		Task:     "ship it",
		Messages: []state.Message{{Seq: 0, Role: state.RoleUser, Content: "ship it"}},
		Lease:    &state.Lease{Owner: "driver", TTL: time.Hour},
	}
	if err := s.Create(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	return &driven{t: t, s: s, st: st, now: t0}
}

func (d *driven) tick() time.Time { d.now = d.now.Add(time.Second); return d.now }

func (d *driven) save(delta state.Delta) {
	d.t.Helper()
	if err := d.s.Save(context.Background(), d.st, delta); err != nil {
		d.t.Fatal(err)
	}
}

// reply saves a model reply asking for calls (none: the final answer).
func (d *driven) reply(calls ...state.JournalEntry) {
	turn := d.st.Usage.ProviderRequests + 1
	at := d.tick()
	u := state.Usage{ProviderRequests: 1, TotalTokens: 10}
	d.st.Usage.Add(u)
	it := state.ProviderItem{Seq: len(d.st.ProviderItems), Raw: json.RawMessage(`{}`), Usage: u, CreatedAt: at}
	d.st.ProviderItems = append(d.st.ProviderItems, it)
	m := state.Message{Seq: len(d.st.Messages), Role: state.RoleAssistant, Content: "Done."}
	var entries []state.JournalEntry
	for _, c := range calls {
		c.Seq, c.Turn, c.Stage, c.CreatedAt = len(d.st.Journal), turn, state.StageNotStarted, at
		c.Arguments = json.RawMessage(`{}`)
		m.ToolCalls = append(m.ToolCalls, state.ToolCall{ID: c.CallID, Name: c.Tool, Arguments: "{}"})
		d.st.Journal = append(d.st.Journal, c)
		entries = append(entries, c)
	}
	d.st.Messages = append(d.st.Messages, m)
	d.save(state.Delta{ProviderItems: []state.ProviderItem{it}, Messages: []state.Message{m}, Journal: entries})
}

// change changes call id's entry and saves it.
func (d *driven) change(id string, fn func(e *state.JournalEntry, at time.Time)) {
	e := d.st.Entry(id)
	fn(e, d.tick())
	d.save(state.Delta{Journal: []state.JournalEntry{*e}})
}

func decide(ok bool, by string) func(*state.JournalEntry, time.Time) {
	return func(e *state.JournalEntry, at time.Time) { e.Decision, e.DecidedBy, e.DecidedAt = &ok, by, &at }
}

func start(e *state.JournalEntry, at time.Time) { e.Stage, e.StartedAt = state.StageStarted, &at }

func complete(outcome string, ok bool) func(*state.JournalEntry, time.Time) {
	return func(e *state.JournalEntry, at time.Time) {
		e.Stage, e.Outcome, e.Success, e.CompletedAt, e.Result = state.StageCompleted, outcome, ok, &at, "r"
		if e.StartedAt == nil && outcome == "executed" {
			s := at.Add(-1500 * time.Millisecond)
			e.StartedAt = &s
		}
	}
}

// stop saves the run's last status and gives its lease up, as a driver
// ends.
func (d *driven) stop(s state.Status) {
	d.t.Helper()
	d.st.Status = s
	if s == state.StatusCompleted {
		d.st.Output = json.RawMessage(`"Done."`)
	}
	d.tick()
	d.save(state.Delta{})
	if err := d.s.Release(context.Background(), d.st.ID, d.st.Lease); err != nil {
		d.t.Fatal(err)
	}
}

// watch runs a watcher of d's run whose polls apply steps one by one; when
// they run out the watch is ended as by Ctrl-C.
func (d *driven) watch(jsonl bool, steps ...func()) (string, int, error) {
	var out, errw bytes.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &watcher{
		store: d.s, id: d.st.ID, out: &out, errw: &errw, getenv: func(string) string { return "" }, jsonl: jsonl,
		hints: func(*state.RunState) string { return "" },
		now:   func() time.Time { return d.now },
		next: func(ctx context.Context) error {
			if len(steps) == 0 {
				cancel()
				return ctx.Err()
			}
			steps[0]()
			steps = steps[1:]
			return nil
		},
	}
	code, err := w.run(ctx)
	return out.String() + errw.String(), code, err
}

// events parses a jsonl watch: the events' summaries and the final object.
// Every event must match the schema docs/reference/events.md gives its type,
// as the lines of nexa agent --output jsonl do.
func events(t *testing.T, out string) ([]string, map[string]any) {
	t.Helper()
	schemas := eventSchemas(t)
	var got []string
	var last map[string]any
	for i, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var v map[string]any
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("line %d is not JSON: %v\n%s", i+1, err, out)
		}
		if _, ok := v["type"]; !ok {
			last = v
			continue
		}
		if v["seq"] != float64(len(got)+1) || v["run_id"] == nil || v["time"] == nil {
			t.Fatalf("event %d lacks seq, run_id or time: %s", len(got)+1, l)
		}
		s := v["type"].(string)
		if sc := schemas[s]; sc == nil {
			t.Fatalf("event %d has type %q, which events.md does not document: %s", len(got)+1, s, l)
		} else if ps := sc.Validate(schemaValue(t, l)); len(ps) > 0 {
			t.Fatalf("event %d does not match the schema of %s: %s\n%s", len(got)+1, s, schemacheck.Explain(ps, 5), l)
		}
		for _, k := range []string{"call_id", "outcome", "decision", "decided_by", "status"} {
			if x, ok := v[k]; ok {
				s += fmt.Sprintf(" %s=%v", k, x)
			}
		}
		got = append(got, s)
	}
	return got, last
}

// schemaValue decodes a line as the schema checker reads JSON.
func schemaValue(t *testing.T, line string) any {
	t.Helper()
	v, err := schemacheck.Decode([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestWatchFollowsEachStepAndExitsWithTheRunsCode(t *testing.T) {
	d := newDriven(t)
	out, code, err := d.watch(true,
		func() { d.reply(state.JournalEntry{CallID: "c1", Tool: "deploy", NeedsApproval: true}) },
		func() {}, // a poll that finds nothing new prints nothing
		func() { d.change("c1", decide(true, "ana")) },
		func() { d.change("c1", start) },
		func() { d.change("c1", complete("executed", true)) },
		func() { d.reply(); d.stop(state.StatusCompleted) },
	)
	if err != nil || code != ExitOK {
		t.Fatalf("watch: code %d, err %v\n%s", code, err, out)
	}
	got, last := events(t, out)
	want := []string{
		"model.reply", "call.pending call_id=c1", "call.decided call_id=c1 decision=approved decided_by=ana",
		"tool.started call_id=c1", "tool.completed call_id=c1 outcome=ok",
		"model.reply", "run.finished status=completed",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if last["status"] != "completed" || last["output"] != "Done." {
		t.Fatalf("final object %v", last)
	}
}

func TestWatchPrintsStepsThatHappenedBetweenPollsInOrder(t *testing.T) {
	d := newDriven(t)
	// Many calls complete between two polls: more than one tail read
	// holds, so the watch reads the whole run rather than skip any.
	var calls []state.JournalEntry
	for i := range runevents.Window + 6 {
		calls = append(calls, state.JournalEntry{CallID: fmt.Sprintf("c%03d", i), Tool: "t"})
	}
	out, code, err := d.watch(true, func() {
		d.reply(calls...)
		for _, c := range calls {
			d.change(c.CallID, start)
			d.change(c.CallID, complete("executed", false))
		}
		d.reply()
		d.stop(state.StatusCompleted)
	})
	if err != nil || code != ExitOK {
		t.Fatalf("watch: code %d, err %v", code, err)
	}
	got, _ := events(t, out)
	if len(got) != 2+2*len(calls)+1 || got[0] != "model.reply" || got[1] != "tool.started call_id=c000" ||
		got[2] != "tool.completed call_id=c000 outcome=error" || got[len(got)-2] != "model.reply" {
		t.Fatalf("%d events, want %d:\n%s", len(got), 2+2*len(calls)+1, strings.Join(got, "\n"))
	}
}

func TestWatchStopsWithTheCodeOfEachStop(t *testing.T) {
	for _, c := range []struct {
		status state.Status
		code   int
	}{
		{state.StatusWaitingApproval, ExitWaitingApproval},
		{state.StatusUnknownOutcome, ExitUnknownOutcome},
		{state.StatusFailed, ExitFailed},
		{state.StatusTimedOut, ExitTimedOut},
		{state.StatusBudgetExhausted, ExitBudgetExhausted},
		{state.StatusInterrupted, ExitInterrupted},
	} {
		t.Run(string(c.status), func(t *testing.T) {
			d := newDriven(t)
			out, code, err := d.watch(false, func() { d.stop(c.status) })
			if err != nil || code != c.code {
				t.Fatalf("code %d err %v, want %d\n%s", code, err, c.code, out)
			}
			if !strings.Contains(out, "run "+d.st.ID+": "+string(c.status)) {
				t.Fatalf("no final line:\n%s", out)
			}
		})
	}
}

func TestWatchReportsACallWhoseOutcomeIsUnknown(t *testing.T) {
	d := newDriven(t)
	out, code, err := d.watch(true,
		func() { d.reply(state.JournalEntry{CallID: "c1", Tool: "pay"}); d.change("c1", start) },
		func() { d.stop(state.StatusUnknownOutcome) },
	)
	if err != nil || code != ExitUnknownOutcome {
		t.Fatalf("code %d err %v\n%s", code, err, out)
	}
	got, last := events(t, out)
	if want := "model.reply|tool.started call_id=c1|tool.completed call_id=c1 outcome=unknown|run.finished status=unknown_outcome"; strings.Join(got, "|") != want {
		t.Fatalf("events %q, want %q", strings.Join(got, "|"), want)
	}
	if uc, _ := last["unknown_calls"].([]any); len(uc) != 1 {
		t.Fatalf("final object's unknown_calls: %v", last["unknown_calls"])
	}
}

func TestWatchOfAStoppedRunPrintsItAtOnce(t *testing.T) {
	d := newDriven(t)
	d.reply(state.JournalEntry{CallID: "c1", Tool: "deploy", NeedsApproval: true})
	d.stop(state.StatusWaitingApproval)
	polled := false
	out, code, err := d.watch(false, func() { polled = true })
	if err != nil || code != ExitWaitingApproval || polled {
		t.Fatalf("code %d err %v polled %v", code, err, polled)
	}
	for _, want := range []string{"run " + d.st.ID + ": waiting_approval", "pending: c1 deploy", "wait for your decision"} {
		if !strings.Contains(out, want) {
			t.Fatalf("no %q in:\n%s", want, out)
		}
	}
}

func TestWatchEndedBySignalLeavesTheRunAlone(t *testing.T) {
	d := newDriven(t)
	out, _, err := d.watch(false, func() {})
	var xe *exitError
	if !errors.As(err, &xe) || xe.code != ExitInterrupted {
		t.Fatalf("err %v, want exit 130\n%s", err, out)
	}
	if !strings.Contains(out, "watching run "+d.st.ID) || !strings.Contains(out, "stopped watching") {
		t.Fatalf("output:\n%s", out)
	}
	st, err := engine.Show(context.Background(), d.s, d.st.ID)
	if err != nil || st.Status != state.StatusRunning || st.Revision != d.st.Revision {
		t.Fatalf("run after the watch: %v %+v", err, st)
	}
}

func TestWatchOfARunNobodyDrivesExits1(t *testing.T) {
	d := newDriven(t)
	out, code, err := d.watch(true, func() {
		// The driver dies: its lease is gone, its status still running.
		if err := d.s.Release(context.Background(), d.st.ID, d.st.Lease); err != nil {
			t.Fatal(err)
		}
	})
	if err != nil || code != ExitFailed {
		t.Fatalf("code %d err %v\n%s", code, err, out)
	}
	got, last := events(t, out)
	if len(got) != 1 || got[0] != "run.finished status=running" {
		t.Fatalf("events %v", got)
	}
	if e, _ := last["error"].(map[string]any); e == nil || !strings.Contains(e["message"].(string), "no process drives it") {
		t.Fatalf("final object's error: %v", last["error"])
	}
}

func TestWatchOfAMissingRunIsRunNotFound(t *testing.T) {
	d := newDriven(t)
	d.st.ID = "run_01JD7BBBBBBBBBBBBBBBBBBBBB"
	_, _, err := d.watch(false)
	var xe *exitError
	if !errors.As(err, &xe) || xe.code != ExitUsage || xe.errCode != engine.CodeRunNotFound {
		t.Fatalf("err %#v, want exit 2 run_not_found", err)
	}
}
