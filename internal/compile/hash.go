package compile

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/nexa-run/nexa/internal/ir"
)

// hashVersion changes whenever the canonical encoding changes, so that an
// old hash never matches a new encoding by accident.
const hashVersion = "nexa-ir-1"

// CanonicalIR returns the canonical encoding of the program's IR that the
// hash covers (without the source bytes): the canonical JSON of
// canonicalJSON, fields in the order of the types below. File paths are
// left out (they depend on the machine and on how the file was named);
// declarations name their file by its index in Files. Tests and tools use
// it to see what the hash depends on.
func CanonicalIR(p *ir.Program) []byte {
	return ir.CanonicalJSON(canonicalForm(p))
}

// The canonical IR. Field order is part of the encoding, and so of every
// program hash: changing it (or a field) needs a new hashVersion.
//
// Every field of the IR (internal/ir, from ir.Program down) is either
// encoded here or left out for a reason written in irFieldCoverage
// (hash_fields_test.go): a field added to the IR without that decision
// fails a test, and so does a decision the encoding does not keep.
type (
	irProgram struct {
		Version      string       `json:"version"`
		ActiveConfig string       `json:"active_config"`
		Tools        []irTool     `json:"tools"`
		Agents       []irAgent    `json:"agents"`
		Protocols    []irProtocol `json:"protocols"`
		Decls        []irDecl     `json:"declarations"`
	}
	irTool struct {
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
		Body             irBody          `json:"body"`
		// ApprovalTimeout is left out when zero, so that every program
		// that does not set it encodes (and hashes) exactly as before the
		// setting existed: runs stored then still resume. A program that
		// sets it had no such encoding before, so no hash can collide.
		ApprovalTimeout int `json:"approval_timeout,omitempty"`
		// Exclusive (parallel: false) is left out when false, for the
		// same reason: programs that do not set it keep their hash.
		Exclusive bool `json:"exclusive,omitempty"`
	}
	irBody struct {
		Kind       string `json:"kind"`
		Python     string `json:"python"`
		PythonFile string `json:"python_file"`
		MCP        string `json:"mcp"`
		Native     []any  `json:"native"`
	}
	irAgent struct {
		Name             string         `json:"name"`
		Prompt           string         `json:"prompt"`
		Role             string         `json:"role"`
		Model            string         `json:"model"`
		ModelFallbacks   []string       `json:"model_fallbacks"`
		Tools            []string       `json:"tools"`
		ImplicitTools    bool           `json:"implicit_tools"`
		Uses             []irUse        `json:"uses"`
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
	irUse struct {
		Kind string `json:"kind"`
		Name string `json:"name"`
	}
	irProtocol struct {
		Name   string          `json:"name"`
		Schema json.RawMessage `json:"schema"`
	}
	irDecl struct {
		Kind string `json:"kind"`
		Name string `json:"name"`
		File int    `json:"file"`
		Line int    `json:"line"`
	}
)

// canonicalForm is the program as the canonical IR shows it.
func canonicalForm(p *ir.Program) *irProgram {
	fileIdx := make(map[string]int, len(p.Files))
	for i, f := range p.Files {
		fileIdx[f] = i
	}
	cf := &irProgram{
		Version: hashVersion, ActiveConfig: p.ActiveConfig,
		Tools:     make([]irTool, len(p.Tools)),
		Agents:    make([]irAgent, len(p.Agents)),
		Protocols: make([]irProtocol, len(p.Protocols)),
		Decls:     make([]irDecl, len(p.Decls)),
	}
	for i, t := range p.Tools {
		cf.Tools[i] = irTool{
			Name: t.Name, Description: t.Description, Parameters: t.Parameters, Returns: t.Returns,
			Risk: t.Risk, RequiresApproval: t.RequiresApproval, Sandbox: t.Sandbox, Timeout: t.Timeout,
			Idempotent: t.Idempotent, Category: t.Category, ApprovalTimeout: t.ApprovalTimeout,
			Exclusive: t.Exclusive,
			Body: irBody{
				Kind: string(t.Body.Kind), Python: t.Body.Python,
				PythonFile: relToMain(p, t.Body.PythonFile), MCP: t.Body.MCP,
				Native: ir.StmtsJSON(t.Body.Native),
			},
		}
	}
	for i, a := range p.Agents {
		uses := make([]irUse, len(a.Uses))
		for j, u := range a.Uses {
			uses[j] = irUse{Kind: string(u.Kind), Name: u.Name}
		}
		cf.Agents[i] = irAgent{
			Name: a.Name, Prompt: a.Prompt, Role: a.Role, Model: a.Model, ModelFallbacks: a.ModelFallbacks,
			Tools: a.Tools, ImplicitTools: a.ImplicitTools, Uses: uses, Implements: a.Implements,
			Returns: a.Returns, MaxToolCalls: a.MaxToolCalls, ToolCallStrategy: a.ToolCallStrategy,
			Timeout: a.Timeout, Retry: a.Retry, Temperature: a.Temperature, MaxTokens: a.MaxTokens,
			OutputFormat: a.OutputFormat, Stream: a.Stream, Properties: a.Properties,
			Requires: a.Requires, Ensures: a.Ensures,
		}
	}
	for i, pr := range p.Protocols {
		cf.Protocols[i] = irProtocol{Name: pr.Name, Schema: pr.Schema}
	}
	for i, d := range p.Decls {
		cf.Decls[i] = irDecl{Kind: d.Kind, Name: d.Name, File: fileIdx[d.File], Line: d.Line}
	}
	return cf
}

// relToMain makes a path relative to the main file's directory when it is
// under it, so that the hash does not depend on where the program lives.
func relToMain(p *ir.Program, path string) string {
	if path == "" || len(p.Files) == 0 {
		return path
	}
	return relativeTo(p.Files[0], path)
}

// hash computes Program.Hash: sha256 over the canonical IR followed by the
// length and bytes of every source file in program order (and the bytes of
// legacy python: files, which are source too).
func (c *compiler) hash(p *ir.Program) string {
	h := sha256.New()
	cf := ir.CanonicalJSON(canonicalForm(p))
	fmt.Fprintf(h, "%s\n%d\n", hashVersion, len(cf))
	h.Write(cf)
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
