package mcptool

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nexa-run/nexa/internal/schemacheck"
	"github.com/nexa-run/nexa/internal/tool"
)

// Risk levels, as in the IR (ir.Tool.Risk).
const (
	RiskLow    = "low"
	RiskMedium = "medium"
	RiskHigh   = "high"
)

// Annotations are the behaviour hints of an MCP tool. They are claims of
// the server, not guarantees: nexa uses them to pick a risk level only for
// a server the program marks trust=annotations (Spec.TrustAnnotations),
// and never to skip a check the risk level asks for.
type Annotations struct {
	ReadOnly bool `json:"readOnlyHint"`
	// Destructive is nil when the server did not say; MCP then assumes
	// true.
	Destructive *bool `json:"destructiveHint"`
	Idempotent  bool  `json:"idempotentHint"`
	// OpenWorld is nil when the server did not say.
	OpenWorld *bool `json:"openWorldHint"`
}

// ToolInfo is one tool of an MCP server as nexa exposes it to the model.
type ToolInfo struct {
	Name        string
	Description string
	// InputSchema is the JSON Schema of the arguments, always an object
	// schema (see normalizeSchema), canonically encoded.
	InputSchema json.RawMessage
	// Risk is RiskLow, RiskMedium or RiskHigh (docs/reference/runtime.md#mcp-tools):
	// always RiskHigh for a server that is not trusted.
	Risk string
	// Idempotent is the idempotentHint of a trusted server's tool: the
	// runtime may run such a call again after a crash cut it off. An
	// untrusted server's hint never makes nexa repeat a call.
	Idempotent bool
	// Trusted says the server is marked trust=annotations, so Risk and
	// Idempotent come from Annotations.
	Trusted     bool
	Annotations Annotations
	// OutputSchema is the tool's outputSchema, canonically encoded, or
	// nil when it declares none; structured results are checked against
	// it (output, or outputErr when it does not compile).
	OutputSchema json.RawMessage
	output       *schemacheck.Schema
	outputErr    error
}

// riskOf maps annotations to a risk level exactly as docs/reference/runtime.md#mcp-tools
// says. For a server the program does not trust, every tool is high: a
// server's claim alone never lowers who approves its calls. For a trusted
// one: readOnlyHint true → low; else destructiveHint explicitly false →
// medium; else high, since MCP assumes a tool destructive when the hint
// is absent, and high needs the operator's approval.
func riskOf(a Annotations, trusted bool) string {
	switch {
	case !trusted:
		return RiskHigh
	case a.ReadOnly:
		return RiskLow
	case a.Destructive != nil && !*a.Destructive:
		return RiskMedium
	default:
		return RiskHigh
	}
}

// hints renders the annotations the server stated, in the MCP names
// ("readOnlyHint: true, idempotentHint: true"), or "" when it stated none.
// A false readOnlyHint or idempotentHint cannot be told from an absent
// one and is left out.
func (a Annotations) hints() string {
	var parts []string
	if a.ReadOnly {
		parts = append(parts, "readOnlyHint: true")
	}
	if a.Destructive != nil {
		parts = append(parts, fmt.Sprintf("destructiveHint: %t", *a.Destructive))
	}
	if a.Idempotent {
		parts = append(parts, "idempotentHint: true")
	}
	if a.OpenWorld != nil {
		parts = append(parts, fmt.Sprintf("openWorldHint: %t", *a.OpenWorld))
	}
	return strings.Join(parts, ", ")
}

// callDescription is the description of a tool as the runtime shows it,
// to the model and, journaled with each call, to the person deciding it:
// the server's description (or one naming the server when it gave none)
// and, for a server that is not trusted, the annotations it stated, marked
// as not used, since they are worth knowing but decide nothing.
func (t ToolInfo) callDescription(spec string) string {
	desc := t.Description
	if strings.TrimSpace(desc) == "" {
		desc = "Tool " + t.Name + " of the MCP server " + spec
	}
	if h := t.Annotations.hints(); h != "" && !t.Trusted {
		desc += " (MCP annotations of an untrusted server, not used for approval: " + h + ")"
	}
	return desc
}

