package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"sync"

	"github.com/rogpeppe/go-internal/testscript"
)

// cmdHTTPSink: httpsink starts a local HTTP server standing for an internal
// service (it answers every request with "internal service says hello"),
// sets $SINK_PORT to its port on 127.0.0.1 and appends one line per request
// it receives to sink.log in the work directory, so a story can prove that
// a refused request never reached it.
func cmdHTTPSink(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: httpsink")
	}
	var mu sync.Mutex
	log := ts.MkAbs("sink.log")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if f, err := os.OpenFile(log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600); err == nil {
			fmt.Fprintf(f, "%s %s host=%s\n", r.Method, r.URL.Path, r.Host)
			f.Close()
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "internal service says hello")
	}))
	ts.Defer(srv.Close)
	u, err := url.Parse(srv.URL)
	if err != nil {
		ts.Fatalf("httpsink: %v", err)
	}
	ts.Setenv("SINK_PORT", u.Port())
}
