package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/nexa-run/nexa/internal/state"
	"github.com/nexa-run/nexa/internal/tool"
)

// A call whose server asks for input waits: its round is journaled, the
// entry is not_started, the other call of the reply completes, and the run
// stops waiting_input with no tool message. A refused answer changes
// nothing; an answer that fits is sent with the round's state, the call
// completes once, and counts as one tool call.
func TestInputRequestPausesAndTheAnswerIsSent(t *testing.T) {
	h := newHarness(t, assistant(call("c1", "lookup", `{"q":"a"}`), call("c2", "lookup", `{"q":"b"}`)), answer("done"))
	var sent []*state.InputRound
	h.exec.fn = func(inv tool.Invocation) (tool.Outcome, error) {
		if inv.CallID != "c1" {
			return tool.Outcome{Output: "ok", Success: true}, nil
		}
		sent = append(sent, inv.Input)
		if inv.Input == nil {
			return tool.Outcome{Input: &state.InputRound{Server: "stdio:s", RequestState: "st-1", Requests: []state.InputRequest{
				{Key: "who", Mode: state.InputForm, Message: "Who?", Schema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)},
				{Key: "ok", Mode: state.InputURL, Message: "Consent.", URL: "https://x.example.test/", Domain: "x.example.test"}}}}, nil
		}
		return tool.Outcome{Output: "answered " + string(inv.Input.Responses), Success: true}, nil
	}
	st := h.start(NewRun{})
	if st.Status != state.StatusWaitingInput {
		t.Fatalf("status %s, error %+v", st.Status, st.Error)
	}
	e := st.Entry("c1")
	if e.Stage != state.StageNotStarted || !e.AwaitingInput() || e.Input().RequestState != "st-1" || e.Input().AskedAt.IsZero() {
		t.Fatalf("c1 = %+v", e)
	}
	if st.Entry("c2").Stage != state.StageCompleted {
		t.Fatalf("c2 = %+v", st.Entry("c2"))
	}
	for _, m := range st.Messages {
		if m.Role == state.RoleTool {
			t.Fatalf("a tool message was saved while c1 waits: %+v", m)
		}
	}
	if ids := InputCallIDs(st); fmt.Sprint(ids) != "[c1]" {
		t.Fatalf("waiting for input: %v", ids)
	}

	// A resume without an answer sends nothing.
	if st, err := h.resume(st.ID); err != nil || st.Status != state.StatusWaitingInput || len(sent) != 1 {
		t.Fatalf("resume without an answer: %v, %v, sent %d", st.Status, err, len(sent))
	}

	stored, _ := h.store.Load(context.Background(), st.ID)
	rev := stored.Revision
	for answer, want := range map[string]string{
		`{"who": {"name": 3}, "ok": "done"}`: "at /name",
		`{"who": {"name": "Ada"}}`:           `nothing for request "ok"`,
		`{"name": "Ada"}`:                    "which the server did not make",
		`done`:                               `request "who" is a form`,
		`{"who": {"name": "Ada"}, "ok": {}}`: "answer done once it is completed",
	} {
		_, _, err := ApplyResponses(stored, []Response{{CallID: "c1", Answer: answer}}, nil)
		if re, ok := AsError(err); !ok || re.Code != CodeInvalidResponse || !strings.Contains(re.Message, want) {
			t.Errorf("answer %s: %v, want invalid_response saying %q", answer, err, want)
		}
	}
	if _, _, err := ApplyResponses(stored, []Response{{CallID: "c2", Answer: "done"}}, nil); err == nil {
		t.Error("an answer for a call that waits for no input was taken")
	}
	if stored.Entry("c1").Input().RespondedAt != nil {
		t.Fatal("a refused answer changed the run")
	}
	delta, evs, err := ApplyResponses(stored, []Response{{CallID: "c1", Answer: `{"who": {"name": "Ada"}, "ok": "done"}`, By: "ana", At: h.now}}, nil)
	if err != nil || len(evs) != 1 || evs[0].Kind != EventCallResponded || evs[0].By != "ana" {
		t.Fatalf("ApplyResponses = %v, %+v", err, evs)
	}
	if err := h.store.Save(context.Background(), stored, delta); err != nil {
		t.Fatal(err)
	}
	if stored.Revision != rev+1 {
		t.Fatalf("revision %d", stored.Revision)
	}
	st, err = h.runner().Continue(context.Background(), stored)
	if err != nil || st.Status != state.StatusCompleted {
		t.Fatalf("continue: %v, %s %+v", err, st.Status, st.Error)
	}
	if len(sent) != 2 || sent[1] == nil || sent[1].RequestState != "st-1" ||
		string(sent[1].Responses) != `{"ok":{"action":"accept"},"who":{"action":"accept","content":{"name":"Ada"}}}` {
		t.Fatalf("sent %+v", sent)
	}
	e = st.Entry("c1")
	if !e.Success || e.Attempts != 2 || e.Input().RespondedBy != "ana" || st.Usage.ToolCalls != 2 {
		t.Fatalf("c1 = %+v, tool calls %d", e, st.Usage.ToolCalls)
	}
}