// toolInfo converts a listed tool of a server that is trusted or not
// (Spec.TrustAnnotations).
func toolInfo(t *mcp.Tool, trusted bool) (ToolInfo, error) {
	var a Annotations
	if t.Annotations != nil {
		a = Annotations{
			ReadOnly:    t.Annotations.ReadOnlyHint,
			Destructive: t.Annotations.DestructiveHint,
			Idempotent:  t.Annotations.IdempotentHint,
			OpenWorld:   t.Annotations.OpenWorldHint,
		}
	}
	schema, err := normalizeSchema(t.InputSchema)
	if err != nil {
		return ToolInfo{}, fmt.Errorf("input schema of tool %q: %w", t.Name, err)
	}
	info := ToolInfo{
		Name:        t.Name,
		Description: t.Description,
		InputSchema: schema,
		Risk:        riskOf(a, trusted),
		Idempotent:  trusted && a.Idempotent,
		Trusted:     trusted,
		Annotations: a,
	}
	if t.OutputSchema != nil {
		b, _, err := canonicalValue(t.OutputSchema)
		if err != nil {
			return ToolInfo{}, fmt.Errorf("output schema of tool %q: %w", t.Name, err)
		}
		info.OutputSchema = b
		// A schema that does not compile is kept, and every structured
		// result of the tool is then refused with this error.
		info.output, info.outputErr = schemacheck.Compile(b)
	}
	return info, nil
}

// normalizeSchema returns the canonical encoding of an input schema that is
// always an object schema, because tool arguments are always a JSON object
// and providers reject anything else: a missing, empty or non-object schema
// becomes {"type":"object","properties":{}}; an object schema without a
// "type" (or with another one) gets "type":"object"; "properties" is added
// when absent. Everything else the server wrote is kept.
func normalizeSchema(v any) (json.RawMessage, error) {
	var m map[string]any
	switch s := v.(type) {
	case nil:
	case map[string]any:
		m = s
	default:
		b, err := json.Marshal(s)
		if err != nil {
			return nil, err
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var decoded any
		if err := dec.Decode(&decoded); err != nil {
			return nil, err
		}
		m, _ = decoded.(map[string]any)
	}
	out := make(map[string]any, len(m)+2)
	for k, val := range m {
		out[k] = val
	}
	out["type"] = "object"
	if _, ok := out["properties"].(map[string]any); !ok {
		out["properties"] = map[string]any{}
	}
	return canonicalJSON(out)
}

// canonicalJSON encodes v compactly with object keys sorted (encoding/json
// sorts map keys) and without HTML escaping, so equal values always give
// equal bytes.
func canonicalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// canonicalValue re-reads v, a JSON value as the SDK decoded it, the way
// nexa reads JSON (schemacheck.Decode: numbers exact), and returns its
// canonical encoding and the value read.
func canonicalValue(v any) ([]byte, any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, nil, err
	}
	d, err := schemacheck.Decode(b)
	if err != nil {
		return nil, nil, err
	}
	out, err := canonicalJSON(d)
	if err != nil {
		return nil, nil, err
	}
	return out, d, nil
}

