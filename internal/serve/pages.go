package serve

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nexa-run/nexa/internal/engine"
	"github.com/nexa-run/nexa/internal/resumecmd"
	"github.com/nexa-run/nexa/internal/state"
)

//go:embed templates/*.html
var templateFS embed.FS

// pages parses the embedded templates on the first page served, so that
// commands other than serve do not pay for it at start-up.
var pages = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("").Funcs(template.FuncMap{
		"decision": decisionText,
	}).ParseFS(templateFS, "templates/*.html"))
})

// statusOrder puts what needs a person first in the inbox.
var statusOrder = []state.Status{
	state.StatusWaitingApproval, state.StatusWaitingInput, state.StatusUnknownOutcome, state.StatusInterrupted, state.StatusRunning,
	state.StatusFailed, state.StatusTimedOut, state.StatusBudgetExhausted, state.StatusCompleted,
}

type group struct {
	Status state.Status
	Runs   []state.Summary
	More   bool // the status has more runs than the page shows
}

type pendingPage struct {
	engine.PendingCall
	Arguments string // indented for reading
}

type pageData struct {
	Title, Store, Flash, Error, CSRF, Next string
	Groups                                 []group
	Run                                    *runView
	Pending                                []pendingPage
	Inputs                                 []inputPage
	Executes                               bool
	ResumeCmd                              string
	StoreNamed                             bool   // ResumeCmd carries --store
	decided                                string // the call just decided
	resolved                               string // the call just resolved
	answered                               string // the call just answered
}

func (s *Server) routes() {
	m := s.mux
	m.HandleFunc("GET /{$}", s.page(s.inbox))
	m.HandleFunc("GET /runs/{id}", s.page(s.runPage))
	m.HandleFunc("POST /runs/{id}/decide", s.formPost(s.decideForm()))
	m.HandleFunc("POST /runs/{id}/resolve", s.formPost(s.resolveForm()))
	m.HandleFunc("POST /runs/{id}/respond", s.formPost(s.respondForm()))
	m.HandleFunc("GET /login", s.loginPage)
	m.HandleFunc("POST /login", s.login)
	m.HandleFunc("POST /logout", s.formPost(s.logout))
	m.HandleFunc("GET /api/runs", s.api(s.apiList))
	m.HandleFunc("GET /api/runs/{id}", s.api(s.apiShow))
	m.HandleFunc("POST /api/runs/{id}/decide", s.api(s.apiDecide))
	m.HandleFunc("POST /api/runs/{id}/resolve", s.api(s.apiResolve))
	m.HandleFunc("POST /api/runs/{id}/respond", s.api(s.apiRespond))
}

// render executes a page template and passes the result through the
// redactor before it leaves the server.
func (s *Server) render(w http.ResponseWriter, status int, name string, d *pageData) {
	d.Store = s.o.StoreName
	var buf bytes.Buffer
	if err := pages().ExecuteTemplate(&buf, name, d); err != nil {
		s.logf("render %s: %v", name, err)
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(s.o.Redact(buf.String())))
}

// page wraps a page handler: without a login, the login form.
func (s *Server) page(h func(http.ResponseWriter, *http.Request, *pageData)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sid := s.session(w, r)
		if !s.loggedIn(r) {
			http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		h(w, r, &pageData{CSRF: s.csrfToken(sid)})
	}
}

// formPost wraps a form handler: login, same origin and this session's
// CSRF token are required, or nothing happens.
func (s *Server) formPost(h func(http.ResponseWriter, *http.Request, *pageData)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
		if !s.loggedIn(r) {
			s.render(w, http.StatusUnauthorized, "login.html", &pageData{Title: "Sign in", Error: "sign in first; nothing was recorded", CSRF: s.csrfToken(s.session(w, r))})
			return
		}
		if !s.sameOrigin(r) || !s.csrfOK(r) {
			sid := s.session(w, r)
			s.render(w, http.StatusForbidden, "message.html", &pageData{Title: "Refused", CSRF: s.csrfToken(sid),
				Error: "refused: this form did not come from this inbox's page (missing or wrong CSRF token); nothing was recorded. Reload the page and try again."})
			return
		}
		c, _ := r.Cookie(sessionCookie)
		h(w, r, &pageData{CSRF: s.csrfToken(c.Value)})
	}
}

// inboxGroupLimit is how many runs of one status the inbox shows. Each
// group is one indexed query of the store (newest first), so the page costs
// the same for a store of fifty runs or fifty thousand; a longer group says
// how to see the rest.
const inboxGroupLimit = 50

func (s *Server) inbox(w http.ResponseWriter, r *http.Request, d *pageData) {
	d.Title = "Runs"
	for _, st := range statusOrder {
		runs, err := s.o.Store.List(r.Context(), state.Filter{Status: st, Limit: inboxGroupLimit + 1})
		if err != nil {
			d.Error = fmt.Sprintf("list runs: %v", err)
			s.render(w, http.StatusInternalServerError, "inbox.html", d)
			return
		}
		if len(runs) == 0 {
			continue
		}
		g := group{Status: st, Runs: runs}
		if len(runs) > inboxGroupLimit {
			g.Runs, g.More = runs[:inboxGroupLimit], true
		}
		d.Groups = append(d.Groups, g)
	}
	s.render(w, http.StatusOK, "inbox.html", d)
}

