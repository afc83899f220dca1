// Package mcptest is an MCP server for nexa's tests that implements the
// Tasks extension (io.modelcontextprotocol/tasks) the way a durable server
// does: a task is written to a file before its id is sent, so a new server
// process in the same directory answers for the tasks of the one before
// (as a crash test needs, where the server dies with nexa). It is
// imported by tests only, so it is never part of a release binary.
//
// Tools:
//   - long_write {text}: a task that appends text to effects.txt when it
//     completes, at the Polls-th tasks/get (default 2), and says "wrote TEXT";
//     destructiveHint false, so no approval is needed. With the file
//     variant-changed in the directory, it has no annotations (so it is
//     destructive and needs approval), which changes the tool list.
//   - never_ends: a task that stays working until tasks/cancel, which
//     writes its id to cancelled.txt.
//   - count_words {text}: answers at once with structuredContent
//     {"words": N} under an output schema; text containing "break" makes
//     it answer {"words": "many"}, which the schema refuses.
//   - sign_up {text}: asks for input first (input_required, revision
//     2026-07-28): a form for the account (name, seats, plan, invoice;
//     name required); the retry with the answer appends "TEXT NAME
//     seats=N" to signups.txt. Each time it asks it appends to asked.txt.
//   - open_link {text}: asks the person to visit ConsentURL (a URL
//     request); the retry with an accepted answer appends TEXT to
//     links.txt.
//
// A task tool called without the extension in the request's capabilities
// is refused with -32003, as the extension requires.
//
// The server runs over stdio (Server.Run) or over Streamable HTTP
// (HTTPHandler, stateless or with sessions, narrowed to earlier protocol
// revisions by NewTaskServer's versions), optionally behind an
// Authorizer: a token endpoint for the client-credentials grant and the
// bearer check of a server that requires it (auth.go).
package mcptest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Polls is how many tasks/get a long_write task answers "working" to
// before it completes.
var Polls = 2

const ext = "io.modelcontextprotocol/tasks"

type task struct {
	ID     string          `json:"taskId"`
	Tool   string          `json:"tool"`
	Text   string          `json:"text"`
	Status string          `json:"status"`
	Polls  int             `json:"polls"`
	Result json.RawMessage `json:"result,omitempty"`
}

type taskParams struct {
	mcp.ParamsBase
	TaskID string `json:"taskId"`
}

type taskResult struct {
	mcp.ResultBase
	ResultType     string          `json:"resultType"`
	TaskID         string          `json:"taskId"`
	Status         string          `json:"status"`
	StatusMessage  string          `json:"statusMessage,omitempty"`
	CreatedAt      string          `json:"createdAt"`
	LastUpdatedAt  string          `json:"lastUpdatedAt"`
	TTLMs          *int64          `json:"ttlMs"`
	PollIntervalMs int64           `json:"pollIntervalMs"`
	Result         json.RawMessage `json:"result,omitempty"`
}

type ack struct {
	mcp.ResultBase
	ResultType string `json:"resultType"`
}

type store struct {
	dir string
	mu  sync.Mutex
}

func (s *store) path(id string) string { return filepath.Join(s.dir, ".tasks", id+".json") }

func (s *store) load(id string) (*task, error) {
	b, err := os.ReadFile(s.path(id))
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Failed to retrieve task: Task not found"}
	}
	var t task
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// save writes the task durably (a rename), before any answer about it.
func (s *store) save(t *task) error {
	if err := os.MkdirAll(filepath.Join(s.dir, ".tasks"), 0o755); err != nil {
		return err
	}
	b, _ := json.Marshal(t)
	tmp := s.path(t.ID) + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, s.path(t.ID))
}

