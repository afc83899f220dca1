package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// cmdFreePort: freeport VAR sets VAR to a TCP port on 127.0.0.1 that was
// free a moment ago, for a server a story starts in the background.
func cmdFreePort(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: freeport VAR")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		ts.Fatalf("freeport: %v", err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	ts.Setenv(args[0], strconv.Itoa(port))
}

// cmdHTTP: http [-token T] [-host H] [-until PATH=VALUE] METHOD URL [JSON]
// sends one request (a JSON body with Content-Type application/json) and
// puts the answer's body on stdout and "status NNN" on stderr. It waits for
// a server that is still starting (connection refused) up to procBound;
// with -until it repeats the request until the answer's JSON has VALUE at
// PATH, for a run that moves on in the background. -host sends H as the
// Host header while connecting to URL's address, as a browser does for a
// name that DNS rebinding pointed at that address.
func cmdHTTP(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("usage: http [-token T] [-host H] [-until PATH=VALUE] METHOD URL [JSON]")
	}
	var token, until, host string
	for len(args) > 1 && strings.HasPrefix(args[0], "-") {
		switch args[0] {
		case "-token":
			token = args[1]
		case "-until":
			until = args[1]
		case "-host":
			host = args[1]
		default:
			ts.Fatalf("http: unknown option %s", args[0])
		}
		args = args[2:]
	}
	if len(args) < 2 || len(args) > 3 {
		ts.Fatalf("usage: http [-token T] [-host H] [-until PATH=VALUE] METHOD URL [JSON]")
	}
	deadline := time.Now().Add(procBound)
	for {
		var body io.Reader
		if len(args) == 3 {
			body = strings.NewReader(args[2])
		}
		req, err := http.NewRequest(args[0], args[1], body)
		ts.Check(err)
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		if errors.Is(err, syscall.ECONNREFUSED) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		if err != nil {
			ts.Fatalf("http: %v", err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		ts.Check(err)
		if until != "" {
			path, want, _ := strings.Cut(until, "=")
			if got, ok := lookupJSONText(string(b), path); !ok || got != want {
				if time.Now().After(deadline) {
					ts.Fatalf("http: %s is %q after %s, want %q", path, got, procBound, want)
				}
				time.Sleep(50 * time.Millisecond)
				continue
			}
		}
		fmt.Fprint(ts.Stdout(), string(b))
		fmt.Fprintf(ts.Stderr(), "status %d\n", resp.StatusCode)
		return
	}
}

// lookupJSONText follows a dotted path into JSON text, rendered as jsonis
// compares it.
func lookupJSONText(text, path string) (string, bool) {
	var v any
	if json.Unmarshal([]byte(text), &v) != nil {
		return "", false
	}
	for _, part := range strings.Split(path, ".") {
		switch cur := v.(type) {
		case map[string]any:
			next, ok := cur[part]
			if !ok {
				return "", false
			}
			v = next
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(cur) {
				return "", false
			}
			v = cur[i]
		default:
			return "", false
		}
	}
	return render(v), true
}
