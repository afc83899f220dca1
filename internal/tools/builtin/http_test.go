package builtin

import (
	"bufio"
	"encoding/json"
	"errors"
	"github.com/nexa-run/nexa/internal/tool"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	neturl "net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

type httpOut struct {
	Status        int               `json:"status"`
	URL           string            `json:"url"`
	Headers       map[string]string `json:"headers"`
	Body          string            `json:"body"`
	BodyBase64    string            `json:"body_base64"`
	BodyTruncated bool              `json:"body_truncated"`
}

func runHTTP(t *testing.T, ro runOpts, name string, args map[string]any, success bool) httpOut {
	t.Helper()
	var res httpOut
	if err := json.Unmarshal([]byte(mustRun(t, ro, name, args, success)), &res); err != nil {
		t.Fatal(err)
	}
	return res
}

// allowServer lets std.http reach the local test server at base (an
// internal address, refused otherwise) and nothing else on this machine.
func allowServer(t *testing.T, base string) Options {
	t.Helper()
	u, err := neturl.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	return Options{HTTPAllow: []string{u.Host}}
}

// recorder keeps what a test server received.
type recorder struct {
	mu   sync.Mutex
	reqs []recorded
}

type recorded struct {
	method, path, key, ctype, body, ua string
}

func (r *recorder) handler(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.reqs = append(r.reqs, recorded{req.Method, req.URL.Path, req.Header.Get("Idempotency-Key"), req.Header.Get("Content-Type"), string(b), req.Header.Get("User-Agent")})
	r.mu.Unlock()
	switch req.URL.Path {
	case "/missing":
		http.Error(w, "no such thing", http.StatusNotFound)
	case "/redirect":
		http.Redirect(w, req, "/ok", http.StatusFound)
	case "/big":
		_, _ = io.WriteString(w, strings.Repeat("x", 5000))
	case "/binary":
		w.Header().Set("Content-Type", "application/octet-stream")
		_, _ = w.Write([]byte{0, 1, 2, 0xff})
	default:
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Set-Cookie", "session=secret")
		w.Header().Set("Retry-After", "5")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, "made <it> & done")
	}
}

func (r *recorder) last() recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reqs[len(r.reqs)-1]
}

func TestHTTPRequests(t *testing.T) {
	rec := &recorder{}
	srv := httptest.NewServer(http.HandlerFunc(rec.handler))
	defer srv.Close()
	ro := runOpts{workDir: t.TempDir(), opts: allowServer(t, srv.URL)}

	res := runHTTP(t, ro, "http_get", map[string]any{"url": srv.URL + "/ok", "headers": map[string]any{"X-Test": "1"}}, true)
	if res.Status != 201 || res.Body != "made <it> & done" || res.Headers["Retry-After"] != "5" || res.Headers["Set-Cookie"] != "" {
		t.Fatalf("%+v", res)
	}
	if got := rec.last(); got.method != "GET" || got.key != "" || got.ua != "nexa" {
		t.Fatalf("%+v", got)
	}

	for _, m := range []string{"post", "put", "delete"} {
		runHTTP(t, ro, "http_"+m, map[string]any{"url": srv.URL + "/ok", "body": `{"a":1}`, "headers": map[string]any{"Idempotency-Key": "forged"}}, true)
		got := rec.last()
		if got.method != strings.ToUpper(m) || got.key != "run1:call1" || got.body != `{"a":1}` || got.ctype != "application/json" {
			t.Fatalf("%s: %+v", m, got)
		}
	}
	runHTTP(t, ro, "http_post", map[string]any{"url": srv.URL + "/ok", "body": "plain words"}, true)
	if got := rec.last(); got.ctype != "text/plain; charset=utf-8" {
		t.Fatalf("%+v", got)
	}
	runHTTP(t, ro, "http_put", map[string]any{"url": srv.URL + "/ok", "body": "a=1", "content_type": "application/x-www-form-urlencoded"}, true)
	if got := rec.last(); got.ctype != "application/x-www-form-urlencoded" {
		t.Fatalf("%+v", got)
	}

	// An HTTP error status is a known failure that still shows the response.
	res = runHTTP(t, ro, "http_get", map[string]any{"url": srv.URL + "/missing"}, false)
	if res.Status != 404 || !strings.Contains(res.Body, "no such thing") {
		t.Fatalf("%+v", res)
	}
	// GET follows redirects; POST does not re-send anything.
	res = runHTTP(t, ro, "http_get", map[string]any{"url": srv.URL + "/redirect"}, true)
	if res.Status != 201 || res.URL != srv.URL+"/ok" {
		t.Fatalf("%+v", res)
	}
	res = runHTTP(t, ro, "http_post", map[string]any{"url": srv.URL + "/redirect", "body": "x"}, true)
	if res.Status != 302 || res.Headers["Location"] != "/ok" || rec.last().path != "/redirect" {
		t.Fatalf("%+v", res)
	}
	// Bodies are capped and binary bodies come back in base64.
	limited := ro
	limited.opts.OutputLimit = 100
	res = runHTTP(t, limited, "http_get", map[string]any{"url": srv.URL + "/big"}, true)
	if !res.BodyTruncated || len(res.Body) != 100 {
		t.Fatalf("%+v", res)
	}
	res = runHTTP(t, ro, "http_get", map[string]any{"url": srv.URL + "/binary"}, true)
	if res.Body != "" || res.BodyBase64 != "AAEC/w==" {
		t.Fatalf("%+v", res)
	}
}

