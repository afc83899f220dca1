package mcptool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nexa-run/nexa/internal/tool"
)

// The Tasks extension (io.modelcontextprotocol/tasks) lets a server answer
// tools/call with a task: a handle, durably created before the answer is
// sent, that the client polls with tasks/get until the task completes,
// fails or is cancelled (the result, or the JSON-RPC error, comes inline
// in tasks/get), and may cancel with tasks/cancel. The SDK does not
// implement it yet, so nexa does with the SDK's extension points: custom
// methods for tasks/get and tasks/cancel, and a wrapper of the stdio
// connection (taskConn), or of the HTTP client's transport (taskRewriter,
// tasks_http.go), that hands a task answer to Server.Call through the
// result's _meta, since the SDK's CallToolResult has no field for it.
const (
	// ExtTasks is the extension's identifier, declared in the client
	// capabilities and in every tools/call's per-request capabilities.
	ExtTasks = "io.modelcontextprotocol/tasks"

	metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	// metaTask is the private _meta key under which taskConn passes a
	// task answer to Call. A key of that name sent by a server is dropped.
	metaTask = "nexa/task"

	methodCallTool    = "tools/call"
	methodTasksGet    = "tasks/get"
	methodTasksCancel = "tasks/cancel"
)

// Task statuses of the extension.
const (
	taskWorking       = "working"
	taskInputRequired = "input_required"
	taskCompleted     = "completed"
	taskFailed        = "failed"
	taskCancelled     = "cancelled"
)

// Bounds of the poll interval: a server's pollIntervalMs is honoured within
// them, and DefaultPollInterval is used when it gives none.
var (
	DefaultPollInterval = time.Second
	minPollInterval     = 10 * time.Millisecond
	maxPollInterval     = 5 * time.Minute
	// CancelGrace is how long nexa waits, after tasks/cancel, for the task
	// to reach a final status before it calls the outcome unknown.
	CancelGrace = 5 * time.Second
)

// taskState is a task as the server describes it (CreateTaskResult and
// tasks/get share these fields).
type taskState struct {
	TaskID         string          `json:"taskId"`
	Status         string          `json:"status"`
	StatusMessage  string          `json:"statusMessage,omitempty"`
	PollIntervalMs *int64          `json:"pollIntervalMs,omitempty"`
	Result         json.RawMessage `json:"result,omitempty"`
	Error          *jsonrpc.Error  `json:"error,omitempty"`
}

func (t taskState) pollInterval() time.Duration {
	if t.PollIntervalMs == nil {
		return DefaultPollInterval
	}
	d := time.Duration(*t.PollIntervalMs) * time.Millisecond
	return min(max(d, minPollInterval), maxPollInterval)
}

// ended reports whether the task has its final status (taskOutcome).
func (t taskState) ended() bool {
	return t.Status == taskCompleted || t.Status == taskFailed || t.Status == taskCancelled
}

type taskParams struct {
	mcp.ParamsBase
	TaskID string `json:"taskId"`
}

type getTaskResult struct {
	mcp.ResultBase
	taskState
}

type ackResult struct {
	mcp.ResultBase
}

// registerTaskMethods lets client send tasks/get and tasks/cancel.
func registerTaskMethods(c *mcp.Client) error {
	if err := mcp.AddSendingCustomMethod[*taskParams, *getTaskResult](c, methodTasksGet); err != nil {
		return err
	}
	return mcp.AddSendingCustomMethod[*taskParams, *ackResult](c, methodTasksCancel)
}

// taskTransport wraps a transport's connection in a taskConn.
type taskTransport struct{ mcp.Transport }

func (t taskTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &taskConn{Connection: c, calls: map[string]bool{}}, nil
}

// taskConn notes the ids of tools/call requests going out and rewrites
// their answers: a CreateTaskResult (resultType "task") becomes an empty
// complete result whose _meta carries the task under metaTask, which the
// SDK then hands to Call intact. Only stdio connections are wrapped: the
// SDK's HTTP connection has unexported hooks a wrapper would hide, so HTTP
// answers are rewritten in the response body instead (taskRewriter).
type taskConn struct {
	mcp.Connection
	mu    sync.Mutex
	calls map[string]bool
}

func idKey(id jsonrpc.ID) string { return fmt.Sprintf("%T:%v", id.Raw(), id.Raw()) }

