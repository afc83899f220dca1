package compile

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
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
	w := canonicalIR(p)
	out := make([]byte, 0, w.size())
	for _, c := range w.chunks {
		out = append(out, c...)
	}
	return append(out, w.b...), nil
}

// canonicalIR writes the canonical IR into a chunked writer: big programs
// give megabytes of IR, and chunks avoid copying them over and over as one
// buffer grows (the hash reads the chunks in order).
func canonicalIR(p *Program) *jw {
	fileIdx := make(map[string]int, len(p.Files))
	for i, f := range p.Files {
		fileIdx[f] = i
	}
	w := &jw{b: make([]byte, 0, jwChunk+jwSlack)}
	w.open()
	w.field("version", hashVersion)
	w.field("active_config", p.ActiveConfig)
	w.key("tools")
	w.b = append(w.b, '[')
	if workers := min(runtime.GOMAXPROCS(0), len(p.Tools)/parallelIRTools); workers > 1 {
		// big programs: the tools are encoded in parts, in parallel,
		// and the parts' chunks joined in order
		parts := make([]*jw, workers)
		var failed atomic.Bool
		var wg sync.WaitGroup
		for k := range parts {
			parts[k] = &jw{b: make([]byte, 0, jwChunk+jwSlack)}
			wg.Add(1)
			go func(k int) {
				defer wg.Done()
				defer func() {
					if recover() != nil {
						failed.Store(true) // encode sequentially instead
					}
				}()
				for i := k * len(p.Tools) / workers; i < (k+1)*len(p.Tools)/workers; i++ {
					writeTool(parts[k], p, i)
				}
			}(k)
		}
		wg.Wait()
		if failed.Load() {
			for i := range p.Tools {
				writeTool(w, p, i)
			}
		} else {
			w.chunks = append(w.chunks, w.b)
			for _, part := range parts {
				w.chunks = append(append(w.chunks, part.chunks...), part.b)
			}
			w.b = make([]byte, 0, jwChunk+jwSlack)
		}
	} else {
		for i := range p.Tools {
			writeTool(w, p, i)
		}
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
		w.flush()
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
		w.flush()
	}
	w.b = append(w.b, ']')
	w.key("declarations")
	w.b = append(w.b, '[')
	for i, d := range p.Decls {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.open()
		w.str("kind", d.Kind)
		w.str("name", d.Name)
		w.int("file", fileIdx[d.File])
		w.int("line", d.Line)
		w.close()
		w.flush()
	}
	w.b = append(w.b, ']')
	w.close()
	return w
}

// parallelIRTools is the number of tools per core from which canonicalIR
// encodes tools in parallel (a variable for tests).
var parallelIRTools = 256

// writeTool writes tool i of p, preceded by a comma unless it is the first.
func writeTool(w *jw, p *Program, i int) {
	t := p.Tools[i]
	if i > 0 {
		w.b = append(w.b, ',')
	}
	w.open()
	w.str("name", t.Name)
	w.str("description", t.Description)
	w.raw("parameters", t.Parameters)
	w.str("returns", t.Returns)
	w.str("risk_level", t.Risk)
	w.bool("requires_approval", t.RequiresApproval)
	w.bool("sandbox", t.Sandbox)
	w.int("timeout", t.Timeout)
	w.bool("idempotent", t.Idempotent)
	w.str("category", t.Category)
	w.key("body")
	w.open()
	w.str("kind", string(t.Body.Kind))
	w.str("python", t.Body.Python)
	w.str("python_file", relToMain(p, t.Body.PythonFile))
	w.str("mcp", t.Body.MCP)
	w.key("native")
	w.b = appendStmts(w.b, t.Body.Native)
	w.close()
	w.close()
	w.flush()
}

// jwChunk is the size at which the IR writer starts a new chunk; jwSlack
// leaves room for the element that crosses it.
const (
	jwChunk = 64 << 10
	jwSlack = 4 << 10
)

// jw writes a JSON object field by field, into b and, once b is full,
// into further chunks (see canonicalIR).
type jw struct {
	b      []byte
	chunks [][]byte // full chunks written before b
	fresh  bool     // no field written yet in the current object
}

// flush starts a new chunk when the current one is full. It is called
// between elements, so a chunk may end in the middle of the JSON text but
// the chunks concatenated are the text.
func (w *jw) flush() {
	if len(w.b) < jwChunk {
		return
	}
	w.chunks = append(w.chunks, w.b)
	w.b = make([]byte, 0, jwChunk+jwSlack)
}

// size is the total length written.
func (w *jw) size() int {
	n := len(w.b)
	for _, c := range w.chunks {
		n += len(c)
	}
	return n
}

func (w *jw) str(k, v string) {
	w.key(k)
	w.b = appendString(w.b, v)
}

func (w *jw) raw(k string, v json.RawMessage) {
	w.key(k)
	if len(v) == 0 {
		w.b = append(w.b, "null"...)
		return
	}
	w.b = append(w.b, v...)
}

func (w *jw) bool(k string, v bool) {
	w.key(k)
	w.b = strconv.AppendBool(w.b, v)
}

func (w *jw) int(k string, v int) {
	w.key(k)
	w.b = strconv.AppendInt(w.b, int64(v), 10)
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
	ir := canonicalIR(p)
	h := sha256.New()
	var num [20]byte
	h.Write([]byte(hashVersion + "\n"))
	h.Write(strconv.AppendInt(num[:0], int64(ir.size()), 10))
	h.Write([]byte("\n"))
	for _, chunk := range ir.chunks {
		h.Write(chunk)
	}
	h.Write(ir.b)
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
