package serve

import (
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/nexa-run/nexa/internal/engine"
	"github.com/nexa-run/nexa/internal/state"
)

// contentChecker accepts edited arguments whose content is a string, as the
// run's program would check them against record_review's schema.
type contentChecker struct{}

func (contentChecker) CheckEdit(e *state.JournalEntry, _ string, args json.RawMessage) (json.RawMessage, error) {
	var a struct {
		Content string `json:"content"`
	}
	if err := json.Unmarshal(args, &a); err != nil || a.Content == "" {
		return nil, &engine.Error{Code: engine.CodeInvalidEdit, Refusal: true, Message: "the edited arguments of call " + e.CallID + " were not recorded: content must be a string"}
	}
	out, _ := json.Marshal(a)
	return out, nil
}

func editing(*state.RunState) (engine.EditChecker, error) { return contentChecker{}, nil }

func TestAPIApproveWithEditedArguments(t *testing.T) {
	s := newStore(t)
	ts := newServer(t, s, Options{User: "erin", EditChecker: editing})
	c := ts.Client()
	code, body := do(t, c, "POST", ts.URL+"/api/runs/"+runID+"/decide",
		`{"decisions": [{"call_id": "call_1", "approved": true, "args": {"content": 5}}]}`, "Content-Type", "application/json")
	if code != 400 || errCode(t, body) != engine.CodeInvalidEdit {
		t.Fatalf("an edit failing its checks: %d %s", code, body)
	}
	if e := load(t, s).Entry("call_1"); e.Decision != nil || e.ApprovedArguments != nil {
		t.Fatalf("a refused edit recorded something: %+v", e)
	}
	code, body = do(t, c, "POST", ts.URL+"/api/runs/"+runID+"/decide",
		`{"decisions": [{"call_id": "call_1", "approved": true, "args": {"content": "LGTM, fixed"}}]}`, "Content-Type", "application/json")
	if code != 200 {
		t.Fatalf("edit: %d %s", code, body)
	}
	e := load(t, s).Entry("call_1")
	if string(e.ApprovedArguments) != `{"content":"LGTM, fixed"}` || e.EditedBy != "erin" || e.DecidedBy != "erin" || string(e.Arguments) != `{"content":"LGTM hunter2-secret"}` {
		t.Fatalf("entry after the edit: %+v", e)
	}
	if !strings.Contains(body, `"edited_by": "erin"`) || !strings.Contains(body, `"content": "LGTM, fixed"`) {
		t.Fatalf("the answer does not show the approved arguments: %s", body)
	}
}

func TestAPIEditWithoutAProgramIsRefused(t *testing.T) {
	s := newStore(t)
	ts := newServer(t, s, Options{User: "erin", EditChecker: func(*state.RunState) (engine.EditChecker, error) {
		return nil, &engine.Error{Code: engine.CodeInvalidEdit, Refusal: true, Message: "the program of run does not compile here", Err: errors.New("x")}
	}})
	code, body := do(t, ts.Client(), "POST", ts.URL+"/api/runs/"+runID+"/decide",
		`{"decisions": [{"call_id": "call_1", "approved": true, "args": {"content": "x"}}]}`, "Content-Type", "application/json")
	if code != 400 || errCode(t, body) != engine.CodeInvalidEdit || load(t, s).Entry("call_1").Decision != nil {
		t.Fatalf("%d %s", code, body)
	}
}

func TestPageApproveWithEditedArguments(t *testing.T) {
	s := newStore(t)
	ts := newServer(t, s, Options{User: "bob", EditChecker: editing})
	b := browser(t, ts)
	code, page := do(t, b, "GET", ts.URL+"/runs/"+runID, "")
	if code != 200 || !strings.Contains(page, `id="args-call_1"`) || !strings.Contains(page, `id="approve-edited-call_1"`) {
		t.Fatalf("run page has no edit box: %d\n%s", code, page)
	}
	csrf := csrfRe.FindStringSubmatch(page)[1]
	rev := revRe.FindStringSubmatch(page)[1]
	// A plain Approve ignores the box, whatever it holds.
	form := url.Values{"csrf": {csrf}, "revision": {rev}, "call_id": {"call_2"}, "decision": {"approve"}, "args": {`{"content": "ignored"}`}}
	code, page = do(t, b, "POST", ts.URL+"/runs/"+runID+"/decide", form.Encode(), "Content-Type", "application/x-www-form-urlencoded")
	if code != 200 || load(t, s).Entry("call_2").ApprovedArguments != nil {
		t.Fatalf("a plain approval took the box's arguments: %d %+v", code, load(t, s).Entry("call_2"))
	}
	rev = revRe.FindStringSubmatch(page)[1]
	form = url.Values{"csrf": {csrf}, "revision": {rev}, "call_id": {"call_1"}, "decision": {"approve-edited"}, "args": {`{"content": "edited in the inbox"}`}}
	code, page = do(t, b, "POST", ts.URL+"/runs/"+runID+"/decide", form.Encode(), "Content-Type", "application/x-www-form-urlencoded")
	if code != 200 || !strings.Contains(page, "call call_1 approved") {
		t.Fatalf("after approving with edits: %d\n%s", code, page)
	}
	if e := load(t, s).Entry("call_1"); string(e.ApprovedArguments) != `{"content":"edited in the inbox"}` || e.EditedBy != "bob" {
		t.Fatalf("entry: %+v", e)
	}
}

// The API's run object carries the resume commands runs show --json gives.
func TestAPIRunHasTheResumeCommands(t *testing.T) {
	s := newStore(t)
	ts := newServer(t, s, Options{User: "erin", StoreFlag: "runs.db"})
	code, body := do(t, ts.Client(), "GET", ts.URL+"/api/runs/"+runID, "")
	if code != 200 {
		t.Fatalf("show: %d %s", code, body)
	}
	var v struct {
		Resume map[string]string `json:"resume"`
	}
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatal(err)
	}
	want := "nexa agent review.nx Reviewer --resume " + runID + " --store runs.db --approve call_1 --approve call_2"
	if v.Resume["approve"] != want {
		t.Fatalf("resume.approve = %q, want %q", v.Resume["approve"], want)
	}
}
