package serve

import (
	"context"
	"encoding/json"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nexa-run/nexa/internal/engine"
	"github.com/nexa-run/nexa/internal/state"
	"github.com/nexa-run/nexa/internal/store/sqlite"
)

const inputRunID = "run_01TESTSERVE0000000000000002"

// newInputStore opens a store holding one run waiting for input: call_1's
// MCP server asked for a form (name required, seats an integer), call_2's
// for a visit to a URL.
func newInputStore(t *testing.T) *sqlite.SQLite {
	t.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "runs.sqlite3"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	asked := fixedNow.Add(-time.Hour)
	form := state.InputRound{Server: "stdio:accounts", AskedAt: asked, RequestState: "opaque-1", Requests: []state.InputRequest{{
		Key: "account", Mode: state.InputForm, Message: "Which account?",
		Schema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"},"seats":{"type":"integer"},"plan":{"type":"string","enum":["basic","team"]},"invoice":{"type":"boolean"}},"required":["name"]}`)}}}
	link := state.InputRound{Server: "stdio:accounts", AskedAt: asked, Requests: []state.InputRequest{{
		Key: "consent", Mode: state.InputURL, Message: "Grant access.", URL: "https://consent.example.test/grant?req=42", Domain: "consent.example.test"}}}
	st := &state.RunState{
		ID: inputRunID, Status: state.StatusWaitingInput,
		Config: state.Config{SourceFile: "signup.nx", SourceHash: "sha256:0", Agent: "Signer", WorkDir: "."},
		Task:   "Sign up",
		Messages: []state.Message{
			{Seq: 0, Role: state.RoleUser, Content: "Sign up"},
			{Seq: 1, Role: state.RoleAssistant, ToolCalls: []state.ToolCall{
				{ID: "call_1", Name: "sign_up", Arguments: `{"text":"acme"}`},
				{ID: "call_2", Name: "open_link", Arguments: `{"text":"cal"}`}}},
		},
		Journal: []state.JournalEntry{
			{CallID: "call_1", Tool: "sign_up", Seq: 0, Turn: 1, Arguments: []byte(`{"text":"acme"}`), Valid: true,
				Stage: state.StageNotStarted, Attempts: 1, Inputs: []state.InputRound{form}},
			{CallID: "call_2", Tool: "open_link", Seq: 1, Turn: 1, Arguments: []byte(`{"text":"cal"}`), Valid: true,
				Stage: state.StageNotStarted, Attempts: 1, Inputs: []state.InputRound{link}},
		},
	}
	if err := s.Create(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	return s
}

func loadInput(t *testing.T, s state.Store) *state.RunState {
	t.Helper()
	st, err := engine.Show(context.Background(), s, inputRunID)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// The run shows its pending inputs; an answer that does not fit the form
// is refused (400, invalid_response) with nothing written; a fitting one
// is journaled with who and when, and the URL request is answered done.
func TestAPIRespond(t *testing.T) {
	s := newInputStore(t)
	ts := newServer(t, s, Options{User: "alice"})
	c := ts.Client()
	url := ts.URL + "/api/runs/" + inputRunID + "/respond"

	code, body := do(t, c, "GET", ts.URL+"/api/runs/"+inputRunID, "")
	if code != 200 || !strings.Contains(body, `"pending_inputs": [`) || !strings.Contains(body, `"domain": "consent.example.test"`) {
		t.Fatalf("show: %d %s", code, body)
	}
	before := loadInput(t, s).Revision

	for _, bad := range []string{
		`{"call_id":"call_1","response":{"seats":2}}`,
		`{"call_id":"call_1","response":{"name":"Ada","seats":"two"}}`,
		`{"call_id":"call_1","response":"done"}`,
		`{"call_id":"call_2","response":{"name":"Ada"}}`,
	} {
		code, body := do(t, c, "POST", url, bad, "Content-Type", jsonCT)
		if code != 400 || errCode(t, body) != engine.CodeInvalidResponse {
			t.Fatalf("%s: %d %s", bad, code, body)
		}
	}
	code, body = do(t, c, "POST", url, `{"call_id":"call_3","response":"done"}`, "Content-Type", jsonCT)
	if code != 400 || errCode(t, body) != engine.CodeUnknownCall {
		t.Fatalf("unknown call: %d %s", code, body)
	}
	code, body = do(t, c, "POST", url, `{"call_id":"call_1"}`, "Content-Type", jsonCT)
	if code != 400 || errCode(t, body) != engine.CodeUsage {
		t.Fatalf("no response: %d %s", code, body)
	}
	if st := loadInput(t, s); st.Revision != before || st.Entry("call_1").Input().Responses != nil {
		t.Fatalf("a refused answer was written: revision %d (was %d)", st.Revision, before)
	}

	code, body = do(t, c, "POST", url, `{"revision":`+itoa(before)+`,"call_id":"call_1","response":{"name":"Ada","seats":3}}`, "Content-Type", jsonCT)
	if code != 200 || !strings.Contains(body, `"executing": false`) {
		t.Fatalf("answer: %d %s", code, body)
	}
	in := loadInput(t, s).Entry("call_1").Input()
	if string(in.Responses) != `{"account":{"action":"accept","content":{"name":"Ada","seats":3}}}` ||
		in.RespondedBy != "alice" || in.RespondedAt == nil || !in.RespondedAt.Equal(fixedNow) || in.RequestState != "opaque-1" {
		t.Fatalf("journaled %+v", in)
	}
	// Answered already: refused, not overwritten.
	code, body = do(t, c, "POST", url, `{"call_id":"call_1","response":{"name":"Bo"}}`, "Content-Type", jsonCT)
	if code != 409 || errCode(t, body) != engine.CodeNotPending {
		t.Fatalf("second answer: %d %s", code, body)
	}
	// A stale revision is refused.
	code, body = do(t, c, "POST", url, `{"revision":`+itoa(before)+`,"call_id":"call_2","response":"done"}`, "Content-Type", jsonCT)
	if code != 409 || errCode(t, body) != engine.CodeCheckpointConflict {
		t.Fatalf("stale answer: %d %s", code, body)
	}
	code, body = do(t, c, "POST", url, `{"call_id":"call_2","response":"done"}`, "Content-Type", jsonCT)
	if code != 200 || !strings.Contains(body, `"pending_inputs": []`) {
		t.Fatalf("done: %d %s", code, body)
	}
	if in := loadInput(t, s).Entry("call_2").Input(); string(in.Responses) != `{"consent":{"action":"accept"}}` {
		t.Fatalf("journaled %s", in.Responses)
	}
}

// The run page renders a form's simple fields and a URL request as text
// with its domain (no link); a posted form is typed by the schema,
// checked (a missing required field is refused, nothing written), and
// recorded with who answered; Done answers the URL request.
func TestPageRespond(t *testing.T) {
	s := newInputStore(t)
	ts := newServer(t, s, Options{User: "bob"})
	b := browser(t, ts)
	code, page := do(t, b, "GET", ts.URL+"/runs/"+inputRunID, "")
	for _, want := range []string{`id="field-name"`, `type="number" name="field.seats"`, `<option>team</option>`, `name="field.invoice"`,
		`<code id="url-consent">https://consent.example.test/grant?req=42</code>`, `<strong id="domain-consent">consent.example.test</strong>`, `id="done-call_2"`} {
		if code != 200 || !strings.Contains(page, want) {
			t.Fatalf("run page lacks %s: %d\n%s", want, code, page)
		}
	}
	if strings.Contains(page, `href="https://consent`) {
		t.Fatal("the page links the URL")
	}
	csrf := csrfRe.FindStringSubmatch(page)[1]
	rev := revRe.FindStringSubmatch(page)[1]
	post := func(form url.Values) (int, string) {
		form.Set("csrf", csrf)
		form.Set("revision", rev)
		return do(t, b, "POST", ts.URL+"/runs/"+inputRunID+"/respond", form.Encode(), "Content-Type", "application/x-www-form-urlencoded")
	}
	code, page = post(url.Values{"call_id": {"call_1"}, "action": {"fields"}, "field.seats": {"2"}})
	if code != 400 || !strings.Contains(page, "does not match the form of request") {
		t.Fatalf("missing name: %d\n%s", code, page)
	}
	if loadInput(t, s).Entry("call_1").Input().RespondedAt != nil {
		t.Fatal("a refused answer was recorded")
	}
	code, page = post(url.Values{"call_id": {"call_1"}, "action": {"fields"}, "field.name": {"Ada"}, "field.seats": {"2"}, "field.plan": {"team"}, "field.invoice": {"true"}})
	if code != 200 || !strings.Contains(page, "the input of call call_1 was answered by bob") {
		t.Fatalf("answer: %d\n%s", code, page)
	}
	in := loadInput(t, s).Entry("call_1").Input()
	if string(in.Responses) != `{"account":{"action":"accept","content":{"invoice":true,"name":"Ada","plan":"team","seats":2}}}` || in.RespondedBy != "bob" {
		t.Fatalf("journaled %s by %s", in.Responses, in.RespondedBy)
	}
	rev = revRe.FindStringSubmatch(page)[1]
	code, page = post(url.Values{"call_id": {"call_2"}, "action": {"done"}})
	if code != 200 || !strings.Contains(page, "the input of call call_2 was answered by bob") {
		t.Fatalf("done: %d\n%s", code, page)
	}
}
