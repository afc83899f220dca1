package runevents

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nexa-run/nexa/internal/schemacheck"
	"github.com/nexa-run/nexa/internal/state"
)

// schemas reads the JSON Schema of every event type out of
// docs/reference/events.md: the first json block under each "## `TYPE`".
func schemas(t *testing.T) map[string]*schemacheck.Schema {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "reference", "events.md"))
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("(?s)\n## `([a-z._]+)`\n.*?```json\n(.*?)```")
	out := map[string]*schemacheck.Schema{}
	for _, m := range re.FindAllStringSubmatch(string(b), -1) {
		s, err := schemacheck.Compile([]byte(m[2]))
		if err != nil {
			t.Fatalf("schema of %s: %v", m[1], err)
		}
		out[m[1]] = s
	}
	return out
}

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func at(s int) *time.Time { v := t0.Add(time.Duration(s) * time.Second); return &v }

// TestFollowerDerivesTheStreamsEvents takes a run through every way a call
// can end, reading it between steps as runs watch and the webhooks do, and
// checks the events in order, their fields, and each line (with a
// webhook's url on the types webhooks post) against the schema events.md
// gives its type.
func TestFollowerDerivesTheStreamsEvents(t *testing.T) {
	yes, no := true, false
	st := &state.RunState{ID: "run_01JD7AAAAAAAAAAAAAAAAAAAAA", Status: state.StatusRunning, UpdatedAt: t0}
	f := FromStart(strings.NewReplacer("sk-secret", "[REDACTED]").Replace)
	var got []Event
	read := func(change func()) {
		change()
		got = append(got, f.Next(st, state.Omitted{})...)
	}
	entry := func(id string, turn int, s int) state.JournalEntry {
		return state.JournalEntry{CallID: id, Tool: "t_" + id, Turn: turn, Seq: len(st.Journal), Arguments: json.RawMessage(`{"key":"sk-secret"}`),
			Stage: state.StageNotStarted, CreatedAt: *at(s)}
	}
	// One reply asks for five calls; a policy rule approves c1 when it is
	// journaled, c2..c4 wait for a person, c5 is refused by the checks.
	read(func() {
		st.ProviderItems = append(st.ProviderItems, state.ProviderItem{Seq: 0, Usage: state.Usage{InputTokens: 3, OutputTokens: 4, TotalTokens: 7, ProviderRequests: 1}, CreatedAt: *at(1)})
		c1 := entry("c1", 1, 1)
		c1.NeedsApproval, c1.Decision, c1.DecidedBy, c1.DecidedAt = true, &yes, "policy:reads", at(1)
		c2, c3, c4 := entry("c2", 1, 1), entry("c3", 1, 1), entry("c4", 1, 1)
		c2.NeedsApproval, c3.NeedsApproval, c4.NeedsApproval = true, true, true
		c4.ExpiresAt = at(9)
		c5 := entry("c5", 1, 1)
		c5.Stage, c5.Outcome, c5.CompletedAt = state.StageCompleted, "refused", at(1)
		st.Journal = []state.JournalEntry{c1, c2, c3, c4, c5}
	})
	// c1 runs; between two reads it completes, and a person approves c2
	// and denies c3.
	read(func() { st.Journal[0].Stage, st.Journal[0].StartedAt = state.StageStarted, at(2) })
	read(func() {
		e := &st.Journal[0]
		e.Stage, e.Outcome, e.Success, e.CompletedAt = state.StageCompleted, "executed", true, at(4)
		st.Journal[1].Decision, st.Journal[1].DecidedBy, st.Journal[1].DecidedAt = &yes, "ana", at(3)
		d := &st.Journal[2]
		d.Decision, d.DecidedBy, d.DecidedAt, d.Reason = &no, "ana", at(3), "no sk-secret"
	})
	// c3 is denied, c4's wait expires, c2 starts and the run stops:
	// nobody knows what c2 did.
	read(func() {
		d := &st.Journal[2]
		d.Stage, d.Outcome, d.CompletedAt = state.StageCompleted, "denied", at(5)
		e := &st.Journal[3]
		e.Stage, e.Outcome, e.CompletedAt = state.StageCompleted, "expired", at(9)
		st.Journal[1].Stage, st.Journal[1].StartedAt = state.StageStarted, at(6)
	})
	st.Status, st.UpdatedAt = state.StatusUnknownOutcome, *at(10)
	got = append(got, f.Finish(st)...)
	// Read again after the stop: nothing is news twice.
	if again := f.Next(st, state.Omitted{}); len(again) != 0 {
		t.Fatalf("a second read derived %v", again)
	}

	var lines []string
	sc := schemas(t)
	for i, ev := range got {
		ev.Seq = i + 1
		if ev.Type != ModelReply && ev.Type != ToolStarted {
			ev.URL = "http://127.0.0.1:8080/runs/" + ev.RunID // as a webhook
		}
		b, err := Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		v, err := schemacheck.Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		if ps := sc[ev.Type].Validate(v); len(ps) > 0 {
			t.Errorf("%s does not match its schema: %s", b, schemacheck.Explain(ps, 5))
		}
		if strings.Contains(string(b), "sk-secret") {
			t.Errorf("a secret in %s", b)
		}
		s := ev.Type + " " + ev.Time[11:19]
		for _, kv := range [][2]string{{"call", ev.CallID}, {"decision", ev.Decision}, {"by", ev.DecidedBy}, {"outcome", ev.Outcome}, {"status", ev.Status}} {
			if kv[1] != "" {
				s += " " + kv[0] + "=" + kv[1]
			}
		}
		if ev.DurationMS != nil {
			s += fmt.Sprintf(" ms=%d", *ev.DurationMS)
		}
		if ev.ToolCalls != nil {
			s += fmt.Sprintf(" calls=%d tokens=%d", *ev.ToolCalls, ev.Usage.TotalTokens)
		}
		lines = append(lines, s)
	}
	want := []string{
		"model.reply 03:04:06 calls=5 tokens=7",
		"call.decided 03:04:06 call=c1 decision=approved by=policy:reads",
		"call.pending 03:04:06 call=c2",
		"call.pending 03:04:06 call=c3",
		"call.pending 03:04:06 call=c4",
		"tool.completed 03:04:06 call=c5 outcome=error ms=0",
		"tool.started 03:04:07 call=c1",
		"call.decided 03:04:08 call=c2 decision=approved by=ana",
		"call.decided 03:04:08 call=c3 decision=denied by=ana",
		"tool.completed 03:04:09 call=c1 outcome=ok ms=2000",
		"tool.completed 03:04:10 call=c3 outcome=denied ms=0",
		"tool.started 03:04:11 call=c2",
		"call.decided 03:04:14 call=c4 decision=expired",
		"tool.completed 03:04:15 call=c2 outcome=unknown",
		"run.finished 03:04:15 status=unknown_outcome",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	if got[3].Reason != "" || got[8].Reason != "no [REDACTED]" || string(got[2].Arguments) != `{"key":"[REDACTED]"}` || got[4].ExpiresAt != "2026-01-02T03:04:14.000Z" {
		t.Fatalf("fields: %+v %+v %+v", got[8], got[2], got[4])
	}
}

// TestBeginReportsOnlyWhatIsUnderWay: a follow that begins mid-run reports
// the calls waiting and running, not the run's history, and then only new
// steps.
func TestBeginReportsOnlyWhatIsUnderWay(t *testing.T) {
	st := &state.RunState{ID: "run_01JD7AAAAAAAAAAAAAAAAAAAAA", Status: state.StatusRunning, Usage: state.Usage{ProviderRequests: 1},
		ProviderItems: []state.ProviderItem{{Seq: 0, CreatedAt: t0}},
		Journal: []state.JournalEntry{
			{CallID: "old", Tool: "t", Turn: 1, Stage: state.StageCompleted, Outcome: "executed", Success: true, CreatedAt: t0, CompletedAt: at(1)},
			{CallID: "wait", Tool: "t", Turn: 1, Seq: 1, NeedsApproval: true, Stage: state.StageNotStarted, CreatedAt: t0},
			{CallID: "run", Tool: "t", Turn: 1, Seq: 2, Stage: state.StageStarted, CreatedAt: t0, StartedAt: at(2)},
		}}
	f, evs := Begin(st, state.Omitted{}, nil)
	if len(evs) != 2 || evs[0].Type != CallPending || evs[0].CallID != "wait" || evs[1].Type != ToolStarted || evs[1].CallID != "run" {
		t.Fatalf("begin: %+v", evs)
	}
	st.Journal[2].Stage, st.Journal[2].Outcome, st.Journal[2].CompletedAt = state.StageCompleted, "executed", at(3)
	evs = f.Next(st, state.Omitted{})
	if len(evs) != 1 || evs[0].Type != ToolCompleted || evs[0].CallID != "run" || *evs[0].DurationMS != 1000 {
		t.Fatalf("next: %+v", evs)
	}
}

// TestMarshalIsOneCompactLine: a webhook's body and a stream's line are the
// same bytes: no newline, no HTML escapes.
func TestMarshalIsOneCompactLine(t *testing.T) {
	b, err := Marshal(Event{Type: CallDecided, RunID: "run_1", Seq: 1, Time: Stamp(t0), CallID: "c", Tool: "t", Decision: "denied", Reason: "a<b & c>d"})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"call.decided","run_id":"run_1","seq":1,"time":"2026-01-02T03:04:05.000Z","call_id":"c","tool":"t","decision":"denied","reason":"a<b & c>d"}`
	if string(b) != want {
		t.Fatalf("%s\nwant %s", b, want)
	}
}
