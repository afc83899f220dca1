package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/nexa-run/nexa/internal/tools/mcptool/mcptest"
)

// notesServer is a small MCP server over stdio for the end-to-end stories:
// a read-only tool, an unannotated (so destructive) tool that writes a file
// in its working directory, a tool that kills the server mid-call, a tool
// that shows the server's environment (in its result, on stderr and in
// env-mcp.txt) as a prompt-injected server would, and one that stays in
// flight until released (write_later).
func notesServer() {
	if err := newNotesServer(".").Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// cmdNotesHTTP: notes-http starts the notes server over Streamable HTTP in
// the test process, keeping its notes in the work directory, and sets
// $NOTES_URL.
func cmdNotesHTTP(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: notes-http")
	}
	srv := newNotesServer(ts.MkAbs("."))
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	hs := httptest.NewServer(h)
	ts.Defer(hs.Close)
	ts.Setenv("NOTES_URL", hs.URL+"/mcp")
}

// cmdMCPOAuthHTTP: mcp-oauth-http CLIENT_ID SECRET starts, in the test
// process, the MCP test server with tasks (mcptest) over stateless
// Streamable HTTP, keeping its tasks and effects in the work directory,
// behind a bearer check, and the token endpoint of the one client it
// knows (the client-credentials grant); it sets $MCP_URL and $TOKEN_URL.
// A request without a valid token is answered 401 with a Bearer challenge.
func cmdMCPOAuthHTTP(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: mcp-oauth-http CLIENT_ID SECRET")
	}
	a := mcptest.NewAuthorizer(args[0], args[1])
	a.ExpiresIn = 3600
	tokens := httptest.NewServer(a.TokenHandler())
	ts.Defer(tokens.Close)
	srv := httptest.NewServer(a.Require(mcptest.HTTPHandler(mcptest.NewTaskServer(ts.MkAbs(".")), true, false)))
	ts.Defer(srv.Close)
	ts.Setenv("MCP_URL", srv.URL+"/mcp")
	ts.Setenv("TOKEN_URL", tokens.URL+"/token")
}

// newNotesServer builds the notes tools over the notes in dir.
func newNotesServer(dir string) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1.0.0"}, nil)
	arg := func(req *mcp.CallToolRequest, k string) string {
		var m map[string]any
		_ = json.Unmarshal(req.Params.Arguments, &m)
		return fmt.Sprint(m[k])
	}
	reply := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	nameSchema := json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)
	srv.AddTool(&mcp.Tool{Name: "read_note", Description: "Read a note.", InputSchema: nameSchema,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			b, err := os.ReadFile(filepath.Join(dir, arg(req, "name")+".note"))
			if err != nil {
				r := reply("no such note")
				r.IsError = true
				return r, nil
			}
			return reply(string(b)), nil
		})
	srv.AddTool(&mcp.Tool{Name: "write_note", Description: "Write a note.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"},"text":{"type":"string"}},"required":["name","text"]}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			f, err := os.OpenFile(filepath.Join(dir, arg(req, "name")+".note"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
			if err != nil {
				return nil, err
			}
			defer f.Close()
			fmt.Fprintln(f, arg(req, "text"))
			return reply("written"), nil
		})
	srv.AddTool(&mcp.Tool{Name: "crash", Description: "Dies mid-call.", InputSchema: json.RawMessage(`{"type":"object"}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if dir != "." {
				// In the test process (HTTP): dying would end the test.
				r := reply("cannot crash in-process")
				r.IsError = true
				return r, nil
			}
			os.WriteFile(filepath.Join(dir, "crashed.txt"), []byte("1"), 0o644)
			os.Exit(3)
			return nil, nil
		})
	srv.AddTool(&mcp.Tool{Name: "dump_env", Description: "Show the environment.", InputSchema: json.RawMessage(`{"type":"object"}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			env := strings.Join(os.Environ(), "\n") + "\n"
			fmt.Fprint(os.Stderr, env)
			if err := os.WriteFile(filepath.Join(dir, "env-mcp.txt"), []byte(env), 0o644); err != nil {
				return nil, err
			}
			return reply(env), nil
		})
	srv.AddTool(&mcp.Tool{Name: "write_later", Description: "Writes late.txt from a child process once release exists.",
		InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if dir != "." {
				r := reply("runs over stdio only")
				r.IsError = true
				return r, nil
			}
			return writeLater()
		})
	return srv
}

// writeLater is a call that stays in flight: the server and a child it
// starts record their pids, the child marks "ready", and both write
// late.txt only once the story creates "release".
func writeLater() (*mcp.CallToolResult, error) {
	pids, err := os.OpenFile("pids", os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	fmt.Fprintln(pids, os.Getpid())
	pids.Close()
	child := exec.Command("/bin/sh", "-c",
		`echo $$ >> pids; touch ready; while [ ! -e release ]; do sleep 0.05; done; echo child >> late.txt`)
	if err := child.Start(); err != nil {
		return nil, err
	}
	for {
		if _, err := os.Stat("release"); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	f, err := os.OpenFile("late.txt", os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	fmt.Fprintln(f, "server")
	f.Close()
	_ = child.Wait()
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "written late"}}}, nil
}

// tasksServer is the MCP test server with durable tasks
// (internal/tools/mcptool/mcptest) over stdio, keeping its tasks and
// effects in its working directory, the run's.
func tasksServer() {
	if err := mcptest.NewTaskServer(".").Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
