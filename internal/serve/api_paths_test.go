package serve

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// Every answer under /api/ is JSON: a path no endpoint has is a 404 error
// object, a known path with another method a 405 one that says which
// methods it takes — never the mux's plain text.
func TestAPIUnknownPathsAnswerJSON(t *testing.T) {
	s := newStore(t)
	ts := newServer(t, s, Options{})
	c := ts.Client()
	for _, tc := range []struct {
		method, path string
		status       int
		code         string
		allow        string
	}{
		{"GET", "/api/nope", 404, CodeNotFound, ""},
		{"GET", "/api", 404, CodeNotFound, ""},
		{"GET", "/api/", 404, CodeNotFound, ""},
		{"GET", "/api/runs/" + runID + "/journal", 404, CodeNotFound, ""},
		{"POST", "/api/nope", 404, CodeNotFound, ""},
		{"DELETE", "/api/runs/" + runID, 405, CodeMethodNotAllowed, "GET, HEAD"},
		{"POST", "/api/runs", 405, CodeMethodNotAllowed, "GET, HEAD"},
		{"GET", "/api/runs/" + runID + "/decide", 405, CodeMethodNotAllowed, "POST"},
	} {
		req, err := http.NewRequest(tc.method, ts.URL+tc.path, strings.NewReader(""))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		b := string(body)
		if resp.StatusCode != tc.status || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") || errCode(t, b) != tc.code {
			t.Errorf("%s %s: %d %s %s, want %d %s", tc.method, tc.path, resp.StatusCode, resp.Header.Get("Content-Type"), b, tc.status, tc.code)
		}
		if got := resp.Header.Get("Allow"); got != tc.allow {
			t.Errorf("%s %s: Allow %q, want %q", tc.method, tc.path, got, tc.allow)
		}
	}
	// The endpoints themselves still answer.
	if code, body := do(t, c, "GET", ts.URL+"/api/runs", ""); code != 200 {
		t.Fatalf("GET /api/runs: %d %s", code, body)
	}
}

// Without the token an unknown path is refused like any endpoint, so the
// answer does not tell which paths exist.
func TestAPIUnknownPathNeedsTheToken(t *testing.T) {
	ts := newServer(t, newStore(t), Options{Token: "s3cret-token"})
	code, body := do(t, ts.Client(), "GET", ts.URL+"/api/nope", "")
	if code != 401 || errCode(t, body) != CodeUnauthorized {
		t.Fatalf("GET /api/nope without token: %d %s", code, body)
	}
	code, body = do(t, ts.Client(), "GET", ts.URL+"/api/nope", "", "Authorization", "Bearer s3cret-token")
	if code != 404 || errCode(t, body) != CodeNotFound {
		t.Fatalf("GET /api/nope with token: %d %s", code, body)
	}
}
