package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"sync"

	"github.com/rogpeppe/go-internal/testscript"
)

// cmdHTTPRedirect: httpredirect URL starts a local HTTP server that answers
// every request with 307 Temporary Redirect to URL (a redirect that keeps
// the method and body, so a client following it would post the same body
// there), sets $REDIRECT_PORT to its port on 127.0.0.1 and appends one line
// per request to redirect.log in the work directory, so a story can show
// that a client reached it and did not go on to URL.
func cmdHTTPRedirect(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: httpredirect URL")
	}
	target := args[0]
	var mu sync.Mutex
	log := ts.MkAbs("redirect.log")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if f, err := os.OpenFile(log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600); err == nil {
			fmt.Fprintf(f, "%s %s\n", r.Method, r.URL.Path)
			f.Close()
		}
		mu.Unlock()
		http.Redirect(w, r, target, http.StatusTemporaryRedirect)
	}))
	ts.Defer(srv.Close)
	u, err := url.Parse(srv.URL)
	if err != nil {
		ts.Fatalf("httpredirect: %v", err)
	}
	ts.Setenv("REDIRECT_PORT", u.Port())
}
