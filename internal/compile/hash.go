package compile

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// hashVersion changes whenever the canonical encoding changes, so that an
// old hash never matches a new encoding by accident.
const hashVersion = "nexa-ir-1"

// canonical is the encoding of the IR that the hash covers. Struct fields
// encode in declaration order and maps with sorted keys, so the bytes are
// stable. File paths are left out (they depend on the machine and on how
// the file was named); files are identified by their position in the
// program's file order.
type canonical struct {
	Version   string          `json:"version"`
	Config    string          `json:"active_config"`
	Tools     []canonTool     `json:"tools"`
	Agents    []canonAgent    `json:"agents"`
	Protocols []canonProtocol `json:"protocols"`
	Decls     []canonDecl     `json:"declarations"`
}

type canonTool struct {
	Name             string          `json:"name"`
	Description      string          `json:"description"`
	Parameters       json.RawMessage `json:"parameters"`
	Returns          string          `json:"returns"`
	Risk             string          `json:"risk_level"`
	RequiresApproval bool            `json:"requires_approval"`
	Sandbox          bool            `json:"sandbox"`
	Timeout          int             `json:"timeout"`
	Idempotent       bool            `json:"idempotent"`
	Category         string          `json:"category"`
	Body             canonBody       `json:"body"`
}

type canonBody struct {
	Kind       BodyKind `json:"kind"`
	Python     string   `json:"python"`
	PythonFile string   `json:"python_file"`
	MCP        string   `json:"mcp"`
	Native     []Stmt   `json:"native"`
}

type canonAgent struct {
	Name             string         `json:"name"`
	Prompt           string         `json:"prompt"`
	Role             string         `json:"role"`
	Model            string         `json:"model"`
	ModelFallbacks   []string       `json:"model_fallbacks"`
	Tools            []string       `json:"tools"`
	ImplicitTools    bool           `json:"implicit_tools"`
	Uses             []Use          `json:"uses"`
	Implements       string         `json:"implements"`
	Returns          string         `json:"returns"`
	MaxToolCalls     int            `json:"max_tool_calls"`
	ToolCallStrategy string         `json:"tool_call_strategy"`
	Timeout          int            `json:"timeout"`
	Retry            int            `json:"retry"`
	Temperature      *float64       `json:"temperature"`
	MaxTokens        int            `json:"max_tokens"`
	OutputFormat     string         `json:"output_format"`
	Stream           *bool          `json:"stream"`
	Properties       map[string]any `json:"properties"`
	Requires         []string       `json:"requires"`
	Ensures          []string       `json:"ensures"`
}

type canonProtocol struct {
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema"`
}

type canonDecl struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
	File int    `json:"file"`
	Line int    `json:"line"`
}

// CanonicalIR returns the canonical encoding of the program's IR that the
// hash covers (without the source bytes). Tests and tools use it to see
// what the hash depends on.
func CanonicalIR(p *Program) ([]byte, error) {
	fileIdx := map[string]int{}
	for i, f := range p.Files {
		fileIdx[f] = i
	}
	c := canonical{Version: hashVersion, Config: p.ActiveConfig,
		Tools: []canonTool{}, Agents: []canonAgent{}, Protocols: []canonProtocol{}, Decls: []canonDecl{}}
	for _, t := range p.Tools {
		c.Tools = append(c.Tools, canonTool{
			Name: t.Name, Description: t.Description, Parameters: t.Parameters, Returns: t.Returns,
			Risk: t.Risk, RequiresApproval: t.RequiresApproval, Sandbox: t.Sandbox, Timeout: t.Timeout,
			Idempotent: t.Idempotent, Category: t.Category,
			Body: canonBody{Kind: t.Body.Kind, Python: t.Body.Python, PythonFile: relToMain(p, t.Body.PythonFile),
				MCP: t.Body.MCP, Native: t.Body.Native},
		})
	}
	for _, a := range p.Agents {
		c.Agents = append(c.Agents, canonAgent{
			Name: a.Name, Prompt: a.Prompt, Role: a.Role, Model: a.Model, ModelFallbacks: a.ModelFallbacks,
			Tools: a.Tools, ImplicitTools: a.ImplicitTools, Uses: a.Uses, Implements: a.Implements,
			Returns: a.Returns, MaxToolCalls: a.MaxToolCalls, ToolCallStrategy: a.ToolCallStrategy,
			Timeout: a.Timeout, Retry: a.Retry, Temperature: a.Temperature, MaxTokens: a.MaxTokens,
			OutputFormat: a.OutputFormat, Stream: a.Stream, Properties: a.Properties,
			Requires: a.Requires, Ensures: a.Ensures,
		})
	}
	for _, pr := range p.Protocols {
		c.Protocols = append(c.Protocols, canonProtocol{Name: pr.Name, Schema: pr.Schema})
	}
	for _, d := range p.Decls {
		c.Decls = append(c.Decls, canonDecl{Kind: d.Kind, Name: d.Name, File: fileIdx[d.File], Line: d.Line})
	}
	b, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("encode canonical IR: %w", err)
	}
	return b, nil
}

// relToMain makes a path relative to the main file's directory when it is
// under it, so that the hash does not depend on where the program lives.
func relToMain(p *Program, path string) string {
	if path == "" || len(p.Files) == 0 {
		return path
	}
	return relativeTo(p.Files[0], path)
}

// hash computes Program.Hash: sha256 over the canonical IR followed by the
// length and bytes of every source file in program order (and the bytes of
// legacy python: files, which are source too).
func (c *compiler) hash(p *Program) string {
	ir, err := CanonicalIR(p)
	if err != nil {
		// the IR holds only encodable values; keep the hash defined
		ir = []byte(err.Error())
	}
	h := sha256.New()
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "%s\n%d\n", hashVersion, len(ir))
	h.Write(buf.Bytes())
	h.Write(ir)
	for _, s := range c.sources {
		fmt.Fprintf(h, "\nsource %d\n", len(s.data))
		h.Write(s.data)
	}
	for _, b := range c.extra {
		fmt.Fprintf(h, "\npython %d\n", len(b))
		h.Write(b)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}
