package compile

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// hashVersion changes whenever the canonical encoding changes, so that an
// old hash never matches a new encoding by accident.
const hashVersion = "nexa-ir-1"

// CanonicalIR returns the canonical encoding of the program's IR that the
// hash covers (without the source bytes): JSON with a fixed key order,
// written directly (it runs on every compile). File paths are left out
// (they depend on the machine and on how the file was named); declarations
// name their file by its index in Files. Tests and tools use it to see what
// the hash depends on.
func CanonicalIR(p *Program) ([]byte, error) {
	fileIdx := map[string]int{}
	for i, f := range p.Files {
		fileIdx[f] = i
	}
	w := &jw{b: make([]byte, 0, 1<<16)}
	w.open()
	w.field("version", hashVersion)
	w.field("active_config", p.ActiveConfig)
	w.key("tools")
	w.b = append(w.b, '[')
	for i, t := range p.Tools {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.open()
		w.field("name", t.Name)
		w.field("description", t.Description)
		w.field("parameters", t.Parameters)
		w.field("returns", t.Returns)
		w.field("risk_level", t.Risk)
		w.field("requires_approval", t.RequiresApproval)
		w.field("sandbox", t.Sandbox)
		w.field("timeout", t.Timeout)
		w.field("idempotent", t.Idempotent)
		w.field("category", t.Category)
		w.key("body")
		w.open()
		w.field("kind", string(t.Body.Kind))
		w.field("python", t.Body.Python)
		w.field("python_file", relToMain(p, t.Body.PythonFile))
		w.field("mcp", t.Body.MCP)
		w.key("native")
		w.b = appendStmts(w.b, t.Body.Native)
		w.close()
		w.close()
	}
	w.b = append(w.b, ']')
	w.key("agents")
	w.b = append(w.b, '[')
	for i, a := range p.Agents {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		uses := make([]any, len(a.Uses))
		for j, u := range a.Uses {
			uses[j] = newObj().set("kind", string(u.Kind)).set("name", u.Name)
		}
		w.open()
		w.field("name", a.Name)
		w.field("prompt", a.Prompt)
		w.field("role", a.Role)
		w.field("model", a.Model)
		w.field("model_fallbacks", a.ModelFallbacks)
		w.field("tools", a.Tools)
		w.field("implicit_tools", a.ImplicitTools)
		w.field("uses", uses)
		w.field("implements", a.Implements)
		w.field("returns", a.Returns)
		w.field("max_tool_calls", a.MaxToolCalls)
		w.field("tool_call_strategy", a.ToolCallStrategy)
		w.field("timeout", a.Timeout)
		w.field("retry", a.Retry)
		w.field("temperature", a.Temperature)
		w.field("max_tokens", a.MaxTokens)
		w.field("output_format", a.OutputFormat)
		w.field("stream", a.Stream)
		w.field("properties", a.Properties)
		w.field("requires", a.Requires)
		w.field("ensures", a.Ensures)
		w.close()
	}
	w.b = append(w.b, ']')
	w.key("protocols")
	w.b = append(w.b, '[')
	for i, pr := range p.Protocols {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.open()
		w.field("name", pr.Name)
		w.field("schema", pr.Schema)
		w.close()
	}
	w.b = append(w.b, ']')
	w.key("declarations")
	w.b = append(w.b, '[')
	for i, d := range p.Decls {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.open()
		w.field("kind", d.Kind)
		w.field("name", d.Name)
		w.field("file", fileIdx[d.File])
		w.field("line", d.Line)
		w.close()
	}
	w.b = append(w.b, ']')
	w.close()
	return w.b, nil
}

// jw writes a JSON object field by field.
type jw struct {
	b     []byte
	fresh bool // no field written yet in the current object
}

func (w *jw) open() {
	w.b = append(w.b, '{')
	w.fresh = true
}

func (w *jw) close() {
	w.b = append(w.b, '}')
	w.fresh = false
}

func (w *jw) key(k string) {
	if !w.fresh {
		w.b = append(w.b, ',')
	}
	w.fresh = false
	w.b = appendString(w.b, k)
	w.b = append(w.b, ':')
}

func (w *jw) field(k string, v any) {
	w.key(k)
	w.b = appendJSON(w.b, v)
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