func (s *Server) runPage(w http.ResponseWriter, r *http.Request, d *pageData) {
	d.decided = r.URL.Query().Get("decided")
	d.resolved = r.URL.Query().Get("resolved")
	d.answered = r.URL.Query().Get("answered")
	s.showRun(w, r, d, http.StatusOK)
}

// showRun renders the run page of the run in the URL, with whatever
// message d already carries.
func (s *Server) showRun(w http.ResponseWriter, r *http.Request, d *pageData, status int) {
	id := r.PathValue("id")
	d.Title = id
	if !engine.ValidRunID(id) {
		d.Error = notRunID(id).Message
		s.render(w, http.StatusNotFound, "message.html", d)
		return
	}
	st, err := engine.Show(r.Context(), s.o.Store, id)
	if err != nil {
		e := asAPIError(err)
		d.Error = e.Message
		s.render(w, httpStatus(e.Code), "message.html", d)
		return
	}
	v := s.view(st)
	d.Run = &v
	// The confirmation after a decision is told from the journal, never
	// echoed from the URL, so a link cannot make the page claim anything.
	if e := v.Entry(d.decided); e != nil && e.Decision != nil {
		d.Flash = "call " + e.CallID + " " + decisionText(*e)
		if d.Executes = s.o.Execute != nil; d.Executes && len(v.PendingCalls) == 0 && len(v.PendingInputs) == 0 && !v.Status.Terminal() {
			d.Flash += "; the server is continuing the run"
		}
	}
	if e := v.Entry(d.resolved); e != nil && e.Outcome == "resolved" {
		d.Flash = "call " + e.CallID + " resolved as " + map[bool]string{true: "succeeded", false: "failed"}[e.Success]
		if e.ResolvedBy != "" {
			d.Flash += " by " + e.ResolvedBy
		}
		if s.o.Execute != nil && len(v.PendingCalls) == 0 && len(v.UnknownCalls) == 0 && !v.Status.Terminal() {
			d.Flash += "; the server is continuing the run"
		}
	}
	if e := v.Entry(d.answered); e != nil {
		if in := e.Input(); in != nil && in.RespondedAt != nil {
			d.Flash = "the input of call " + e.CallID + " was answered by " + in.RespondedBy
			if s.o.Execute != nil && len(v.PendingCalls) == 0 && len(v.PendingInputs) == 0 && len(v.UnknownCalls) == 0 && !v.Status.Terminal() {
				d.Flash += "; the server is continuing the run"
			}
		}
	}
	d.Inputs = inputPages(v.PendingInputs)
	d.Executes = s.o.Execute != nil
	d.ResumeCmd, d.StoreNamed = resumeCommand(st, s.o.StoreFlag), s.o.StoreFlag != ""
	for _, p := range v.PendingCalls {
		d.Pending = append(d.Pending, pendingPage{PendingCall: p, Arguments: indentJSON(p.Arguments)})
	}
	s.render(w, status, "run.html", d)
}

// operatorForm handles the posts of the run page's forms (a decision, a
// resolution): read returns the problem with what the form asks for, to
// show with nothing recorded, or ""; write records it with the revision
// and call the page showed. The browser then goes to the run page with
// key=call, which tells, from the journal, what was recorded.
func (s *Server) operatorForm(key string, read func(r *http.Request) string,
	write func(r *http.Request, id string, rev int64, callID string) error) func(http.ResponseWriter, *http.Request, *pageData) {
	return func(w http.ResponseWriter, r *http.Request, d *pageData) {
		id := r.PathValue("id")
		callID := r.PostFormValue("call_id")
		rev, err := strconv.ParseInt(r.PostFormValue("revision"), 10, 64)
		switch {
		case err != nil || rev <= 0:
			d.Error = "the form carries no revision; reload the page and try again (nothing was recorded)"
		case callID == "":
			d.Error = "the form names no call; nothing was recorded"
		default:
			d.Error = read(r)
		}
		if d.Error != "" {
			s.showRun(w, r, d, http.StatusBadRequest)
			return
		}
		if !engine.ValidRunID(id) {
			s.showRun(w, r, d, http.StatusNotFound)
			return
		}
		if err := write(r, id, rev, callID); err != nil {
			e := asAPIError(err)
			d.Error = e.Message
			if e.Code == engine.CodeCheckpointConflict {
				d.Error = "Conflict: " + e.Message + ". The page below shows the run as it is now."
			}
			s.showRun(w, r, d, httpStatus(e.Code))
			return
		}
		http.Redirect(w, r, "/runs/"+id+"?"+key+"="+url.QueryEscape(callID), http.StatusSeeOther)
	}
}