func (c *taskConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() && req.Method == methodCallTool {
		c.mu.Lock()
		c.calls[idKey(req.ID)] = true
		c.mu.Unlock()
	}
	return c.Connection.Write(ctx, msg)
}

func (c *taskConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if resp, ok := msg.(*jsonrpc.Response); ok && err == nil {
		k := idKey(resp.ID)
		c.mu.Lock()
		call := c.calls[k]
		delete(c.calls, k)
		c.mu.Unlock()
		if call && resp.Error == nil {
			resp.Result = rewriteTaskAnswer(resp.Result)
		}
	}
	return msg, err
}

// rewriteTaskAnswer moves a task answer of tools/call under _meta[metaTask]
// and drops a metaTask key the server wrote itself. Anything it cannot
// read is left for the SDK to judge.
func rewriteTaskAnswer(raw json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return raw
	}
	var rt string
	_ = json.Unmarshal(m["resultType"], &rt)
	var meta map[string]json.RawMessage
	if b, ok := m["_meta"]; ok && json.Unmarshal(b, &meta) != nil {
		meta = nil
	}
	_, forged := meta[metaTask]
	if rt != "task" && !forged {
		return raw
	}
	delete(meta, metaTask)
	if rt == "task" {
		if meta == nil {
			meta = map[string]json.RawMessage{}
		}
		meta[metaTask] = raw
		m = map[string]json.RawMessage{"content": json.RawMessage("[]"), "resultType": json.RawMessage(`"complete"`)}
	}
	if len(meta) > 0 {
		b, err := json.Marshal(meta)
		if err != nil {
			return raw
		}
		m["_meta"] = b
	} else {
		delete(m, "_meta")
	}
	out, err := json.Marshal(m)
	if err != nil {
		return raw
	}
	return out
}

// taskOf returns the task a tools/call was answered with, if any.
func taskOf(res *mcp.CallToolResult) (taskState, bool, error) {
	v, ok := res.Meta[metaTask]
	if !ok {
		return taskState{}, false, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return taskState{}, true, err
	}
	var t taskState
	if err := json.Unmarshal(b, &t); err != nil {
		return taskState{}, true, err
	}
	if t.TaskID == "" {
		return taskState{}, true, errors.New("the server answered with a task without a taskId")
	}
	return t, true, nil
}

// taskMeta is the per-request capabilities of a tools/call that declares
// the Tasks extension.
func taskMeta() map[string]any {
	return map[string]any{"extensions": map[string]any{ExtTasks: map[string]any{}}}
}

// awaitTask polls a task until it ends, honouring its poll interval, and
// returns the call's outcome. It stops waiting (tool.ErrDetached) when
// o.Stop closes, ctx ends or the connection is lost; it cancels the task
// when o.Deadline passes or the task asks for input nexa cannot give.
func (s *Server) awaitTask(ctx context.Context, name string, t taskState, o CallOptions) (tool.Outcome, error) {
	var deadline <-chan time.Time
	if !o.Deadline.IsZero() {
		timer := time.NewTimer(time.Until(o.Deadline))
		defer timer.Stop()
		deadline = timer.C
	}
	for {
		if t.ended() {
			return s.taskOutcome(name, t, "")
		}
		if t.Status == taskInputRequired {
			return s.cancelTask(ctx, name, t, "it asked for input, which nexa does not give to a task")
		}
		wait := time.NewTimer(t.pollInterval())
		select {
		case <-wait.C:
		case <-o.Stop:
			wait.Stop()
			return tool.Outcome{}, s.detached(name, t, "the run was asked to stop")
		case <-ctx.Done():
			wait.Stop()
			return tool.Outcome{}, s.detached(name, t, context.Cause(ctx).Error())
		case <-deadline:
			wait.Stop()
			return s.cancelTask(ctx, name, t, "the run's deadline passed")
		}
		next, err := s.getTask(ctx, t.TaskID)
		if err != nil {
			return s.pollFailed(ctx, name, t, err)
		}
		t = next
	}
}

// getTask sends tasks/get.
func (s *Server) getTask(ctx context.Context, id string) (taskState, error) {
	res, err := mcp.CallCustomMethod[*taskParams, *getTaskResult](ctx, s.sess, methodTasksGet, &taskParams{TaskID: id})
	if err != nil {
		return taskState{}, err
	}
	if res.TaskID == "" {
		res.TaskID = id
	}
	if res.TaskID != id {
		return taskState{}, fmt.Errorf("tasks/get for task %s answered about task %s", id, res.TaskID)
	}
	return res.taskState, nil
}

