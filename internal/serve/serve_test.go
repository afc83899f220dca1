package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nexa-run/nexa/internal/engine"
	"github.com/nexa-run/nexa/internal/secrets"
	"github.com/nexa-run/nexa/internal/state"
	"github.com/nexa-run/nexa/internal/store/sqlite"
)

const runID = "run_01TESTSERVE0000000000000001"

var fixedNow = time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC)

// newStore opens a store in a temporary directory holding one run waiting
// for approval of call_1 (and call_2), whose arguments carry a secret.
func newStore(t *testing.T) *sqlite.SQLite {
	t.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "runs.sqlite3"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	st := &state.RunState{
		ID: runID, Status: state.StatusWaitingApproval,
		Config: state.Config{SourceFile: "review.nx", SourceHash: "sha256:0", Agent: "Reviewer", WorkDir: "."},
		Task:   "Review the supplied change",
		Messages: []state.Message{
			{Seq: 0, Role: state.RoleUser, Content: "Review the supplied change"},
			{Seq: 1, Role: state.RoleAssistant, Content: "I will record it.", ToolCalls: []state.ToolCall{
				{ID: "call_1", Name: "record_review", Arguments: `{"content":"LGTM hunter2-secret"}`},
				{ID: "call_2", Name: "record_review", Arguments: `{"content":"second"}`}}},
		},
		Journal: []state.JournalEntry{
			{CallID: "call_1", Tool: "record_review", Seq: 0, Turn: 1, Arguments: []byte(`{"content":"LGTM hunter2-secret"}`), Valid: true,
				Stage: state.StageNotStarted, NeedsApproval: true, Risk: "high", Description: "Record reviewed text"},
			{CallID: "call_2", Tool: "record_review", Seq: 1, Turn: 1, Arguments: []byte(`{"content":"second"}`), Valid: true,
				Stage: state.StageNotStarted, NeedsApproval: true, Risk: "high", Description: "Record reviewed text"},
		},
	}
	if err := s.Create(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	return s
}

func newServer(t *testing.T, s state.Store, o Options) *httptest.Server {
	t.Helper()
	o.Store = s
	o.Now = func() time.Time { return fixedNow }
	if o.Redact == nil {
		o.Redact = secrets.NewRedactor("hunter2-secret").Redact
	}
	srv, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return ts
}

func do(t *testing.T, c *http.Client, method, u, body string, hdr ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func errCode(t *testing.T, body string) string {
	t.Helper()
	var v struct {
		Error apiError `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("not a JSON error: %v\n%s", err, body)
	}
	return v.Error.Code
}

func load(t *testing.T, s state.Store) *state.RunState {
	t.Helper()
	st, err := engine.Show(context.Background(), s, runID)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

const jsonCT = "application/json"

func TestAPIListShowDecide(t *testing.T) {
	s := newStore(t)
	ts := newServer(t, s, Options{User: "alice"})
	c := ts.Client()

	code, body := do(t, c, "GET", ts.URL+"/api/runs?status=waiting_approval", "")
	if code != 200 || !strings.Contains(body, runID) {
		t.Fatalf("list: %d %s", code, body)
	}
	code, body = do(t, c, "GET", ts.URL+"/api/runs?status=bogus", "")
	if code != 400 || errCode(t, body) != engine.CodeUsage {
		t.Fatalf("bad status: %d %s", code, body)
	}

	code, body = do(t, c, "GET", ts.URL+"/api/runs/"+runID, "")
	if code != 200 {
		t.Fatalf("show: %d %s", code, body)
	}
	var v struct {
		Revision     int64                `json:"revision"`
		PendingCalls []engine.PendingCall `json:"pending_calls"`
	}
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatal(err)
	}
	if len(v.PendingCalls) != 2 || v.PendingCalls[0].RiskLevel != "high" || v.PendingCalls[0].Description != "Record reviewed text" {
		t.Fatalf("pending calls: %+v", v.PendingCalls)
	}
	if strings.Contains(body, "hunter2-secret") || !strings.Contains(body, "LGTM") {
		t.Fatalf("the secret is not redacted in the API:\n%s", body)
	}

	code, body = do(t, c, "GET", ts.URL+"/api/runs/run_01NOSUCHRUN", "")
	if code != 404 || errCode(t, body) != engine.CodeRunNotFound {
		t.Fatalf("unknown run: %d %s", code, body)
	}

	// A decision without an explicit "approved" is refused.
	code, body = do(t, c, "POST", ts.URL+"/api/runs/"+runID+"/decide", `{"decisions":[{"call_id":"call_1"}]}`, "Content-Type", jsonCT)
	if code != 400 || errCode(t, body) != engine.CodeUsage {
		t.Fatalf("implicit decision: %d %s", code, body)
	}
	code, body = do(t, c, "POST", ts.URL+"/api/runs/"+runID+"/decide", `{"decisions":[{"call_id":"call_9","approved":true}]}`, "Content-Type", jsonCT)
	if code != 400 || errCode(t, body) != engine.CodeUnknownCall {
		t.Fatalf("unknown call: %d %s", code, body)
	}

	dec := `{"revision":` + itoa(v.Revision) + `,"decisions":[{"call_id":"call_1","approved":false,"reason":"wrong file"}]}`
	code, body = do(t, c, "POST", ts.URL+"/api/runs/"+runID+"/decide", dec, "Content-Type", jsonCT)
	if code != 200 {
		t.Fatalf("decide: %d %s", code, body)
	}
	e := load(t, s).Entry("call_1")
	if e.Decision == nil || *e.Decision || e.Reason != "wrong file" || e.DecidedBy != "alice" || e.DecidedAt == nil || !e.DecidedAt.Equal(fixedNow) {
		t.Fatalf("recorded decision: %+v", e)
	}

	// The same call again: not pending any more, as the CLI says.
	dec = `{"decisions":[{"call_id":"call_1","approved":true}]}`
	code, body = do(t, c, "POST", ts.URL+"/api/runs/"+runID+"/decide", dec, "Content-Type", jsonCT)
	if code != 409 || errCode(t, body) != engine.CodeNotPending {
		t.Fatalf("decided twice: %d %s", code, body)
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

func TestAPIStaleRevisionConflictWritesNothing(t *testing.T) {
	s := newStore(t)
	ts := newServer(t, s, Options{})
	before := load(t, s)
	// Someone decides call_2 first: the run moves to a new revision.
	if _, err := engine.Decide(context.Background(), s, runID, []engine.Decision{{CallID: "call_2", Approve: true}}); err != nil {
		t.Fatal(err)
	}
	dec := `{"revision":` + itoa(before.Revision) + `,"decisions":[{"call_id":"call_1","approved":true}]}`
	code, body := do(t, ts.Client(), "POST", ts.URL+"/api/runs/"+runID+"/decide", dec, "Content-Type", jsonCT)
	if code != 409 || errCode(t, body) != engine.CodeCheckpointConflict || !strings.Contains(body, "changed since revision") {
		t.Fatalf("stale decision: %d %s", code, body)
	}
	if e := load(t, s).Entry("call_1"); e.Decision != nil {
		t.Fatalf("a stale decision was recorded: %+v", e)
	}
}

func TestAPIResolve(t *testing.T) {
	s := newStore(t)
	ts := newServer(t, s, Options{})
	code, body := do(t, ts.Client(), "POST", ts.URL+"/api/runs/"+runID+"/resolve", `{"call_id":"call_1","output":"done","success":true}`, "Content-Type", jsonCT)
	if code != 400 || errCode(t, body) != engine.CodeNotStarted {
		t.Fatalf("resolve of a pending call: %d %s", code, body)
	}
}

func TestAPITokenRefusal(t *testing.T) {
	s := newStore(t)
	ts := newServer(t, s, Options{Token: "s3cret-token", TokenName: "ci-bot"})
	c := ts.Client()
	for _, auth := range []string{"", "Bearer wrong", "s3cret-token", "Bearer s3cret-token-and-more"} {
		code, body := do(t, c, "GET", ts.URL+"/api/runs", "", "Authorization", auth)
		if code != 401 || errCode(t, body) != CodeUnauthorized {
			t.Fatalf("Authorization %q: %d %s", auth, code, body)
		}
	}
	dec := `{"decisions":[{"call_id":"call_1","approved":true}]}`
	code, _ := do(t, c, "POST", ts.URL+"/api/runs/"+runID+"/decide", dec, "Content-Type", jsonCT)
	if code != 401 || load(t, s).Entry("call_1").Decision != nil {
		t.Fatalf("a decision without the token: %d", code)
	}
	code, body := do(t, c, "POST", ts.URL+"/api/runs/"+runID+"/decide", dec, "Content-Type", jsonCT, "Authorization", "Bearer s3cret-token")
	if code != 200 || load(t, s).Entry("call_1").DecidedBy != "ci-bot" {
		t.Fatalf("with the token: %d %s", code, body)
	}
	// The page without a login sends the browser to the login form.
	noFollow := *c
	noFollow.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	code, _ = do(t, &noFollow, "GET", ts.URL+"/runs/"+runID, "")
	if code != http.StatusSeeOther {
		t.Fatalf("page without login: %d", code)
	}
}

func TestAPIRefusesFormPostsFromOtherSites(t *testing.T) {
	s := newStore(t)
	ts := newServer(t, s, Options{})
	dec := `{"decisions":[{"call_id":"call_1","approved":true}]}`
	// A cross-site form can send text/plain without a preflight.
	code, body := do(t, ts.Client(), "POST", ts.URL+"/api/runs/"+runID+"/decide", dec, "Content-Type", "text/plain")
	if code != 400 || load(t, s).Entry("call_1").Decision != nil {
		t.Fatalf("text/plain post: %d %s", code, body)
	}
	code, body = do(t, ts.Client(), "POST", ts.URL+"/api/runs/"+runID+"/decide", dec, "Content-Type", jsonCT, "Origin", "https://evil.example")
	if code != 403 || errCode(t, body) != CodeForbidden || load(t, s).Entry("call_1").Decision != nil {
		t.Fatalf("cross-origin post: %d %s", code, body)
	}
}

var csrfRe = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)
var revRe = regexp.MustCompile(`name="revision" value="([0-9]+)"`)

// browser is a client with a cookie jar, as a person's browser.
func browser(t *testing.T, ts *httptest.Server) *http.Client {
	jar, _ := cookiejar.New(nil)
	c := *ts.Client()
	c.Jar = jar
	return &c
}

func TestPageApproveWithCSRF(t *testing.T) {
	s := newStore(t)
	ts := newServer(t, s, Options{User: "bob"})
	b := browser(t, ts)
	code, page := do(t, b, "GET", ts.URL+"/runs/"+runID, "")
	if code != 200 || !strings.Contains(page, "Record reviewed text") || !strings.Contains(page, "risk-high") {
		t.Fatalf("run page: %d\n%s", code, page)
	}
	if strings.Contains(page, "hunter2-secret") {
		t.Fatal("the run page shows a secret")
	}
	csrf := csrfRe.FindStringSubmatch(page)[1]
	rev := revRe.FindStringSubmatch(page)[1]
	form := url.Values{"csrf": {csrf}, "revision": {rev}, "call_id": {"call_1"}, "decision": {"approve"}}
	code, page = do(t, b, "POST", ts.URL+"/runs/"+runID+"/decide", form.Encode(), "Content-Type", "application/x-www-form-urlencoded")
	if code != 200 || !strings.Contains(page, "call call_1 approved") || !strings.Contains(page, "approved by bob at 2026-12-01T09:30:00Z") {
		t.Fatalf("after approving: %d\n%s", code, page)
	}
	// The same page again (its revision is now stale) for call_2.
	form.Set("call_id", "call_2")
	code, page = do(t, b, "POST", ts.URL+"/runs/"+runID+"/decide", form.Encode(), "Content-Type", "application/x-www-form-urlencoded")
	if code != 409 || !strings.Contains(page, "Conflict: run "+runID+" changed since revision "+rev) {
		t.Fatalf("stale page: %d\n%s", code, page)
	}
	if load(t, s).Entry("call_2").Decision != nil {
		t.Fatal("a stale page recorded a decision")
	}
}

func TestPageRefusesForgedPost(t *testing.T) {
	s := newStore(t)
	ts := newServer(t, s, Options{})
	b := browser(t, ts)
	code, page := do(t, b, "GET", ts.URL+"/runs/"+runID, "")
	if code != 200 {
		t.Fatal(code)
	}
	rev := revRe.FindStringSubmatch(page)[1]
	forged := url.Values{"revision": {rev}, "call_id": {"call_1"}, "decision": {"approve"}}
	// With the session cookie (as a same-site request would carry it) but
	// no token, with a wrong token, and from another browser entirely.
	for name, c := range map[string]*http.Client{"no token": b, "other browser": ts.Client()} {
		code, page = do(t, c, "POST", ts.URL+"/runs/"+runID+"/decide", forged.Encode(), "Content-Type", "application/x-www-form-urlencoded")
		if code != 403 || !strings.Contains(page, "CSRF") {
			t.Fatalf("%s: %d\n%s", name, code, page)
		}
	}
	forged.Set("csrf", strings.Repeat("0", 64))
	code, _ = do(t, b, "POST", ts.URL+"/runs/"+runID+"/decide", forged.Encode(), "Content-Type", "application/x-www-form-urlencoded")
	if code != 403 {
		t.Fatalf("wrong token: %d", code)
	}
	if load(t, s).Entry("call_1").Decision != nil {
		t.Fatal("a forged post recorded a decision")
	}
}

func TestPageLogin(t *testing.T) {
	s := newStore(t)
	ts := newServer(t, s, Options{Token: "s3cret-token"})
	b := browser(t, ts)
	code, page := do(t, b, "GET", ts.URL+"/runs/"+runID, "")
	if code != 200 || !strings.Contains(page, "Sign in") {
		t.Fatalf("without login: %d\n%s", code, page)
	}
	csrf := csrfRe.FindStringSubmatch(page)[1]
	form := url.Values{"csrf": {csrf}, "token": {"wrong"}, "next": {"/runs/" + runID}}
	code, page = do(t, b, "POST", ts.URL+"/login", form.Encode(), "Content-Type", "application/x-www-form-urlencoded")
	if code != 401 || !strings.Contains(page, "wrong token") {
		t.Fatalf("wrong token: %d", code)
	}
	csrf = csrfRe.FindStringSubmatch(page)[1]
	form.Set("csrf", csrf)
	form.Set("token", "s3cret-token")
	code, page = do(t, b, "POST", ts.URL+"/login", form.Encode(), "Content-Type", "application/x-www-form-urlencoded")
	if code != 200 || !strings.Contains(page, "Record reviewed text") {
		t.Fatalf("after login: %d\n%s", code, page)
	}
	u, _ := url.Parse(ts.URL)
	for _, ck := range b.Jar.Cookies(u) {
		if ck.Name == sessionCookie && ck.Value == "" {
			t.Fatal("empty session cookie")
		}
	}
}

func TestCheckBind(t *testing.T) {
	for _, tc := range []struct {
		addr, token string
		ok          bool
	}{
		{"127.0.0.1:8080", "", true}, {"localhost:0", "", true}, {"[::1]:8080", "", true},
		{"0.0.0.0:8080", "", false}, {":8080", "", false}, {"192.168.1.4:80", "", false},
		{"0.0.0.0:8080", "t", true}, {"nonsense", "", false},
	} {
		if err := CheckBind(tc.addr, tc.token); (err == nil) != tc.ok {
			t.Errorf("CheckBind(%q, %q) = %v", tc.addr, tc.token, err)
		}
	}
}

func TestPageUnknownRun(t *testing.T) {
	s := newStore(t)
	ts := newServer(t, s, Options{})
	code, page := do(t, browser(t, ts), "GET", ts.URL+"/runs/run_01NOSUCHRUN", "")
	if code != 404 || !strings.Contains(page, "no run run_01NOSUCHRUN in the store") {
		t.Fatalf("unknown run: %d\n%s", code, page)
	}
	code, page = do(t, browser(t, ts), "GET", ts.URL+"/runs/..%2Fetc", "")
	if code != 404 || !strings.Contains(page, "is not a run id") {
		t.Fatalf("not a run id: %d\n%s", code, page)
	}
}

func TestPageNeverEchoesTheConfirmationFromTheURL(t *testing.T) {
	s := newStore(t)
	ts := newServer(t, s, Options{})
	for _, q := range []string{"call_1", "Your+account+was+approved"} {
		code, page := do(t, browser(t, ts), "GET", ts.URL+"/runs/"+runID+"?decided="+q, "")
		if code != 200 || strings.Contains(page, `role="status"`) || strings.Contains(page, "Your account") {
			t.Fatalf("?decided=%s on a pending call: %d\n%s", q, code, page)
		}
	}
}

// TestAPIListPages pages through the runs with ?limit= and the ?after=
// cursor the previous page named in next, as `nexa runs list` does.
func TestAPIListPages(t *testing.T) {
	s := newStore(t)
	first := load(t, s).CreatedAt
	for i, id := range []string{"run_01TESTSERVE0000000000000002", "run_01TESTSERVE0000000000000003"} {
		st := &state.RunState{ID: id, Status: state.StatusCompleted, Task: "t",
			CreatedAt: first.Add(time.Duration(i+1) * time.Minute),
			Config:    state.Config{SourceFile: "review.nx", SourceHash: "sha256:0", Agent: "Reviewer", WorkDir: "."}}
		if err := s.Create(context.Background(), st); err != nil {
			t.Fatal(err)
		}
	}
	ts := newServer(t, s, Options{})
	var seen []string
	u := ts.URL + "/api/runs?limit=2"
	for pages := 0; ; pages++ {
		if pages > 3 {
			t.Fatalf("paging does not end: %v", seen)
		}
		code, body := do(t, ts.Client(), "GET", u, "")
		if code != 200 {
			t.Fatalf("list: %d %s", code, body)
		}
		var page struct {
			Runs []struct {
				ID string `json:"run_id"`
			} `json:"runs"`
			Next *string `json:"next"`
		}
		if err := json.Unmarshal([]byte(body), &page); err != nil {
			t.Fatal(err)
		}
		for _, r := range page.Runs {
			seen = append(seen, r.ID)
		}
		if page.Next == nil {
			break
		}
		u = ts.URL + "/api/runs?limit=2&after=" + url.QueryEscape(*page.Next)
	}
	want := []string{"run_01TESTSERVE0000000000000003", "run_01TESTSERVE0000000000000002", runID}
	if strings.Join(seen, " ") != strings.Join(want, " ") {
		t.Fatalf("pages gave %v, want newest first %v", seen, want)
	}
	code, body := do(t, ts.Client(), "GET", ts.URL+"/api/runs?after=garbage", "")
	if code != 400 || errCode(t, body) != engine.CodeUsage {
		t.Fatalf("bad cursor: %d %s", code, body)
	}
}

func TestInboxShowsTheNewestOfEachStatus(t *testing.T) {
	s := newStore(t)
	first := load(t, s).CreatedAt
	for i := range inboxGroupLimit + 5 {
		st := &state.RunState{ID: fmt.Sprintf("run_01TESTSERVE00000000000%05d", 100+i), Status: state.StatusCompleted, Task: "t",
			CreatedAt: first.Add(time.Duration(i+1) * time.Second),
			Config:    state.Config{SourceFile: "review.nx", SourceHash: "sha256:0", Agent: "Reviewer", WorkDir: "."}}
		if err := s.Create(context.Background(), st); err != nil {
			t.Fatal(err)
		}
	}
	ts := newServer(t, s, Options{})
	code, page := do(t, browser(t, ts), "GET", ts.URL+"/", "")
	if code != 200 {
		t.Fatalf("inbox: %d\n%s", code, page)
	}
	waiting, completed, _ := strings.Cut(page, ">completed<")
	if !strings.Contains(waiting, "/runs/"+runID) {
		t.Fatalf("the run waiting for approval is not in its group:\n%s", page)
	}
	if n := strings.Count(completed, `<a href="/runs/run_`); n != inboxGroupLimit {
		t.Fatalf("completed group shows %d runs, want the newest %d", n, inboxGroupLimit)
	}
	newest, oldest := fmt.Sprintf("run_01TESTSERVE00000000000%05d", 100+inboxGroupLimit+4), "run_01TESTSERVE0000000000000100"
	if !strings.Contains(completed, newest) || strings.Contains(completed, oldest) {
		t.Fatalf("completed group is not the newest %d:\n%s", inboxGroupLimit, completed)
	}
	if !strings.Contains(completed, "newest 50") || !strings.Contains(completed, "nexa runs list --status completed") {
		t.Fatalf("a cut group does not say how to see the rest:\n%s", completed)
	}
	if strings.Contains(waiting, "nexa runs list --status") {
		t.Fatal("a whole group says it was cut")
	}
}

const unknownRunID = "run_01TESTSERVE0000000000000U01"

// addUnknownRun adds a run stopped with unknown_outcome: call pay_1
// started and its result was never saved.
func addUnknownRun(t *testing.T, s state.Store) {
	t.Helper()
	started := fixedNow.Add(-time.Hour)
	st := &state.RunState{
		ID: unknownRunID, Status: state.StatusUnknownOutcome,
		Config: state.Config{SourceFile: "pay.nx", SourceHash: "sha256:0", Agent: "Payer", WorkDir: "."},
		Task:   "Pay the invoice",
		Messages: []state.Message{
			{Seq: 0, Role: state.RoleUser, Content: "Pay the invoice"},
			{Seq: 1, Role: state.RoleAssistant, ToolCalls: []state.ToolCall{{ID: "pay_1", Name: "pay", Arguments: `{"invoice":42}`}}},
		},
		Journal: []state.JournalEntry{{CallID: "pay_1", Tool: "pay", Turn: 1, Arguments: []byte(`{"invoice":42}`), Valid: true,
			Stage: state.StageStarted, StartedAt: &started}},
	}
	if err := s.Create(context.Background(), st); err != nil {
		t.Fatal(err)
	}
}

func TestPageResolveUnknownOutcome(t *testing.T) {
	s := newStore(t)
	addUnknownRun(t, s)
	ts := newServer(t, s, Options{User: "bob"})
	b := browser(t, ts)
	code, page := do(t, b, "GET", ts.URL+"/runs/"+unknownRunID, "")
	if code != 200 || !strings.Contains(page, `id="resolve-pay_1"`) || !strings.Contains(page, `{&#34;invoice&#34;:42}`) {
		t.Fatalf("run page has no resolve form for the unknown call: %d\n%s", code, page)
	}
	csrf := csrfRe.FindStringSubmatch(page)[1]
	rev := revRe.FindStringSubmatch(page)[1]
	post := func(form url.Values) (int, string) {
		return do(t, b, "POST", ts.URL+"/runs/"+unknownRunID+"/resolve", form.Encode(), "Content-Type", "application/x-www-form-urlencoded")
	}
	unresolved := func(when string) {
		t.Helper()
		st, err := engine.Show(context.Background(), s, unknownRunID)
		if err != nil {
			t.Fatal(err)
		}
		if e := st.Entry("pay_1"); e.Stage != state.StageStarted {
			t.Fatalf("%s: the call was resolved (stage %s)", when, e.Stage)
		}
	}
	// Nothing is taken for granted: no choice of success, no output.
	code, page = post(url.Values{"csrf": {csrf}, "revision": {rev}, "call_id": {"pay_1"}, "output": {"paid"}})
	if code != 400 || !strings.Contains(page, "say whether the call succeeded or failed") {
		t.Fatalf("no success chosen: %d\n%s", code, page)
	}
	unresolved("no success chosen")
	code, page = post(url.Values{"csrf": {csrf}, "revision": {rev}, "call_id": {"pay_1"}, "output": {"  "}, "success": {"true"}})
	if code != 400 || !strings.Contains(page, "write what really happened") {
		t.Fatalf("no output: %d\n%s", code, page)
	}
	unresolved("no output")
	code, page = post(url.Values{"csrf": {"forged"}, "revision": {rev}, "call_id": {"pay_1"}, "output": {"paid"}, "success": {"true"}})
	if code != 403 {
		t.Fatalf("forged form: %d\n%s", code, page)
	}
	unresolved("forged form")

	code, page = post(url.Values{"csrf": {csrf}, "revision": {rev}, "call_id": {"pay_1"}, "output": {"bank confirms payment 42"}, "success": {"true"}})
	if code != 200 || !strings.Contains(page, "call pay_1 resolved as succeeded by bob") || !strings.Contains(page, "resolved by bob") {
		t.Fatalf("after resolving: %d\n%s", code, page)
	}
	st, err := engine.Show(context.Background(), s, unknownRunID)
	if err != nil {
		t.Fatal(err)
	}
	if e := st.Entry("pay_1"); e.Outcome != "resolved" || !e.Success || e.Result != "bank confirms payment 42" || e.ResolvedBy != "bob" {
		t.Fatalf("journal entry after resolving: %+v", e)
	}
	// The same (now stale) page again: a conflict, nothing written.
	code, page = post(url.Values{"csrf": {csrf}, "revision": {rev}, "call_id": {"pay_1"}, "output": {"other"}, "success": {"false"}})
	if code != 409 || !strings.Contains(page, "Conflict") {
		t.Fatalf("stale page: %d\n%s", code, page)
	}
}

func TestAPIResolveNamesTheOperator(t *testing.T) {
	s := newStore(t)
	addUnknownRun(t, s)
	ts := newServer(t, s, Options{Token: "tok", TokenName: "ci-bot"})
	code, body := do(t, ts.Client(), "POST", ts.URL+"/api/runs/"+unknownRunID+"/resolve",
		`{"call_id":"pay_1","output":"not paid","success":false}`, "Content-Type", jsonCT, "Authorization", "Bearer tok")
	if code != 200 || !strings.Contains(body, `"resolved_by": "ci-bot"`) || !strings.Contains(body, `"executing": false`) || strings.Contains(body, `"holder"`) {
		t.Fatalf("resolve: %d %s", code, body)
	}
}

func TestResolveContinuesTheRunWithExecute(t *testing.T) {
	s := newStore(t)
	addUnknownRun(t, s)
	done := make(chan struct{})
	ts := newServer(t, s, Options{Token: "tok", Execute: completer{s: s, done: done}})
	code, body := do(t, ts.Client(), "POST", ts.URL+"/api/runs/"+unknownRunID+"/resolve",
		`{"call_id":"pay_1","output":"paid","success":true}`, "Content-Type", jsonCT, "Authorization", "Bearer tok")
	if code != 200 || !strings.Contains(body, `"executing": true`) {
		t.Fatalf("resolve with --execute: %d %s", code, body)
	}
	select {
	case <-done:
	case <-time.After(2 * time.Minute): // a hang guard, not a timing
		t.Fatal("the server did not continue the run")
	}
	st, err := engine.Show(context.Background(), s, unknownRunID)
	if err != nil || st.Status != state.StatusCompleted {
		t.Fatalf("the run was not continued: %v %v", err, st.Status)
	}
}

// TestPageResumeCommandNamesTheStore: without --execute the run page tells
// the operator how to continue; the command must reach the server's store
// (pasted from any directory), quote what a shell would split, and never
// show the store's password.
func TestPageResumeCommandNamesTheStore(t *testing.T) {
	s := newStore(t)
	ts := newServer(t, s, Options{StoreFlag: "postgres://nexa:pg-hunter3@db.internal/runs", Redact: secrets.NewRedactor("pg-hunter3").Redact})
	_, page := do(t, browser(t, ts), "GET", ts.URL+"/runs/"+runID, "")
	if strings.Contains(page, "pg-hunter3") || !strings.Contains(page, " --store postgres://nexa:") {
		t.Fatalf("the store's password shows, or the flag is gone:\n%s", page)
	}
	ts = newServer(t, s, Options{StoreFlag: "my runs/store.db"})
	_, page = do(t, browser(t, ts), "GET", ts.URL+"/runs/"+runID, "")
	if !strings.Contains(page, "--store &#39;my runs/store.db&#39;") || strings.Contains(page, "started from") {
		t.Fatalf("a store path with a space is not quoted:\n%s", page)
	}
	ts = newServer(t, s, Options{})
	_, page = do(t, browser(t, ts), "GET", ts.URL+"/runs/"+runID, "")
	if strings.Contains(page, "--store") || !strings.Contains(page, "in the directory this server was started from") {
		t.Fatalf("the default store's command:\n%s", page)
	}
}
