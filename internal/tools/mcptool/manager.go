package mcptool

import (
	"context"
	"errors"
	"fmt"
	"github.com/nexa-run/nexa/internal/tool"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nexa-run/nexa/internal/ir"
	"github.com/nexa-run/nexa/internal/state"
)

// DefaultToolTimeout is the timeout, in seconds, of the ir.Tool built
// for an MCP tool (the same default as declared tools).
const DefaultToolTimeout = 60

// Manager holds the MCP servers of one run: it connects each spec once,
// refuses two servers offering the same tool name, routes calls by tool
// name (it is the tool.Executor of ir.BodyMCP) and closes them all.
// Its methods are safe for concurrent use.
type Manager struct {
	opts Options

	mu      sync.Mutex
	servers []*Server          // in the order they were added
	bySpec  map[string]*Server // by Spec.Raw
	byTool  map[string]*Server
	closed  bool
}

// The Manager runs MCP tools for the runtime.
var _ tool.Executor = (*Manager)(nil)

// NewManager returns an empty manager whose servers will be connected with
// opts. A shared Log writer is serialised, since several servers write to
// it.
func NewManager(opts Options) *Manager {
	if opts.Log != nil {
		opts.Log = &lockedWriter{w: opts.Log}
	}
	return &Manager{opts: opts, bySpec: map[string]*Server{}, byTool: map[string]*Server{}}
}

// Connect parses and connects every spec not connected yet (concurrently:
// starting `npx` servers one after another would add up), then adds them
// in the order given. If any spec is invalid, any server fails to connect,
// or a tool name is offered by two servers, the servers connected by this
// call are closed, the manager is unchanged, and the error names the
// culprits.
func (m *Manager) Connect(ctx context.Context, specs ...string) error {
	var parsed []Spec
	seen := map[string]bool{}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return errors.New("mcptool: the MCP manager is closed")
	}
	for _, raw := range specs {
		sp, err := ParseSpec(raw)
		if err != nil {
			m.mu.Unlock()
			return err
		}
		if m.bySpec[sp.Raw] != nil || seen[sp.Raw] {
			continue
		}
		seen[sp.Raw] = true
		parsed = append(parsed, sp)
	}
	m.mu.Unlock()

	servers := make([]*Server, len(parsed))
	errs := make([]error, len(parsed))
	var wg sync.WaitGroup
	for i, sp := range parsed {
		wg.Add(1)
		go func() {
			defer wg.Done()
			servers[i], errs[i] = Connect(ctx, sp, m.opts)
		}()
	}
	wg.Wait()
	closeNew := func() {
		for _, s := range servers {
			if s != nil {
				_ = s.Close()
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		closeNew()
		return err
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		closeNew()
		return errors.New("mcptool: the MCP manager was closed while servers were connecting")
	}
	byTool := map[string]*Server{}
	for k, v := range m.byTool {
		byTool[k] = v
	}
	var clashes []string
	for _, s := range servers {
		for _, t := range s.tools {
			if other := byTool[t.Name]; other != nil {
				clashes = append(clashes, fmt.Sprintf("tool %q is offered by both MCP server %s and MCP server %s", t.Name, other.spec, s.spec))
				continue
			}
			byTool[t.Name] = s
		}
	}
	if len(clashes) > 0 {
		closeNew()
		return fmt.Errorf("mcptool: %w: %s; an agent can use only one of them", ErrToolClash, strings.Join(clashes, "; "))
	}
	for _, s := range servers {
		m.servers = append(m.servers, s)
		m.bySpec[s.spec.Raw] = s
	}
	m.byTool = byTool
	return nil
}

// ErrToolClash is wrapped by the error of Connect when two servers offer a
// tool of the same name: a configuration error of the program, not a failure
// of a server.
var ErrToolClash = errors.New("MCP tool name clash")

// Servers returns the connected servers in the order they were added.
func (m *Manager) Servers() []*Server {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*Server(nil), m.servers...)
}

// Server returns the server connected for spec (as written, spaces
// trimmed), or nil.
func (m *Manager) Server(spec string) *Server {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.bySpec[strings.TrimSpace(spec)]
}

// ServerFor returns the server that offers the named tool, or nil.
func (m *Manager) ServerFor(tool string) *Server {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.byTool[tool]
}

// Records returns what a run stores about its servers (spec and schema
// hash, in the order added) for the resume check.
func (m *Manager) Records() []state.MCPServer {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]state.MCPServer, len(m.servers))
	for i, s := range m.servers {
		out[i] = state.MCPServer{Spec: s.spec.Raw, SchemaHash: s.hash}
	}
	return out
}

