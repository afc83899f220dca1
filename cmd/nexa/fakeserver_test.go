package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
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
	// Hang makes the server accept the request and never answer (after
	// the Stream chunks, if any): it waits until the client goes away.
	Hang bool `json:"hang"`
	// BodyBase64 is sent, decoded, as the body of a plain response: for
	// bytes a JSON file cannot hold (not UTF-8).
	BodyBase64 string `json:"body_base64"`
	// Endless is sent over and over, for ever, after the Stream chunks
	// (in place of [DONE]) or as the body of a plain response: a server
	// that never stops talking. It ends when the client goes away.
	Endless string `json:"endless"`
}

// writeEndless writes s to w over and over until a write fails.
func writeEndless(w io.Writer, s string) {
	block := []byte(strings.Repeat(s, 32<<10/len(s)+1))
	for {
		if _, err := w.Write(block); err != nil {
			return
		}
	}
}

// cmdFakeModel: fakemodel [-json-object-only] REPLIES.json starts an
// OpenAI-compatible server answering requests in order from the file, sets
// $FAKE_URL to its base URL and appends every request body to
// requests.jsonl in the work directory (with "key_ok": whether the bearer
// token is $FAKE_EXPECT_KEY, when that is set as the server starts). Like
// OpenAI, it rejects with HTTP 400 (without using up a reply) a request that
// breaks the rules of checkOpenAIRequest; -json-object-only also rejects
// response_format json_schema, as servers without structured outputs do.
func cmdFakeModel(ts *testscript.TestScript, neg bool, args []string) {
	jsonObjectOnly := len(args) == 2 && args[0] == "-json-object-only"
	if jsonObjectOnly {
		args = args[1:]
	}
	if neg || len(args) != 1 {
		ts.Fatalf("usage: fakemodel [-json-object-only] REPLIES.json")
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
		if problem := checkOpenAIRequest(body, jsonObjectOnly); problem != "" {
			mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			msg, _ := json.Marshal(problem)
			fmt.Fprintf(w, `{"error":{"message":%s,"type":"invalid_request_error"}}`, msg)
			return
		}
		i := next
		next++
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
			if rep.Hang {
				<-r.Context().Done()
				return
			}
			if rep.Endless != "" {
				writeEndless(w, rep.Endless)
				return
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
		if rep.Hang {
			<-r.Context().Done()
			return
		}
		status := rep.Status
		if status == 0 {
			status = http.StatusOK
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		if rep.Endless != "" {
			writeEndless(w, rep.Endless)
			return
		}
		if rep.BodyBase64 != "" {
			b, err := base64.StdEncoding.DecodeString(rep.BodyBase64)
			if err != nil {
				ts.Fatalf("fakemodel: body_base64: %v", err)
			}
			w.Write(b)
			return
		}
		w.Write(rep.JSON)
	}))
	ts.Defer(srv.Close)
	ts.Setenv("FAKE_URL", srv.URL+"/v1")
}