func (s *store) appendFile(name, line string) error {
	f, err := os.OpenFile(filepath.Join(s.dir, name), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = fmt.Fprintln(f, line)
	return err
}

func answer(t *task, resultType string) *taskResult {
	now := time.Now().UTC().Format(time.RFC3339)
	return &taskResult{ResultType: resultType, TaskID: t.ID, Status: t.Status, CreatedAt: now, LastUpdatedAt: now, PollIntervalMs: 20, Result: t.Result}
}

func textResult(s string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": s}}})
	return b
}

// declaresTasks reports whether a request's per-request capabilities name
// the extension.
func declaresTasks(meta map[string]any) bool {
	caps, _ := meta["io.modelcontextprotocol/clientCapabilities"].(map[string]any)
	exts, _ := caps["extensions"].(map[string]any)
	_, ok := exts[ext]
	return ok
}

// NewTaskServer returns the server, keeping its tasks and effects in dir.
// versions, when given, are the only protocol revisions it speaks (say
// "2025-11-25", for a server of before server/discover); by default it
// speaks every revision the SDK knows.
func NewTaskServer(dir string, versions ...string) *mcp.Server {
	st := &store{dir: dir}
	srv := mcp.NewServer(&mcp.Implementation{Name: "nexa-tasks", Version: "1.0.0"}, &mcp.ServerOptions{
		Capabilities:              &mcp.ServerCapabilities{Extensions: map[string]any{ext: map[string]any{}}},
		SupportedProtocolVersions: versions,
	})
	textSchema := json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)
	ann := &mcp.ToolAnnotations{DestructiveHint: new(bool)}
	if _, err := os.Stat(filepath.Join(dir, "variant-changed")); err == nil {
		ann = nil
	}
	// The task tools' handlers never run: the middleware answers first.
	never := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, errors.New("not reached")
	}
	srv.AddTool(&mcp.Tool{Name: "long_write", Description: "Append text to effects.txt, as a task.", InputSchema: textSchema, Annotations: ann}, never)
	srv.AddTool(&mcp.Tool{Name: "never_ends", Description: "A task that runs until cancelled.", InputSchema: json.RawMessage(`{"type":"object"}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, never)
	srv.AddTool(&mcp.Tool{Name: "count_words", Description: "Count the words of a text.", InputSchema: textSchema,
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"words":{"type":"integer"}},"required":["words"]}`),
		Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var a struct{ Text string }
			_ = json.Unmarshal(req.Params.Arguments, &a)
			var words any = len(strings.Fields(a.Text))
			if strings.Contains(a.Text, "break") {
				words = "many"
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("counted: %v", words)}},
				StructuredContent: map[string]any{"words": words}}, nil
		})
	addInputTools(srv, st)
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			p, ok := req.GetParams().(*mcp.CallToolParamsRaw)
			if method != "tools/call" || !ok || (p.Name != "long_write" && p.Name != "never_ends") {
				return next(ctx, method, req)
			}
			if !declaresTasks(p.Meta) {
				return nil, &jsonrpc.Error{Code: -32003, Message: "Missing required client capability: " + ext}
			}
			var a struct{ Text string }
			_ = json.Unmarshal(p.Arguments, &a)
			b := make([]byte, 16)
			_, _ = rand.Read(b)
			t := &task{ID: hex.EncodeToString(b), Tool: p.Name, Text: a.Text, Status: "working"}
			st.mu.Lock()
			defer st.mu.Unlock()
			if err := st.save(t); err != nil {
				return nil, err
			}
			return answer(t, "task"), nil
		}
	})
	_ = mcp.AddReceivingCustomMethod(srv, "tasks/get", func(_ context.Context, _ *mcp.ServerSession, p *taskParams) (*taskResult, error) {
		st.mu.Lock()
		defer st.mu.Unlock()
		t, err := st.load(p.TaskID)
		if err != nil {
			return nil, err
		}
		if t.Status == "working" {
			t.Polls++
			if t.Tool == "long_write" && t.Polls >= Polls {
				if err := st.appendFile("effects.txt", t.Text); err != nil {
					return nil, err
				}
				t.Status, t.Result = "completed", textResult("wrote "+t.Text)
			}
			if err := st.save(t); err != nil {
				return nil, err
			}
		}
		return answer(t, "complete"), nil
	})
	_ = mcp.AddReceivingCustomMethod(srv, "tasks/cancel", func(_ context.Context, _ *mcp.ServerSession, p *taskParams) (*ack, error) {
		st.mu.Lock()
		defer st.mu.Unlock()
		t, err := st.load(p.TaskID)
		if err != nil {
			return nil, err
		}
		if t.Status == "working" {
			t.Status = "cancelled"
			if err := st.save(t); err != nil {
				return nil, err
			}
			if err := st.appendFile("cancelled.txt", t.ID); err != nil {
				return nil, err
			}
		}
		return &ack{ResultType: "complete"}, nil
	})
	return srv
}
