package mcptool

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/nexa-run/nexa/internal/proctree"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nexa-run/nexa/internal/tools/mcptool/mcptest"
)

// The test binary doubles as the MCP test server: with envServer set to
// "stdio" it serves MCP on stdin/stdout, with "http" it serves Streamable
// HTTP on a loopback port whose URL it prints as the first line of stdout.
// The first argument after "serve" picks the variant of the tool set.
const envServer = "NEXA_MCPTOOL_TESTSERVER"

// probeEnv is passed through Options.Env and reported by the whereami tool.
const probeEnv = "NEXA_MCPTOOL_PROBE"

func TestMain(m *testing.M) {
	proctree.RunIfSupervisor() // stdio servers are supervised by this test binary, started again
	if mode := os.Getenv(envServer); mode != "" {
		os.Exit(serveTestServer(mode, os.Args[1:]))
	}
	os.Exit(m.Run())
}

func serveTestServer(mode string, args []string) int {
	variant := "base"
	if len(args) >= 2 && args[0] == "serve" {
		variant = args[1]
	}
	srv := newTestServer(variant, false)
	if variant == "tasks" {
		wd, _ := os.Getwd()
		srv = mcptest.NewTaskServer(wd)
	}
	switch mode {
	case "stdio":
		if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, "test server:", err)
			return 1
		}
		return 0
	case "http":
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Fprintln(os.Stderr, "test server:", err)
			return 1
		}
		fmt.Printf("http://%s/mcp\n", ln.Addr())
		h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
		_ = http.Serve(ln, h)
		return 1
	}
	fmt.Fprintln(os.Stderr, "test server: unknown mode", mode)
	return 2
}

func boolp(b bool) *bool { return &b }

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// newTestServer builds the test tool set. inProcess servers (httptest)
// cannot exit or leave processes behind, so crash_tool and spawn_sleeper
// refuse there; the tool list, and so the schema hash, is the same.
func newTestServer(variant string, inProcess bool) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "nexa-test-server", Version: "1.0.0"}, &mcp.ServerOptions{
		PageSize:     3, // several pages of tools/list
		Capabilities: &mcp.ServerCapabilities{},
	})
	noteSchema := `{"type":"object","properties":{"name":{"type":"string","description":"note name"}},"required":["name"]}`
	if variant == "changed" {
		noteSchema = `{"type":"object","properties":{"name":{"type":"string","description":"note name"},"limit":{"type":"integer"}},"required":["name"]}`
	}
	args := func(req *mcp.CallToolRequest) map[string]any {
		var m map[string]any
		_ = json.Unmarshal(req.Params.Arguments, &m)
		return m
	}
	open := json.RawMessage(`{"type":"object"}`)

	srv.AddTool(&mcp.Tool{Name: "read_note", Description: "Read a note.", InputSchema: json.RawMessage(noteSchema),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text(fmt.Sprintf("note %v", args(req)["name"])), nil
		})
	srv.AddTool(&mcp.Tool{Name: "plain_echo", Description: "Echo text; no annotations.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text(fmt.Sprint(args(req)["text"])), nil
		})
	srv.AddTool(&mcp.Tool{Name: "append_note", Description: "Append to a note.", InputSchema: open,
		Annotations: &mcp.ToolAnnotations{DestructiveHint: boolp(false), IdempotentHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text("appended"), nil
		})
	srv.AddTool(&mcp.Tool{Name: "fail_tool", Description: "Always fails.", InputSchema: open,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			r := text("boom: it failed")
			r.IsError = true
			return r, nil
		})
	srv.AddTool(&mcp.Tool{Name: "protocol_error", Description: "Answers with a JSON-RPC error.", InputSchema: open},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "no such record"}
		})
	srv.AddTool(&mcp.Tool{Name: "crash_tool", Description: "Exits the server mid-call.", InputSchema: open},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if inProcess {
				return text("cannot crash in-process"), nil
			}
			if args(req)["ping"] == true {
				// A request to the client first: over HTTP the
				// response stream is then open when the server dies.
				if err := req.Session.Ping(ctx, nil); err != nil {
					return nil, err
				}
			}
			fmt.Fprintln(os.Stderr, "crash_tool: exiting now")
			os.Exit(3)
			return nil, nil
		})
	srv.AddTool(&mcp.Tool{Name: "slow_tool", Description: "Sleeps ms milliseconds.", InputSchema: json.RawMessage(`{"type":"object","properties":{"ms":{"type":"integer"},"marker":{"type":"string"}}}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ms, _ := args(req)["ms"].(float64)
			if ms == 0 {
				ms = 30000
			}
			// A test learns that the call reached the server from this file.
			if marker, _ := args(req)["marker"].(string); marker != "" {
				_ = os.WriteFile(marker, []byte("running"), 0o644)
			}
			select {
			case <-time.After(time.Duration(ms) * time.Millisecond):
				return text("done"), nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		})
	// gather answers once n calls of its group have arrived: a call that
	// succeeds was in flight at the same time as the n-1 others.
	var (
		gatherMu sync.Mutex
		gathered = map[string]int{}
		gathers  = map[string]chan struct{}{}
	)
	srv.AddTool(&mcp.Tool{Name: "gather", Description: "Waits until n calls of a group arrived.", InputSchema: open,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			a := args(req)
			group, _ := a["group"].(string)
			n, _ := a["n"].(float64)
			gatherMu.Lock()
			ch, ok := gathers[group]
			if !ok {
				ch = make(chan struct{})
				gathers[group] = ch
			}
			gathered[group]++
			if gathered[group] == int(n) {
				close(ch)
			}
			gatherMu.Unlock()
			select {
			case <-ch:
				return text(fmt.Sprintf("%v gathered", a["id"])), nil
			case <-time.After(time.Minute): // only a guard against a hang
				r := text(fmt.Sprintf("%v alone", a["id"]))
				r.IsError = true
				return r, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		})
	srv.AddTool(&mcp.Tool{Name: "echo_meta", Description: "Returns the idempotency key it received.", InputSchema: open,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text(fmt.Sprint(req.Params.Meta[MetaIdempotencyKey])), nil
		})
	srv.AddTool(&mcp.Tool{Name: "mixed_content", Description: "Text, image and resource.", InputSchema: open,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: "hello"},
				&mcp.ImageContent{MIMEType: "image/png", Data: []byte{1, 2, 3}},
				&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///x.txt", MIMEType: "text/plain", Text: "inside"}},
			}}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "structured_only", Description: "Structured content only.", InputSchema: open,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{}, StructuredContent: map[string]any{"b": 2, "a": 1}}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "whereami", Description: "Working directory and probe variable.", InputSchema: open,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			wd, _ := os.Getwd()
			b, _ := json.Marshal(map[string]string{"cwd": wd, "probe": os.Getenv(probeEnv)})
			return text(string(b)), nil
		})
	srv.AddTool(&mcp.Tool{Name: "spawn_sleeper", Description: "Starts a long sleep in the server's process group.", InputSchema: open},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if inProcess {
				return text("cannot spawn in-process"), nil
			}
			cmd := exec.Command("sleep", "300")
			if err := cmd.Start(); err != nil {
				r := text(err.Error())
				r.IsError = true
				return r, nil
			}
			go func() { _ = cmd.Wait() }()
			return text(fmt.Sprint(cmd.Process.Pid)), nil
		})
	return srv
}

func mcpHTTPHandler(srv *mcp.Server) http.Handler {
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
}