// checkOpenAIRequest applies the request rules of OpenAI's Chat Completions
// that a client can break without noticing against a lenient local server,
// and returns what is wrong ("" when nothing): tool_choice needs tools;
// response_format json_object needs the word JSON in some message;
// json_schema needs a name and a schema, and with strict every object of
// the schema lists all its properties in required and sets
// additionalProperties to false.
func checkOpenAIRequest(body []byte, jsonObjectOnly bool) string {
	var req struct {
		Messages []struct {
			Content any `json:"content"`
		} `json:"messages"`
		Tools          []any `json:"tools"`
		ToolChoice     any   `json:"tool_choice"`
		ResponseFormat *struct {
			Type       string `json:"type"`
			JSONSchema *struct {
				Name   string          `json:"name"`
				Schema json.RawMessage `json:"schema"`
				Strict bool            `json:"strict"`
			} `json:"json_schema"`
		} `json:"response_format"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return "the request body is not JSON: " + err.Error()
	}
	if req.ToolChoice != nil && len(req.Tools) == 0 {
		return "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified."
	}
	rf := req.ResponseFormat
	if rf == nil {
		return ""
	}
	switch rf.Type {
	case "json_object":
		for _, m := range req.Messages {
			text, _ := json.Marshal(m.Content)
			if strings.Contains(strings.ToLower(string(text)), "json") {
				return ""
			}
		}
		return "'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'."
	case "json_schema":
		if jsonObjectOnly {
			return "response_format of type 'json_schema' is not supported by this model"
		}
		js := rf.JSONSchema
		if js == nil || js.Name == "" {
			return "Missing required parameter: 'response_format.json_schema.name'."
		}
		if len(js.Schema) == 0 {
			return "Missing required parameter: 'response_format.json_schema.schema'."
		}
		if js.Strict {
			var schema any
			if err := json.Unmarshal(js.Schema, &schema); err != nil {
				return "response_format.json_schema.schema is not JSON"
			}
			if problem := strictProblem(schema, "root"); problem != "" {
				return fmt.Sprintf("Invalid schema for response_format '%s': In context=(%s), %s", js.Name, problem, "strict mode rules are not met")
			}
		}
		return ""
	case "text", "":
		return ""
	}
	return fmt.Sprintf("Invalid value: '%s'. Supported values are: 'json_object', 'json_schema', and 'text'.", rf.Type)
}

// strictProblem finds an object schema under v that strict mode refuses:
// a property missing from required, or additionalProperties not false.
func strictProblem(v any, at string) string {
	switch x := v.(type) {
	case []any:
		for i, e := range x {
			if p := strictProblem(e, fmt.Sprintf("%s[%d]", at, i)); p != "" {
				return p
			}
		}
	case map[string]any:
		props, hasProps := x["properties"].(map[string]any)
		if x["type"] == "object" || hasProps {
			if x["additionalProperties"] != false {
				return at + ": 'additionalProperties' is required to be supplied and to be false"
			}
			required := map[string]bool{}
			list, _ := x["required"].([]any)
			for _, r := range list {
				if s, ok := r.(string); ok {
					required[s] = true
				}
			}
			for name := range props {
				if !required[name] {
					return fmt.Sprintf("%s: 'required' is required to be supplied and to be an array including every key in properties. Missing '%s'", at, name)
				}
			}
		}
		for k, e := range x {
			if p := strictProblem(e, at+"."+k); p != "" {
				return p
			}
		}
	}
	return ""
}

// recordedBodies reads the request bodies fakemodel wrote to
// requests.jsonl, as the bytes the server received (compacted by the log
// line, which holds them as JSON).
func recordedBodies(ts *testscript.TestScript) []json.RawMessage {
	var out []json.RawMessage
	for _, line := range strings.Split(strings.TrimSpace(ts.ReadFile("requests.jsonl")), "\n") {
		var rec struct {
			Body json.RawMessage `json:"body"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			ts.Fatalf("requests.jsonl: %v", err)
		}
		out = append(out, rec.Body)
	}
	return out
}

// cmdFakeRequest: fakerequest N prints the body of the Nth request (from 1)
// the fake model server received, so that jsonis can check it.
func cmdFakeRequest(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: fakerequest N")
	}
	n, err := strconv.Atoi(args[0])
	bodies := recordedBodies(ts)
	if err != nil || n < 1 || n > len(bodies) {
		ts.Fatalf("fakerequest: %q is not a request from 1 to %d", args[0], len(bodies))
	}
	ts.Stdout().Write(append(bodies[n-1], '\n'))
}

// cacheMarker is a prompt-caching breakpoint as nexa sends it.
const cacheMarker = `"cache_control":{"type":"ephemeral"}`

// cmdSamePrefix: sameprefix checks that every request the fake model
// server received starts with what the request before it sent: the same
// bytes of tools and system, and the earlier request's messages, byte for
// byte, as its first messages. Only the cache_control markers may move
// (they mark where a request ends, not content), so they are left out of
// the comparison; nothing else is normalised.
func cmdSamePrefix(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: sameprefix")
	}
	type parts struct {
		Tools    json.RawMessage   `json:"tools"`
		System   json.RawMessage   `json:"system"`
		Messages []json.RawMessage `json:"messages"`
	}
	bodies := recordedBodies(ts)
	if len(bodies) < 2 {
		ts.Fatalf("sameprefix needs two requests, the server received %d", len(bodies))
	}
	var prev parts
	for i, b := range bodies {
		s := strings.ReplaceAll(string(b), ","+cacheMarker, "")
		s = strings.ReplaceAll(s, cacheMarker+",", "")
		var p parts
		if err := json.Unmarshal([]byte(s), &p); err != nil {
			ts.Fatalf("request %d: %v", i+1, err)
		}
		if i > 0 {
			if string(p.Tools) != string(prev.Tools) || string(p.System) != string(prev.System) {
				ts.Fatalf("request %d: tools or system differ from request %d's:\n%s %s\n%s %s", i+1, i, prev.Tools, prev.System, p.Tools, p.System)
			}
			if len(p.Messages) <= len(prev.Messages) {
				ts.Fatalf("request %d has %d messages, request %d had %d", i+1, len(p.Messages), i, len(prev.Messages))
			}
			for j := range prev.Messages {
				if string(p.Messages[j]) != string(prev.Messages[j]) {
					ts.Fatalf("request %d: message %d differs from request %d's:\n%s\n%s", i+1, j+1, i, prev.Messages[j], p.Messages[j])
				}
			}
		}
		prev = p
	}
	ts.Logf("%d requests, each extends the one before", len(bodies))
}
