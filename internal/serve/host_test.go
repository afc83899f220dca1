package serve

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// doHost sends a request to ts with host as its Host header, as a browser
// does after DNS rebinding pointed host's name at the server's address.
func doHost(t *testing.T, c *http.Client, method, u, host, body string, hdr ...string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

func port(t *testing.T, ts *httptest.Server) string {
	u, err := url.Parse(ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Port()
}

// TestHostCheckRefusesRebinding: every request (API, pages, forms, sign-in)
// for a host that is not this server is refused with 421 before it is
// read: no session is made and nothing is recorded.
func TestHostCheckRefusesRebinding(t *testing.T) {
	s := newStore(t)
	ts := newServer(t, s, Options{})
	p := port(t, ts)
	c := ts.Client()
	dec := `{"decisions":[{"call_id":"call_1","approved":true}]}`
	for _, host := range []string{"evil.example:" + p, "evil.example", "localhost:1", "127.0.0.1:1", "[::1]:1",
		"localhost.:" + p, "127.0.0.1.evil.example:" + p, "10.0.0.1:" + p, "[nonsense]:" + p, "localhost:" + p + ":1", "localhost:"} {
		code, body, h := doHost(t, c, "GET", ts.URL+"/api/runs", host, "")
		if code != http.StatusMisdirectedRequest || errCode(t, body) != CodeMisdirected || strings.Contains(body, runID) || h.Get("Set-Cookie") != "" {
			t.Fatalf("GET /api/runs for %q: %d %s", host, code, body)
		}
		code, body, _ = doHost(t, c, "POST", ts.URL+"/api/runs/"+runID+"/decide", host, dec, "Content-Type", jsonCT)
		if code != http.StatusMisdirectedRequest || errCode(t, body) != CodeMisdirected {
			t.Fatalf("POST decide for %q: %d %s", host, code, body)
		}
		code, body, h = doHost(t, c, "GET", ts.URL+"/runs/"+runID, host, "")
		if code != http.StatusMisdirectedRequest || !strings.Contains(body, "Misdirected") || strings.Contains(body, "Record reviewed text") {
			t.Fatalf("GET page for %q: %d %s", host, code, body)
		}
		if h.Get("Set-Cookie") != "" {
			t.Fatalf("a refused request got a session: %v", h)
		}
		form := url.Values{"csrf": {"x"}, "revision": {"1"}, "call_id": {"call_1"}, "decision": {"approve"}}
		code, _, _ = doHost(t, c, "POST", ts.URL+"/runs/"+runID+"/decide", host, form.Encode(), "Content-Type", "application/x-www-form-urlencoded")
		if code != http.StatusMisdirectedRequest {
			t.Fatalf("form post for %q: %d", host, code)
		}
	}
	if e := load(t, s).Entry("call_1"); e.Decision != nil {
		t.Fatalf("a misdirected request recorded a decision: %+v", e)
	}
}

// TestHostCheckAcceptsThisServer: the bound address, any loopback
// address and localhost, with the bound port or none, are this server.
func TestHostCheckAcceptsThisServer(t *testing.T) {
	s := newStore(t)
	ts := newServer(t, s, Options{})
	p := port(t, ts)
	for _, host := range []string{"127.0.0.1:" + p, "localhost:" + p, "LocalHost:" + p, "[::1]:" + p, "127.0.0.2:" + p, "localhost", "127.0.0.1", "[::1]"} {
		code, body, _ := doHost(t, ts.Client(), "GET", ts.URL+"/api/runs", host, "")
		if code != 200 || !strings.Contains(body, runID) {
			t.Fatalf("GET /api/runs for %q: %d %s", host, code, body)
		}
	}
	code, body, _ := doHost(t, ts.Client(), "POST", ts.URL+"/api/runs/"+runID+"/decide", "localhost:"+p,
		`{"decisions":[{"call_id":"call_1","approved":true}]}`, "Content-Type", jsonCT, "Origin", "http://localhost:"+p)
	if code != 200 || load(t, s).Entry("call_1").Decision == nil {
		t.Fatalf("decide from localhost: %d %s", code, body)
	}
}

// TestAllowHost: a name given with --allow-host is answered (any port, or
// the one it names); with a token the token is still required.
func TestAllowHost(t *testing.T) {
	s := newStore(t)
	ts := newServer(t, s, Options{AllowHosts: []string{"Inbox.Example", "ops.example:8443"}, Token: "tok"})
	c := ts.Client()
	for host, want := range map[string]int{
		"inbox.example": 200, "inbox.example:443": 200, "ops.example:8443": 200,
		"ops.example": 421, "ops.example:443": 421, "other.example": 421,
	} {
		code, body, _ := doHost(t, c, "GET", ts.URL+"/api/runs", host, "", "Authorization", "Bearer tok")
		if code != want {
			t.Fatalf("host %q: %d, want %d: %s", host, code, want, body)
		}
	}
	code, body, _ := doHost(t, c, "GET", ts.URL+"/api/runs", "inbox.example", "")
	if code != 401 || errCode(t, body) != CodeUnauthorized {
		t.Fatalf("an allowed host without the token: %d %s", code, body)
	}
	for _, bad := range []string{"", "https://inbox.example", "inbox.example/", "*.example", "inbox.example:0", "inbox.example:x", "[::1", "a:b:c"} {
		if err := CheckAllowHost(bad); err == nil {
			t.Errorf("CheckAllowHost(%q) accepted", bad)
		}
		if _, err := New(Options{Store: s, AllowHosts: []string{bad}}); err == nil {
			t.Errorf("New with --allow-host %q accepted", bad)
		}
	}
	for _, good := range []string{"inbox.example", "inbox.example:443", "[2001:db8::1]:8443", "192.0.2.7"} {
		if err := CheckAllowHost(good); err != nil {
			t.Errorf("CheckAllowHost(%q): %v", good, err)
		}
	}
}

// TestOriginIsComparedWithAllowedHosts: the Origin of a write must be a
// host this server answers for, not merely equal to the request's Host
// (which a rebinding page chooses).
func TestOriginIsComparedWithAllowedHosts(t *testing.T) {
	s := newStore(t)
	ts := newServer(t, s, Options{AllowHosts: []string{"inbox.example"}})
	p := port(t, ts)
	dec := `{"decisions":[{"call_id":"call_1","approved":true}]}`
	for _, origin := range []string{"http://evil.example:" + p, "null", "http://localhost:1", "file://", "http://127.0.0.1:" + p + ".evil.example"} {
		code, body, _ := doHost(t, ts.Client(), "POST", ts.URL+"/api/runs/"+runID+"/decide", "inbox.example", dec, "Content-Type", jsonCT, "Origin", origin)
		if code != 403 || errCode(t, body) != CodeForbidden {
			t.Fatalf("Origin %q: %d %s", origin, code, body)
		}
	}
	if load(t, s).Entry("call_1").Decision != nil {
		t.Fatal("a cross-origin write was recorded")
	}
	// Not a web page's origin, though its host is the request's.
	code, body, _ := doHost(t, ts.Client(), "POST", ts.URL+"/api/runs/"+runID+"/decide", "127.0.0.1:"+p, dec, "Content-Type", jsonCT, "Origin", "ftp://127.0.0.1:"+p)
	if code != 403 || load(t, s).Entry("call_1").Decision != nil {
		t.Fatalf("an ftp origin: %d %s", code, body)
	}
	// The inbox opened as localhost posting to 127.0.0.1 (or through the
	// allowed name) is this server's own page.
	code, body, _ = doHost(t, ts.Client(), "POST", ts.URL+"/api/runs/"+runID+"/decide", "127.0.0.1:"+p, dec, "Content-Type", jsonCT, "Origin", "http://localhost:"+p)
	if code != 200 {
		t.Fatalf("from the localhost page: %d %s", code, body)
	}
	dec2 := `{"decisions":[{"call_id":"call_2","approved":true}]}`
	code, body, _ = doHost(t, ts.Client(), "POST", ts.URL+"/api/runs/"+runID+"/decide", "inbox.example", dec2, "Content-Type", jsonCT, "Origin", "https://inbox.example")
	if code != 200 {
		t.Fatalf("from the allowed name's page: %d %s", code, body)
	}
}