// Tools returns the tools of every server as compile tools, sorted by
// name, ready to be exposed (engine.Config.ExtraTools).
func (m *Manager) Tools() []*ir.Tool {
	var out []*ir.Tool
	for _, s := range m.Servers() {
		out = append(out, s.CompileTools()...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// CompileTools returns the server's tools as compile tools: the schema the
// model sees, the risk level (high needs approval) and idempotent flag of
// ToolInfo (from the annotations only when the server is trusted), the
// description with an untrusted server's hints (callDescription), the
// default timeout, and a BodyMCP body naming this server.
func (s *Server) CompileTools() []*ir.Tool {
	out := make([]*ir.Tool, len(s.tools))
	for i, t := range s.tools {
		desc := t.callDescription(s.spec.Raw)
		// A server's schema that cannot be read leaves the tool
		// without Params: arguments then pass as the model sent them.
		params, _ := ir.ParamsFromSchema(t.InputSchema)
		out[i] = &ir.Tool{
			Name:        t.Name,
			Description: desc,
			Parameters:  append([]byte(nil), t.InputSchema...),
			Params:      params,
			Returns:     "string",
			Risk:        t.Risk,
			Timeout:     DefaultToolTimeout,
			Idempotent:  t.Idempotent,
			Category:    "mcp",
			Body:        ir.Body{Kind: ir.BodyMCP, MCP: s.spec.Raw},
		}
	}
	return out
}

// Execute runs inv.Tool on the server that offers it (the one named by its
// BodyMCP spec when that is connected), the request within inv.Timeout,
// passing the invocation's idempotency key in _meta. A task the server
// answers with is handed to inv.Handed and polled until it ends, within
// the run's deadline (inv.DeadlineIn) and until inv.Stop closes. Outcomes
// and errors are those of Server.CallWith.
func (m *Manager) Execute(ctx context.Context, inv tool.Invocation) (tool.Outcome, error) {
	srv, err := m.serverOf(inv)
	if err != nil {
		return tool.Outcome{}, fmt.Errorf("%w: %w", err, tool.ErrNotExecuted)
	}
	return srv.CallWith(ctx, inv.Tool.Name, inv.Arguments, callOptions(inv))
}

// Resume polls the task of a call an earlier process started (its id,
// journaled through inv.Handed) until it ends; see Server.Resume.
func (m *Manager) Resume(ctx context.Context, inv tool.Invocation, taskID string) (tool.Outcome, error) {
	srv, err := m.serverOf(inv)
	if err != nil {
		return tool.Outcome{}, fmt.Errorf("%w: task %s not polled: %w", err, taskID, tool.ErrDetached)
	}
	return srv.Resume(ctx, inv.Tool.Name, taskID, callOptions(inv))
}

// The manager picks up the tasks of earlier calls.
var _ tool.Resumer = (*Manager)(nil)

func (m *Manager) serverOf(inv tool.Invocation) (*Server, error) {
	if inv.Tool == nil {
		return nil, errors.New("mcptool: invocation without a tool")
	}
	var srv *Server
	if inv.Tool.Body.Kind == ir.BodyMCP && inv.Tool.Body.MCP != "" {
		srv = m.Server(inv.Tool.Body.MCP)
	}
	if srv == nil {
		srv = m.ServerFor(inv.Tool.Name)
	}
	if srv == nil {
		return nil, fmt.Errorf("mcptool: no connected MCP server offers tool %s", inv.Tool.Name)
	}
	return srv, nil
}

func callOptions(inv tool.Invocation) CallOptions {
	o := CallOptions{Timeout: inv.Timeout, Stop: inv.Stop, Handed: inv.Handed, Input: inv.Input}
	if inv.RunID != "" || inv.CallID != "" {
		o.IdempotencyKey = inv.IdempotencyKey()
	}
	if inv.DeadlineIn > 0 {
		o.Deadline = time.Now().Add(inv.DeadlineIn)
	}
	return o
}

// timeoutCause is the cause of a call's context when the tool's timeout
// ends it, so the message says which timeout.
type timeoutCause time.Duration

func (t timeoutCause) Error() string {
	return fmt.Sprintf("the tool's timeout of %s passed", time.Duration(t))
}

// Is makes the cause match context.DeadlineExceeded.
func (t timeoutCause) Is(target error) bool { return target == context.DeadlineExceeded }

// Close closes every server (concurrently, since each may wait for a
// child to exit) and returns their errors joined. Later calls fail as not
// executed.
func (m *Manager) Close() error {
	m.mu.Lock()
	servers := m.servers
	m.servers, m.bySpec, m.byTool = nil, map[string]*Server{}, map[string]*Server{}
	m.closed = true
	m.mu.Unlock()
	errs := make([]error, len(servers))
	var wg sync.WaitGroup
	for i, s := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.Close()
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
