package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"

	"github.com/rogpeppe/go-internal/testscript"
)

// fakeReply is one scripted HTTP answer of the fake model server.
type fakeReply struct {
	Status int               `json:"status"`
	Header map[string]string `json:"header"`
	// JSON is sent as the body of a plain response.
	JSON json.RawMessage `json:"json"`
	// Stream chunks are sent as server-sent events, then [DONE] unless
	// Cut is set, in which case the connection is dropped instead.
	Stream []json.RawMessage `json:"stream"`
	Cut    bool              `json:"cut"`
}

// cmdFakeModel: fakemodel REPLIES.json starts an OpenAI-compatible server
// answering requests in order from the file, sets $FAKE_URL to its base URL
// and appends every request body to requests.jsonl in the work directory
// (with "key_ok": whether the bearer token is $FAKE_EXPECT_KEY, when that is
// set as the server starts).
func cmdFakeModel(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: fakemodel REPLIES.json")
	}
	var replies []fakeReply
	if err := json.Unmarshal([]byte(ts.ReadFile(args[0])), &replies); err != nil {
		ts.Fatalf("fakemodel: %v", err)
	}
	var mu sync.Mutex
	next := 0
	log := ts.MkAbs("requests.jsonl")
	expectKey := ts.Getenv("FAKE_EXPECT_KEY")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		i := next
		next++
		if f, err := os.OpenFile(log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600); err == nil {
			auth := "none"
			if r.Header.Get("Authorization") != "" {
				auth = "bearer"
			}
			// The key itself is never written down: only whether it
			// is the one the script expects.
			keyOK := ""
			if expectKey != "" {
				keyOK = fmt.Sprintf(",\"key_ok\":%t", r.Header.Get("Authorization") == "Bearer "+expectKey)
			}
			fmt.Fprintf(f, "{\"path\":%q,\"auth\":%q%s,\"body\":%s}\n", r.URL.Path, auth, keyOK, strings.TrimSpace(string(body)))
			f.Close()
		}
		mu.Unlock()
		if i >= len(replies) {
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, `{"error":{"message":"fake model: no more scripted replies"}}`)
			return
		}
		rep := replies[i]
		for k, v := range rep.Header {
			w.Header().Set(k, v)
		}
		if rep.Stream != nil {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			fl, _ := w.(http.Flusher)
			for _, c := range rep.Stream {
				fmt.Fprintf(w, "data: %s\n\n", c)
				if fl != nil {
					fl.Flush()
				}
			}
			if rep.Cut {
				if hj, ok := w.(http.Hijacker); ok {
					conn, _, err := hj.Hijack()
					if err == nil {
						conn.Close()
					}
				}
				return
			}
			io.WriteString(w, "data: [DONE]\n\n")
			return
		}
		status := rep.Status
		if status == 0 {
			status = http.StatusOK
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write(rep.JSON)
	}))
	ts.Defer(srv.Close)
	ts.Setenv("FAKE_URL", srv.URL+"/v1")
}
