package mcptool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nexa-run/nexa/internal/tool"
	"github.com/nexa-run/nexa/internal/tools/mcptool/mcptest"
)

// methodLog records the JSON-RPC method of every POST and whether it
// carried a session id, in order.
type methodLog struct {
	mu       sync.Mutex
	methods  []string
	sessions int
}

func (l *methodLog) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			b, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(b))
			var m struct{ Method string }
			_ = json.Unmarshal(b, &m)
			l.mu.Lock()
			l.methods = append(l.methods, m.Method)
			if r.Header.Get("Mcp-Session-Id") != "" {
				l.sessions++
			}
			l.mu.Unlock()
		}
		next.ServeHTTP(w, r)
	})
}

func (l *methodLog) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.methods...)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// startTaskHTTP serves the mcptest task server over HTTP, its tasks kept
// in dir; versions narrow the revisions it speaks.
func startTaskHTTP(t *testing.T, dir string, stateless, jsonAnswers bool, wrap func(http.Handler) http.Handler, versions ...string) *httptest.Server {
	t.Helper()
	h := mcptest.HTTPHandler(mcptest.NewTaskServer(dir, versions...), stateless, jsonAnswers)
	if wrap != nil {
		h = wrap(h)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts
}

// Every revision the SDK speaks over HTTP: a server of the 2026-07-28
// revision is reached statelessly (server/discover, no initialize, no
// session id); one of an earlier revision, which refuses server/discover,
// with the initialize handshake of the newest revision it speaks. On each,
// a call the server answers with a task completes.
func TestHTTPRevisions(t *testing.T) {
	for _, v := range []string{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"} {
		t.Run(v, func(t *testing.T) {
			opts, _ := testOptions(t)
			var log methodLog
			modern := v == "2026-07-28"
			ts := startTaskHTTP(t, opts.WorkDir, modern, false, log.wrap, v)
			s := connect(t, ts.URL, opts)
			if got := s.ProtocolVersion(); got != v {
				t.Errorf("protocol version %q, want %s", got, v)
			}
			out, err := s.CallWith(context.Background(), "long_write", json.RawMessage(`{"text":"hi"}`), CallOptions{})
			if err != nil || out.Output != "wrote hi" {
				t.Fatalf("task call: %+v, %v", out, err)
			}
			methods := log.list()
			if len(methods) == 0 || methods[0] != "server/discover" {
				t.Errorf("methods %q, want server/discover first", methods)
			}
			if modern && (contains(methods, "initialize") || log.sessions != 0) {
				t.Errorf("methods %q, %d with a session id: want neither initialize nor sessions", methods, log.sessions)
			}
			if !modern && !contains(methods, "initialize") {
				t.Errorf("methods %q, want the initialize handshake", methods)
			}
		})
	}
}

// Tasks over HTTP, whether the server answers with JSON or SSE, stateless
// or with a session: the id is handed over before any poll, the task is
// polled to completion and its effect happens once; a deadline cancels a
// task; another connection resumes a task.
func TestHTTPTasks(t *testing.T) {
	for _, c := range []struct {
		name                   string
		stateless, jsonAnswers bool
		versions               []string
	}{
		{"stateless-sse", true, false, nil},
		{"stateless-json", true, true, nil},
		{"session-2025-11-25", false, false, []string{"2025-11-25"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			opts, _ := testOptions(t)
			ts := startTaskHTTP(t, opts.WorkDir, c.stateless, c.jsonAnswers, nil, c.versions...)
			s := connect(t, ts.URL, opts)
			var handed []string
			out, err := s.CallWith(context.Background(), "long_write", json.RawMessage(`{"text":"hello"}`), CallOptions{
				Handed: func(id string) error {
					if _, err := os.Stat(filepath.Join(opts.WorkDir, "effects.txt")); err == nil {
						t.Error("effects.txt exists before the id was handed")
					}
					handed = append(handed, id)
					return nil
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(handed) != 1 || len(handed[0]) != 32 || !out.Success || out.Output != "wrote hello" {
				t.Fatalf("handed %q, outcome %+v", handed, out)
			}
			if b, _ := os.ReadFile(filepath.Join(opts.WorkDir, "effects.txt")); string(b) != "hello\n" {
				t.Errorf("effects.txt = %q", b)
			}

			out, err = s.CallWith(context.Background(), "never_ends", nil, CallOptions{
				Deadline: time.Now().Add(100 * time.Millisecond),
				Handed:   func(string) error { return nil },
			})
			if err != nil || out.Success || !strings.Contains(out.Output, "cancelled by nexa because the run's deadline passed") {
				t.Errorf("never_ends: %+v, %v", out, err)
			}

			stop := make(chan struct{})
			var id string
			_, err = s.CallWith(context.Background(), "long_write", json.RawMessage(`{"text":"again"}`), CallOptions{
				Stop: stop, Handed: func(h string) error { id = h; close(stop); return nil },
			})
			if !errors.Is(err, tool.ErrDetached) {
				t.Fatalf("err = %v, want detached", err)
			}
			_ = s.Close()
			s2 := connect(t, ts.URL, opts)
			out, err = s2.Resume(context.Background(), "long_write", id, CallOptions{})
			if err != nil || out.Output != "wrote again" {
				t.Fatalf("Resume = %+v, %v", out, err)
			}
			if b, _ := os.ReadFile(filepath.Join(opts.WorkDir, "effects.txt")); string(b) != "hello\nagain\n" {
				t.Errorf("effects.txt = %q", b)
			}
		})
	}
}

// A server's answer that forges nexa's private task key is not taken for a
// task.
func TestHTTPForgedTaskKeyDropped(t *testing.T) {
	for _, sse := range []bool{false, true} {
		body := `{"jsonrpc":"2.0","id":7,"result":{"content":[],"_meta":{"nexa/task":{"taskId":"x","status":"working"}}}}`
		resp := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(body))}
		if sse {
			resp.Header.Set("Content-Type", "text/event-stream")
			resp.Body = io.NopCloser(strings.NewReader("id: 1\nevent: message\ndata: " + body + "\n\n"))
		}
		rt := taskRewriter{base: roundTripFunc(func(*http.Request) (*http.Response, error) { return resp, nil })}
		req := httptest.NewRequest(http.MethodPost, "http://x/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{}}`))
		req.GetBody = func() (io.ReadCloser, error) {
			return io.NopCloser(strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{}}`)), nil
		}
		got, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(got.Body)
		if bytes.Contains(b, []byte("nexa/task")) || !bytes.Contains(b, []byte(`"id":7`)) {
			t.Errorf("sse=%v: body %s", sse, b)
		}
		if sse && !bytes.HasPrefix(b, []byte("id: 1\nevent: message\ndata: {")) {
			t.Errorf("sse fields not kept: %s", b)
		}
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// authSetup is a token endpoint and a task server that requires its tokens.
type authSetup struct {
	auth            *mcptest.Authorizer
	server, tokenEP *httptest.Server
	opts            Options
	log             *syncBuffer
	secrets         map[string]string
	lockOut         atomic.Bool // the server refuses every token
}

const testClientSecret = "s3cr3t-client-value-42"

func newAuthSetup(t *testing.T, expiresIn int) *authSetup {
	opts, log := testOptions(t)
	a := mcptest.NewAuthorizer("nexa-app", testClientSecret)
	a.ExpiresIn = expiresIn
	tokenEP := httptest.NewServer(a.TokenHandler())
	t.Cleanup(tokenEP.Close)
	as := &authSetup{auth: a, tokenEP: tokenEP, opts: opts, log: log, secrets: map[string]string{"APP_SECRET": testClientSecret}}
	as.server = startTaskHTTP(t, opts.WorkDir, true, false, func(h http.Handler) http.Handler {
		h = a.Require(h)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if as.lockOut.Load() {
				mcptest.Challenge(w)
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	as.opts.Secret = func(n string) (string, bool) { v, ok := as.secrets[n]; return v, ok }
	return as
}

func (as *authSetup) spec() string {
	return as.server.URL + " client_id=nexa-app client_secret=$APP_SECRET token_url=" + as.tokenEP.URL + "/token scope='notes.write notes.read'"
}

// With client credentials, nexa fetches a token once, sends it as a bearer
// token, and fetches a new one when the server refuses it; the refused
// call runs once, with the new token.
func TestHTTPClientCredentials(t *testing.T) {
	as := newAuthSetup(t, 3600)
	s := connect(t, as.spec(), as.opts)
	for i := 0; i < 2; i++ {
		if out := mustCall(t, s, "count_words", `{"text":"a b"}`); !out.Success {
			t.Fatalf("outcome %+v", out)
		}
	}
	if n := as.auth.Issued(); n != 1 {
		t.Errorf("%d tokens fetched, want 1 reused", n)
	}
	if sc := as.auth.Scopes(); len(sc) != 1 || sc[0] != "notes.write notes.read" {
		t.Errorf("scopes asked %q", sc)
	}
	seen := as.auth.Seen()
	for _, tok := range seen {
		if tok != "tok-1" {
			t.Fatalf("tokens seen %q, want tok-1 only", seen)
		}
	}

	as.auth.Revoke()
	out, err := s.CallWith(context.Background(), "long_write", json.RawMessage(`{"text":"once"}`), CallOptions{})
	if err != nil || out.Output != "wrote once" {
		t.Fatalf("call after revocation: %+v, %v", out, err)
	}
	if n := as.auth.Issued(); n != 2 {
		t.Errorf("%d tokens fetched, want a second after the 401", n)
	}
	if b, _ := os.ReadFile(filepath.Join(as.opts.WorkDir, "effects.txt")); string(b) != "once\n" {
		t.Errorf("effects.txt = %q, want the effect once", b)
	}
	if seen := as.auth.Seen(); seen[len(seen)-1] != "tok-2" {
		t.Errorf("last token seen %q, want tok-2", seen[len(seen)-1])
	}
	_ = s.Close()
	if l := as.log.String(); strings.Contains(l, testClientSecret) || strings.Contains(l, "tok-") {
		t.Errorf("the log shows the secret or a token:\n%s", l)
	}
}

// A token that expires is replaced before it is sent: with a lifetime
// below oauth2's margin every request gets a token of its own.
func TestHTTPClientCredentialsRefreshOnExpiry(t *testing.T) {
	as := newAuthSetup(t, 1)
	s := connect(t, as.spec(), as.opts)
	mustCall(t, s, "count_words", `{"text":"a"}`)
	seen := as.auth.Seen()
	if len(seen) < 2 || as.auth.Issued() != len(seen) || as.auth.Refused() != 0 {
		t.Fatalf("issued %d, refused %d, seen %q: want a new token per request and none refused", as.auth.Issued(), as.auth.Refused(), seen)
	}
	for i := 1; i < len(seen); i++ {
		if seen[i] == seen[i-1] {
			t.Fatalf("expired token sent again: %q", seen)
		}
	}
}

// Without credentials, a server that asks for authorization fails the
// connect with ErrAuthRequired and says what to configure; nothing
// interactive is tried.
func TestHTTPAuthRequired(t *testing.T) {
	as := newAuthSetup(t, 3600)
	spec, _ := ParseSpec(as.server.URL)
	_, err := Connect(context.Background(), spec, as.opts)
	var ae *AuthError
	if !errors.Is(err, ErrAuthRequired) || !errors.As(err, &ae) || ae.Status != 401 || ae.Credentials {
		t.Fatalf("err = %v, want an AuthError", err)
	}
	for _, want := range []string{"401 Unauthorized", `scope="notes.write"`, "resource_metadata=", "never starts an interactive sign-in", "client_id=ID client_secret=$NAME token_url=URL"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if as.auth.Issued() != 0 {
		t.Error("a token was fetched without credentials")
	}
}

// Credentials the token endpoint refuses are an authorization error that
// never shows the secret; so is a server refusing a fresh token, and a
// call refused that way did not run.
func TestHTTPAuthRefused(t *testing.T) {
	as := newAuthSetup(t, 3600)
	as.secrets["APP_SECRET"] = "wrong-secret-value-99"
	spec, _ := ParseSpec(as.spec())
	_, err := Connect(context.Background(), spec, as.opts)
	if !errors.Is(err, ErrAuthRequired) || !strings.Contains(err.Error(), "token endpoint refused the client credentials (401, invalid_client)") {
		t.Fatalf("err = %v", err)
	}
	if strings.Contains(err.Error(), "wrong-secret-value-99") || strings.Contains(err.Error(), testClientSecret) {
		t.Fatalf("the error shows the secret: %v", err)
	}

	as.secrets["APP_SECRET"] = testClientSecret
	s := connect(t, as.spec(), as.opts)
	// The server stops accepting this client's tokens at all.
	as.lockOut.Store(true)
	_, err = call(t, s, "count_words", `{"text":"a"}`)
	if !errors.Is(err, ErrAuthRequired) || !errors.Is(err, tool.ErrNotExecuted) || errors.Is(err, tool.ErrUnknownOutcome) ||
		!strings.Contains(err.Error(), "refused a token fetched afresh") {
		t.Errorf("call refused with 401: %v", err)
	}
}

// Settings after an HTTP URL.
func TestParseHTTPSettings(t *testing.T) {
	sp, err := ParseSpec(`https://h.example/mcp?a=1&b=2 client_id=$ID client_secret=${SECRET} token_url=https://auth.example/token scope="x  y"`)
	if err != nil {
		t.Fatal(err)
	}
	if sp.URL != "https://h.example/mcp?a=1&b=2" || sp.OAuth == nil || sp.OAuth.Scope != "x y" ||
		fmt.Sprint(sp.OAuth.ClientID.Refs(), sp.OAuth.ClientSecret.Refs()) != "[ID] [SECRET]" {
		t.Errorf("parsed %#v / %#v", sp, sp.OAuth)
	}
	bad := []struct{ in, want string }{
		{"https://h/mcp client_secret=literal client_id=a token_url=https://a/t", "client_secret must be a $NAME"},
		{"https://h/mcp client_secret=x$S client_id=a token_url=https://a/t", "client_secret must be a $NAME"},
		{"https://h/mcp client_id=a client_secret=$S", "token_url is missing"},
		{"https://h/mcp client_id=a client_id=b", "given twice"},
		{"https://h/mcp clientid=a", `unknown setting "clientid"`},
		{"https://h/mcp bearer", "invalid setting"},
		{"https://h/mcp client_id=a client_secret=$S token_url=https://a/t scope=$X", "scope is written as it is"},
		{"https://h/mcp client_id=a client_secret=$S token_url=https://a/t | x", `unquoted "|"`},
	}
	for _, c := range bad {
		if _, err := ParseSpec(c.in); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseSpec(%q): %v, want %q", c.in, err, c.want)
		}
	}
	// Resolved at connect: an unknown secret is named, a plain-http token
	// URL to another host refused.
	lookup := func(n string) (string, bool) { return "v", n == "S" }
	for _, c := range []struct{ in, want string }{
		{"https://h/mcp client_id=a client_secret=$NOPE token_url=https://a/t", "no secret NOPE"},
		{"https://h/mcp client_id=a client_secret=$S token_url=http://auth.example/t", "only over https"},
		{"http://h.example/mcp client_id=a client_secret=$S token_url=https://a/t", "only over https"},
	} {
		sp, err := ParseSpec(c.in)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := resolveOAuth(sp, lookup); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("resolveOAuth(%q): %v, want %q", c.in, err, c.want)
		}
	}
	sp, _ = ParseSpec("http://127.0.0.1:9/mcp client_id=a client_secret=$S token_url=http://localhost:9/t")
	if _, err := resolveOAuth(sp, lookup); err != nil {
		t.Errorf("loopback http refused: %v", err)
	}
}
