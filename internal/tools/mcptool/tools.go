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
)

// Risk levels, as in the IR (ir.Tool.Risk).
const (
	RiskLow    = "low"
	RiskMedium = "medium"
	RiskHigh   = "high"
)

// Annotations are the behaviour hints of an MCP tool. They are hints from
// the server, not guarantees; nexa uses them only to pick a risk level and
// never to skip a check the risk level asks for.
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
	// Risk is RiskLow, RiskMedium or RiskHigh (docs/reference/runtime.md#mcp-tools).
	Risk string
	// Idempotent is the server's idempotentHint: the runtime may run such
	// a call again after a crash cut it off.
	Idempotent  bool
	Annotations Annotations
}

// riskOf maps annotations to a risk level exactly as docs/reference/runtime.md#mcp-tools
// says: readOnlyHint true → low; else destructiveHint explicitly false →
// medium; else high, since MCP assumes a tool destructive when the hint is
// absent, and high needs the operator's approval.
func riskOf(a Annotations) string {
	switch {
	case a.ReadOnly:
		return RiskLow
	case a.Destructive != nil && !*a.Destructive:
		return RiskMedium
	default:
		return RiskHigh
	}
}

// toolInfo converts a listed tool.
func toolInfo(t *mcp.Tool) (ToolInfo, error) {
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
	return ToolInfo{
		Name:        t.Name,
		Description: t.Description,
		InputSchema: schema,
		Risk:        riskOf(a),
		Idempotent:  a.Idempotent,
		Annotations: a,
	}, nil
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
	}
	entries := make([]entry, len(tools))
	for i, t := range tools {
		entries[i] = entry{t.Name, t.Description, t.InputSchema, t.Annotations}
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

// resultText turns a tool result into the text the model gets: text blocks
// as they are, other blocks as a short JSON summary (binary data replaced by
// its size), joined by newlines; structured content when there is nothing
// else.
func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		parts = append(parts, contentText(c))
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if b, err := canonicalJSON(res.StructuredContent); err == nil {
			parts = append(parts, string(b))
		}
	}
	return strings.Join(parts, "\n")
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
