package ir

import "encoding/json"

// Program is the compiled, immutable form of a .nx program and its includes.
// The runtime works only from a Program, never from the AST, so everything a
// run needs is resolved here.
type Program struct {
	// Hash is "sha256:<64 hex>" over the canonical IR and every source
	// byte (docs/reference/language.md#compiled-program-and-hash).
	Hash string `json:"source_hash"`
	// Files are the source files (main first, then includes in a stable
	// order); secrets files are not among them.
	Files     []string    `json:"files"`
	Tools     []*Tool     `json:"tools"`
	Agents    []*Agent    `json:"agents"`
	Protocols []*Protocol `json:"protocols"`
	Decls     []Decl      `json:"declarations"`
	// SecretFiles are the .nxs files that apply to this program (beside
	// the main file and included ones), in load order. Their contents are
	// never part of the IR.
	SecretFiles []string `json:"-"`
	// ActiveConfig is the name of the first `use config NAME`, or "".
	ActiveConfig string `json:"-"`
}

// Tool is one callable tool with the JSON Schema sent to the model.
type Tool struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Parameters is the JSON Schema of the arguments object: generated
	// from Params (ParametersSchema) for the program's own tools, declared
	// for built-in and MCP tools.
	Parameters json.RawMessage `json:"parameters"`
	// Params are the parameters in declaration order: what executors
	// read to bind arguments, and where defaults come from.
	Params           []Param `json:"-"`
	Returns          string  `json:"returns"`
	Risk             string  `json:"risk_level"`
	RequiresApproval bool    `json:"requires_approval"`
	Sandbox          bool    `json:"sandbox"`
	// Timeout is in seconds (default 60).
	Timeout int `json:"timeout"`
	// ApprovalTimeout is how long, in seconds, a call of this tool may
	// wait for a person's decision (the approval_timeout setting); 0
	// means no bound of its own. The compiler accepts it on any tool, but
	// it matters only to calls that wait for approval.
	ApprovalTimeout int  `json:"approval_timeout,omitempty"`
	Idempotent      bool `json:"idempotent"`
	// Exclusive is the parallel: false setting: a call of the tool runs
	// with no other call of its reply running (the tool writes what its
	// siblings read, say, or holds a resource one call at a time). Calls
	// of other tools may run concurrently (docs/reference/runtime.md#call-order).
	Exclusive bool `json:"exclusive,omitempty"`
	// Category is the @tool category setting, or the namespace of a
	// built-in tool ("std.fs"), so that listings can group tools.
	Category string `json:"category,omitempty"`
	Body     Body   `json:"-"`
	File     string `json:"-"`
	Line     int    `json:"-"`
}

// NeedsApproval is the effective approval policy: an explicit
// requires_approval, or a high or critical risk level.
func (t *Tool) NeedsApproval() bool {
	return t.RequiresApproval || t.Risk == "high" || t.Risk == "critical"
}

// BodyKind says which executor runs a tool.
type BodyKind string

// The body kinds of `nexa inspect`.
const (
	BodyPython  BodyKind = "python"
	BodyNative  BodyKind = "native"
	BodySchema  BodyKind = "schema"
	BodyMCP     BodyKind = "mcp"
	BodyBuiltin BodyKind = "builtin"
)

// Body is how a tool is implemented; exactly the fields of its Kind are set
// (none for BodyBuiltin: the runtime's builtin executor runs the tool of
// internal/stdlib with the tool's Name).
type Body struct {
	Kind BodyKind
	// Python is the dedented text of a python! body.
	Python string
	// PythonFile is the path (resolved against the declaring file, and
	// absolute when compiled from disk) of a legacy `python: "file.py"`
	// tool, whose function Name implements it.
	PythonFile string
	// MCP is the server spec of an MCP tool (`tool NAME { mcp: "…" }`): the
	// tool stands for the server, whose own tools the runtime lists; its
	// Parameters are an empty object schema.
	MCP string
	// Native holds the lowered statements of a native body.
	Native []Stmt
}

