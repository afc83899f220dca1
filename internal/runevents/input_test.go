package runevents

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/nexa-run/nexa/internal/schemacheck"
	"github.com/nexa-run/nexa/internal/state"
)

// A call whose server asks for input: the follower reports the request
// (schema, URL and domain, secrets redacted) once, then the answer with
// who gave it, then the call's end; a follow that begins while the call
// waits starts with the request. Each line matches its schema.
func TestFollowerReportsInputRequests(t *testing.T) {
	sc := schemas(t)
	red := strings.NewReplacer("sk-secret", "[REDACTED]").Replace
	st := &state.RunState{ID: "run_01JD7BBBBBBBBBBBBBBBBBBBBB", Status: state.StatusRunning, UpdatedAt: t0}
	round := state.InputRound{Server: "stdio:accounts", AskedAt: *at(3), RequestState: "opaque", Requests: []state.InputRequest{
		{Key: "account", Mode: state.InputForm, Message: "Which account? sk-secret", Schema: json.RawMessage(`{"type":"object"}`)},
		{Key: "consent", Mode: state.InputURL, Message: "Grant.", URL: "https://consent.example.test/x", Domain: "consent.example.test"}}}
	e := state.JournalEntry{CallID: "c1", Tool: "sign_up", Turn: 1, Arguments: json.RawMessage(`{}`), Stage: state.StageStarted, CreatedAt: *at(1), StartedAt: at(2)}
	st.Journal = []state.JournalEntry{e}
	f := FromStart(red)
	var got []Event
	read := func(change func()) {
		change()
		got = append(got, f.Next(st, state.Omitted{})...)
	}
	read(func() {})
	read(func() {
		st.Journal[0].Stage = state.StageNotStarted
		st.Journal[0].Inputs = []state.InputRound{round}
		st.Status = state.StatusWaitingInput
	})
	// A follow that begins now starts with what waits.
	_, begun := Begin(st, state.Omitted{}, red)
	if len(begun) != 1 || begun[0].Type != CallInputRequired || len(begun[0].Requests) != 2 {
		t.Fatalf("Begin = %+v", begun)
	}
	read(func() {})
	read(func() {
		in := &st.Journal[0].Inputs[0]
		in.Responses, in.RespondedBy, in.RespondedAt = json.RawMessage(`{}`), "ana", at(5)
	})
	read(func() {
		e := &st.Journal[0]
		e.Stage, e.StartedAt = state.StageStarted, at(6)
	})
	read(func() {
		e := &st.Journal[0]
		e.Stage, e.Outcome, e.Success, e.CompletedAt = state.StageCompleted, "executed", true, at(7)
	})
	var types []string
	for _, ev := range got {
		types = append(types, ev.Type)
		ev.Seq = 1
		b, _ := Marshal(ev)
		v, _ := schemacheck.Decode(b)
		if ps := sc[ev.Type].Validate(v); len(ps) > 0 {
			t.Errorf("%s does not match its schema: %s", b, schemacheck.Explain(ps, 5))
		}
		if strings.Contains(string(b), "sk-secret") || strings.Contains(string(b), "opaque") {
			t.Errorf("a secret or the request state reached an event: %s", b)
		}
	}
	want := "tool.started call.input_required call.responded tool.completed"
	if strings.Join(types, " ") != want {
		t.Fatalf("events %q, want %q", types, want)
	}
	in := got[1]
	if in.Server != "stdio:accounts" || in.Requests[1].Domain != "consent.example.test" || in.Requests[0].Message != "Which account? [REDACTED]" || in.Time != Stamp(*at(3)) {
		t.Errorf("call.input_required = %+v", in)
	}
	if got[2].RespondedBy != "ana" || got[2].Time != Stamp(*at(5)) {
		t.Errorf("call.responded = %+v", got[2])
	}
}