func TestHTTPNotSentIsKnownFailure(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ro := runOpts{workDir: t.TempDir(), timeout: 5 * time.Second, opts: Options{HTTPAllow: []string{addr}}}
	for _, m := range []string{"get", "post", "put", "delete"} {
		out := mustRun(t, ro, "http_"+m, map[string]any{"url": "http://" + addr + "/x"}, false)
		if !strings.Contains(out, "request not sent") || !strings.Contains(out, "refused") {
			t.Fatalf("%s: %q", m, out)
		}
	}
	for _, u := range []string{"ftp://example.com/", "not a url", "http://", "/relative"} {
		out := mustRun(t, ro, "http_post", map[string]any{"url": u}, false)
		if !strings.Contains(out, "nothing was sent") {
			t.Fatalf("%s: %q", u, out)
		}
	}
	// An invalid header name fails before anything is written.
	out := mustRun(t, ro, "http_post", map[string]any{"url": "http://" + addr + "/", "headers": map[string]any{"bad header": "x"}}, false)
	if !strings.Contains(out, "not sent") {
		t.Fatalf("%q", out)
	}
	// A name that does not resolve: nothing was sent, whatever the resolver
	// says (unless a proxy answers for it).
	for _, k := range []string{"HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"} {
		if os.Getenv(k) != "" {
			return
		}
	}
	out2, err := execTool(t, ro, "http_post", map[string]any{"url": "http://nexa-test.invalid/", "timeout": 3})
	if err != nil || out2.Success || !strings.Contains(out2.Output, "request not sent") {
		t.Fatalf("%+v %v", out2, err)
	}
}

// rawServer accepts connections and hands each to serve.
func rawServer(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() { defer wg.Done(); defer c.Close(); serve(c) }()
		}
	}()
	return "http://" + ln.Addr().String()
}

// readRequest consumes one request with its body.
func readRequest(c net.Conn) {
	req, err := http.ReadRequest(bufio.NewReader(c))
	if err == nil {
		_, _ = io.Copy(io.Discard, req.Body)
	}
}

func TestHTTPSentThenHangIsUnknown(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	url := rawServer(t, func(c net.Conn) {
		readRequest(c)
		select {
		case <-release:
		case <-time.After(10 * time.Second):
		}
	})
	ro := runOpts{workDir: t.TempDir(), timeout: 400 * time.Millisecond, opts: allowServer(t, url)}
	for _, m := range []string{"post", "get"} {
		start := time.Now()
		args := map[string]any{"url": url + "/slow", "timeout": 60}
		if m == "post" {
			args["body"] = "x"
		}
		out, err := execTool(t, ro, "http_"+m, args)
		if !errors.Is(err, tool.ErrUnknownOutcome) {
			t.Fatalf("%s: %+v %v, want unknown outcome", m, out, err)
		}
		if !strings.Contains(err.Error(), "was sent") || time.Since(start) > 3*time.Second {
			t.Fatalf("%v after %v", err, time.Since(start))
		}
	}
}

func TestHTTPClosedAfterRequestIsUnknown(t *testing.T) {
	var mu sync.Mutex
	count := 0
	url := rawServer(t, func(c net.Conn) {
		mu.Lock()
		count++
		mu.Unlock()
		readRequest(c)
		// Close without answering.
	})
	ro := runOpts{workDir: t.TempDir(), timeout: 5 * time.Second, opts: allowServer(t, url)}
	out, err := execTool(t, ro, "http_post", map[string]any{"url": url + "/x", "body": `{"pay":100}`})
	if !errors.Is(err, tool.ErrUnknownOutcome) {
		t.Fatalf("%+v %v, want unknown outcome", out, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if count != 1 {
		t.Fatalf("the request was sent %d times; a POST must never be retried", count)
	}
}

func TestHTTPBodyCutAfterStatusIsKnown(t *testing.T) {
	url := rawServer(t, func(c net.Conn) {
		readRequest(c)
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\nContent-Type: text/plain\r\n\r\npartial")
	})
	out := mustRun(t, runOpts{workDir: t.TempDir(), timeout: 5 * time.Second, opts: allowServer(t, url)}, "http_post", map[string]any{"url": url, "body": "x"}, true)
	var res struct {
		Status    int    `json:"status"`
		Body      string `json:"body"`
		BodyError string `json:"body_error"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if res.Status != 200 || res.Body != "partial" || res.BodyError == "" {
		t.Fatalf("%s", out)
	}
}