// Agent is one agent with every setting resolved (properties win over
// decorators) and the exact list of tools it exposes.
type Agent struct {
	Name   string `json:"name"`
	Prompt string `json:"prompt"`
	Role   string `json:"role,omitempty"`
	Model  string `json:"model"`
	// ModelFallbacks are the `fallback:` entries of a list-form model.
	ModelFallbacks []string `json:"model_fallbacks,omitempty"`
	// Tools are the exposed tool names, sorted: the program's tools and
	// the built-in tools of its std entries (by their plain names, each a
	// tool of Program.Tools).
	Tools []string `json:"tools"`
	// ImplicitTools is true when the agent has no uses clause and so sees
	// every @tool function.
	ImplicitTools bool `json:"implicit_tools"`
	// Uses are the uses entries as written (tool names, std.NS, mcp:"…",
	// "file.md").
	Uses       []Use  `json:"uses,omitempty"`
	Implements string `json:"implements"`
	Returns    string `json:"returns,omitempty"`

	MaxToolCalls     int      `json:"-"` // 0: unlimited
	ToolCallStrategy string   `json:"-"` // auto | required | none
	Timeout          int      `json:"-"` // seconds, 0: none
	Retry            int      `json:"-"` // provider retries; -1: unset
	Temperature      *float64 `json:"-"`
	MaxTokens        int      `json:"-"`
	OutputFormat     string   `json:"-"`
	Stream           *bool    `json:"-"`
	// HTTPAllow are the internal hosts (canonical "host" or "host:port",
	// see ParseHTTPAllow) that std.http may reach for this agent; every
	// other loopback, private or otherwise internal address is refused.
	// It is kept in Properties too, so it is part of the program hash.
	HTTPAllow []string `json:"-"`

	// Properties are all resolved properties as JSON values (including
	// those with no effect in nexa agent).
	Properties map[string]any `json:"properties"`
	Requires   []string       `json:"requires,omitempty"`
	Ensures    []string       `json:"ensures,omitempty"`
	File       string         `json:"-"`
	Line       int            `json:"-"`
}

// SystemPrompt is the system message of a run: the prompt, prefixed by the
// role when one is given (docs/reference/language.md#agents).
func (a *Agent) SystemPrompt() string {
	if a.Role == "" {
		return a.Prompt
	}
	if a.Prompt == "" {
		return "Role: " + a.Role + "."
	}
	return "Role: " + a.Role + ". " + a.Prompt
}

// UseKind classifies a uses entry.
type UseKind string

// The kinds of uses entries.
const (
	UseTool  UseKind = "tool"
	UseStd   UseKind = "std"
	UseMCP   UseKind = "mcp"
	UseSkill UseKind = "skill"
)

// Use is one entry of an agent's uses clause.
type Use struct {
	Kind UseKind `json:"kind"`
	// Name is the tool name, the namespace ("std.fs") or single built-in
	// tool ("std.fs.file_read"), the MCP server spec, or the skill file
	// path.
	Name string `json:"name"`
}

// Protocol is a named object type; Schema is its JSON Schema.
type Protocol struct {
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema"`
	File   string          `json:"-"`
	Line   int             `json:"-"`
}

// Decl is any top-level declaration, listed by nexa inspect.
type Decl struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
	File string `json:"file"`
	Line int    `json:"line"`
}

// Tool returns the named tool or nil.
func (p *Program) Tool(name string) *Tool {
	for _, t := range p.Tools {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// Agent returns the named agent or nil.
func (p *Program) Agent(name string) *Agent {
	for _, a := range p.Agents {
		if a.Name == name {
			return a
		}
	}
	return nil
}

// Protocol returns the named protocol or nil.
func (p *Program) Protocol(name string) *Protocol {
	for _, pr := range p.Protocols {
		if pr.Name == name {
			return pr
		}
	}
	return nil
}