// decideForm records an approval or a denial: one of the two buttons,
// never implied.
func (s *Server) decideForm() func(http.ResponseWriter, *http.Request, *pageData) {
	return s.operatorForm("decided", func(r *http.Request) string {
		if d := r.PostFormValue("decision"); d != "approve" && d != "deny" && d != "approve-edited" {
			return "say the decision explicitly: Approve or Deny (nothing was recorded)"
		}
		return ""
	}, func(r *http.Request, id string, rev int64, callID string) error {
		choice := r.PostFormValue("decision")
		d := engine.Decision{CallID: callID, Approve: choice != "deny", Reason: r.PostFormValue("reason")}
		if choice == "approve-edited" {
			// Only its own button sends the box: the box shows the
			// arguments as the page shows them (secrets redacted),
			// which are not what a plain approval runs. Sent back
			// unchanged they are no edit (ApplyDecisions).
			d.Args = json.RawMessage(strings.TrimSpace(r.PostFormValue("args")))
		}
		_, _, err := s.decide(r.Context(), id, rev, []engine.Decision{d})
		return err
	})
}

// resolveForm records the verified outcome of a call whose outcome is
// unknown. Like the command, it takes nothing for granted: the output must
// be written and success chosen explicitly.
func (s *Server) resolveForm() func(http.ResponseWriter, *http.Request, *pageData) {
	return s.operatorForm("resolved", func(r *http.Request) string {
		if strings.TrimSpace(r.PostFormValue("output")) == "" {
			return "write what really happened (the output the model will read); nothing was recorded"
		}
		if v := r.PostFormValue("success"); v != "true" && v != "false" {
			return "say whether the call succeeded or failed (nothing was recorded)"
		}
		return ""
	}, func(r *http.Request, id string, rev int64, callID string) error {
		_, _, err := s.resolve(r.Context(), id, rev, callID, r.PostFormValue("output"), r.PostFormValue("success") == "true")
		return err
	})
}

func (s *Server) loginPage(w http.ResponseWriter, r *http.Request) {
	sid := s.session(w, r)
	if s.loggedIn(r) {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	s.render(w, http.StatusOK, "login.html", &pageData{Title: "Sign in", CSRF: s.csrfToken(sid), Next: safeNext(r.URL.Query().Get("next"))})
}

func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 1<<16)
	if !s.sameOrigin(r) || !s.csrfOK(r) {
		sid := s.session(w, r)
		s.render(w, http.StatusForbidden, "login.html", &pageData{Title: "Sign in", CSRF: s.csrfToken(sid), Error: "refused: the sign-in form did not come from this page; try again"})
		return
	}
	if !s.tokenOK(r.PostFormValue("token")) {
		sid := s.session(w, r)
		s.render(w, http.StatusUnauthorized, "login.html", &pageData{Title: "Sign in", CSRF: s.csrfToken(sid), Next: safeNext(r.PostFormValue("next")), Error: "wrong token"})
		return
	}
	// A fresh session id on login, so an id planted before it is useless.
	id := randomID()
	s.mu.Lock()
	if c, err := r.Cookie(sessionCookie); err == nil {
		delete(s.sessions, c.Value)
	}
	s.sessions[id] = true
	s.mu.Unlock()
	s.setSessionCookie(w, r, id)
	http.Redirect(w, r, safeNext(r.PostFormValue("next")), http.StatusSeeOther)
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request, _ *pageData) {
	if c, err := r.Cookie(sessionCookie); err == nil {
		s.mu.Lock()
		delete(s.sessions, c.Value)
		s.mu.Unlock()
	}
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// safeNext keeps a post-login redirect on this server.
func safeNext(n string) string {
	if !strings.HasPrefix(n, "/") || strings.HasPrefix(n, "//") || strings.Contains(n, "\\") {
		return "/"
	}
	return n
}

// indentJSON formats arguments for reading; text that is not JSON is shown
// as it is.
func indentJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return string(raw)
	}
	return b.String()
}

// decisionText is the decision column of the journal.
func decisionText(e state.JournalEntry) string {
	if !e.NeedsApproval {
		return "-"
	}
	if e.Decision == nil {
		return "pending"
	}
	t := "denied"
	if *e.Decision {
		t = "approved"
	}
	if e.DecidedBy != "" {
		t += " by " + e.DecidedBy
	}
	if e.DecidedAt != nil {
		t += " at " + e.DecidedAt.UTC().Format(time.RFC3339)
	}
	if e.Reason != "" {
		t += " (" + e.Reason + ")"
	}
	return t
}

// resumeCommand is the command that continues a run: the provider flags it
// was started with, then --store when the server was given one, so the
// command reaches the same store from any shell.
func resumeCommand(st *state.RunState, storeFlag string) string {
	return resumecmd.Base(st, "", resumecmd.Flags(st, nil, storeFlag))
}