// schemaHash is "sha256:<hex>" over the canonical encoding of the tools,
// sorted by name: names, descriptions, normalised input schemas and
// annotation hints, which is everything the model and the approval policy
// see. A run records it; a resume that finds another hash refuses, like a
// source change, because the calls the model made were for other tools.
func schemaHash(tools []ToolInfo) string {
	type entry struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"inputSchema"`
		Annotations Annotations     `json:"annotations"`
		// Omitted when absent, so the hash of a tool without one is
		// what earlier versions recorded.
		OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	}
	entries := make([]entry, len(tools))
	for i, t := range tools {
		entries[i] = entry{t.Name, t.Description, t.InputSchema, t.Annotations, t.OutputSchema}
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name < entries[j].Name })
	b, err := canonicalJSON(entries)
	if err != nil {
		// Only RawMessages that were produced by canonicalJSON are
		// inside; this cannot fail. Hash the error text rather than
		// panic, so a resume would refuse rather than crash.
		b = []byte(err.Error())
	}
	h := sha256.New()
	h.Write([]byte("nexa-mcp-tools-v1\n"))
	h.Write(b)
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// resultText turns a tool result's content into text: text blocks as they
// are, other blocks as a short JSON summary (binary data replaced by its
// size), joined by newlines.
func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		parts = append(parts, contentText(c))
	}
	return strings.Join(parts, "\n")
}

// maxProblems is how many schema problems a message lists.
const maxProblems = 5

// structuredOutcome is the outcome of a tool result: its text, with the
// structured content added (unless a text block already says the same
// JSON, as servers are asked to do); Success unless isError. Structured
// content of a successful result is checked against the tool's output
// schema: a result without it, or one that does not match, is a failed
// call whose message says why, and is not kept as Structured.
func structuredOutcome(info ToolInfo, res *mcp.CallToolResult) tool.Outcome {
	text := resultText(res)
	out := tool.Outcome{Output: text, Success: !res.IsError}
	var structured []byte
	var value any // structured, decoded
	if res.StructuredContent != nil {
		var err error
		if structured, value, err = canonicalValue(res.StructuredContent); err != nil {
			out.Success = false
			out.Output = joinText(text, fmt.Sprintf("error: MCP tool %s returned structured content nexa cannot read: %v", info.Name, err))
			return out
		}
		if !saysJSON(res, structured) {
			out.Output = joinText(text, string(structured))
		}
	}
	if res.IsError || info.OutputSchema == nil {
		if !res.IsError && structured != nil {
			out.Structured = structured
		}
		return out
	}
	var problem string
	switch {
	case info.outputErr != nil:
		problem = "its output schema is not a valid JSON Schema: " + info.outputErr.Error()
	case structured == nil:
		problem = "it declares an output schema but returned no structured content"
	default:
		if ps := info.output.Validate(value); len(ps) > 0 {
			problem = "its structured content does not match its output schema: " + schemacheck.Explain(ps, maxProblems)
		}
	}
	if problem != "" {
		out.Success = false
		out.Output = joinText(out.Output, fmt.Sprintf("error: the result of MCP tool %s was refused: %s", info.Name, problem))
		return out
	}
	out.Structured = structured
	return out
}

// saysJSON reports whether a text block of res holds the same JSON value as
// the canonical structured.
func saysJSON(res *mcp.CallToolResult, structured []byte) bool {
	for _, c := range res.Content {
		t, ok := c.(*mcp.TextContent)
		if !ok {
			continue
		}
		v, err := schemacheck.Decode([]byte(t.Text))
		if err != nil {
			continue
		}
		if b, err := canonicalJSON(v); err == nil && bytes.Equal(b, structured) {
			return true
		}
	}
	return false
}

func joinText(a, b string) string {
	if a == "" {
		return b
	}
	return a + "\n" + b
}

// contentText renders one content block.
func contentText(c mcp.Content) string {
	var v any
	switch c := c.(type) {
	case *mcp.TextContent:
		return c.Text
	case *mcp.ImageContent:
		v = map[string]any{"type": "image", "mimeType": c.MIMEType, "bytes": len(c.Data)}
	case *mcp.AudioContent:
		v = map[string]any{"type": "audio", "mimeType": c.MIMEType, "bytes": len(c.Data)}
	case *mcp.EmbeddedResource:
		m := map[string]any{"type": "resource"}
		if r := c.Resource; r != nil {
			m["uri"] = r.URI
			if r.MIMEType != "" {
				m["mimeType"] = r.MIMEType
			}
			if r.Text != "" {
				m["text"] = r.Text
			}
			if len(r.Blob) > 0 {
				m["bytes"] = len(r.Blob)
			}
		}
		v = m
	case nil:
		return ""
	default:
		b, err := c.MarshalJSON()
		if err != nil {
			return fmt.Sprintf("[unprintable %T content: %v]", c, err)
		}
		// Re-encoded canonically, so the text does not depend on
		// the SDK's field order.
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			return string(b)
		}
	}
	b, err := canonicalJSON(v)
	if err != nil {
		return fmt.Sprintf("[unprintable content: %v]", err)
	}
	return string(b)
}