// pollFailed classifies a failed tasks/get: a server's JSON-RPC error (an
// unknown or expired task) leaves the outcome unknown, since the work may
// have happened; a lost connection or an ended ctx only stops the wait.
func (s *Server) pollFailed(ctx context.Context, name string, t taskState, err error) (tool.Outcome, error) {
	var werr *jsonrpc.Error
	if ctx.Err() == nil && errors.As(err, &werr) && !localCode(werr.Code) {
		return tool.Outcome{}, fmt.Errorf("mcptool: tool %s of MCP server %s: the server no longer answers for task %s (%s, code %d); whether it took effect is unknown: %w",
			name, s.spec, t.TaskID, werr.Message, werr.Code, tool.ErrUnknownOutcome)
	}
	if ctx.Err() != nil {
		return tool.Outcome{}, s.detached(name, t, context.Cause(ctx).Error())
	}
	return tool.Outcome{}, s.detached(name, t, "polling it failed: "+err.Error())
}

func (s *Server) detached(name string, t taskState, why string) error {
	return fmt.Errorf("mcptool: tool %s of MCP server %s: stopped waiting for task %s (%s); it goes on at the server and a resume polls it again: %w",
		name, s.spec, t.TaskID, why, tool.ErrDetached)
}

// cancelTask sends tasks/cancel and waits up to CancelGrace for the task to
// end: cancelled is a known failed call, completed or failed its own
// outcome; a task still running, or no answer, is an unknown outcome.
func (s *Server) cancelTask(ctx context.Context, name string, t taskState, why string) (tool.Outcome, error) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), CancelGrace)
	defer cancel()
	if _, err := mcp.CallCustomMethod[*taskParams, *ackResult](cctx, s.sess, methodTasksCancel, &taskParams{TaskID: t.TaskID}); err != nil {
		return tool.Outcome{}, fmt.Errorf("mcptool: tool %s of MCP server %s: nexa cancelled task %s because %s, but the server did not acknowledge it (%v); whether it took effect is unknown: %w",
			name, s.spec, t.TaskID, why, err, tool.ErrUnknownOutcome)
	}
	for {
		next, err := s.getTask(cctx, t.TaskID)
		if err == nil {
			t = next
			if t.ended() {
				return s.taskOutcome(name, t, why)
			}
		}
		wait := time.NewTimer(min(t.pollInterval(), CancelGrace/10))
		select {
		case <-wait.C:
		case <-cctx.Done():
			wait.Stop()
			return tool.Outcome{}, fmt.Errorf("mcptool: tool %s of MCP server %s: nexa cancelled task %s because %s, and it had not ended %s later (status %s); whether it took effect is unknown: %w",
				name, s.spec, t.TaskID, why, CancelGrace, t.Status, tool.ErrUnknownOutcome)
		}
	}
}

// taskOutcome is the outcome of an ended task; why says why nexa cancelled
// it, if it did.
func (s *Server) taskOutcome(name string, t taskState, why string) (tool.Outcome, error) {
	switch t.Status {
	case taskCompleted:
		var res mcp.CallToolResult
		if len(t.Result) == 0 || json.Unmarshal(t.Result, &res) != nil {
			return tool.Outcome{}, fmt.Errorf("mcptool: tool %s of MCP server %s: task %s completed with a result nexa cannot read; whether it took effect is unknown: %w", name, s.spec, t.TaskID, tool.ErrUnknownOutcome)
		}
		return s.outcome(name, &res), nil
	case taskFailed:
		msg, code := "no error given", int64(0)
		if t.Error != nil {
			msg, code = t.Error.Message, t.Error.Code
		}
		if t.StatusMessage != "" {
			msg += " (" + t.StatusMessage + ")"
		}
		return tool.Outcome{Output: fmt.Sprintf("MCP server %s: task %s of tool %s failed: %s (code %d)", s.spec, t.TaskID, name, msg, code)}, nil
	default: // cancelled
		var b strings.Builder
		fmt.Fprintf(&b, "error: task %s of MCP tool %s was cancelled", t.TaskID, name)
		if why != "" {
			fmt.Fprintf(&b, " by nexa because %s", why)
		}
		if t.StatusMessage != "" {
			fmt.Fprintf(&b, ": %s", t.StatusMessage)
		}
		return tool.Outcome{Output: b.String()}, nil
	}
}
