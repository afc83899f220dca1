package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/nexa-run/nexa/internal/compile"
	"github.com/nexa-run/nexa/internal/ir"
)

// inspectJSON is the output of `nexa inspect --json` docs/reference/json.md#inspect.
type inspectJSON struct {
	SourceHash   string            `json:"source_hash"`
	Files        []string          `json:"files"`
	Tools        []inspectTool     `json:"tools"`
	Agents       []inspectAgent    `json:"agents"`
	Protocols    []inspectProtocol `json:"protocols"`
	Declarations []ir.Decl         `json:"declarations"`
}

type inspectTool struct {
	Name             string          `json:"name"`
	Description      string          `json:"description"`
	Parameters       json.RawMessage `json:"parameters"`
	Returns          string          `json:"returns"`
	RiskLevel        string          `json:"risk_level"`
	RequiresApproval bool            `json:"requires_approval"`
	NeedsApproval    bool            `json:"needs_approval"`
	Sandbox          bool            `json:"sandbox"`
	Timeout          int             `json:"timeout"`
	// ApprovalTimeout is how long, in seconds, a call may wait for a
	// decision; 0 when the tool sets no bound of its own.
	ApprovalTimeout int  `json:"approval_timeout"`
	Idempotent      bool `json:"idempotent"`
	// Parallel is false for a tool declared parallel: false, whose calls
	// run with no other call of their reply (docs/reference/runtime.md#parallel-calls).
	Parallel bool   `json:"parallel"`
	Body     string `json:"body"`
	// Category is the @tool category, or the namespace of a built-in
	// tool ("std.fs").
	Category string `json:"category,omitempty"`
}

type inspectAgent struct {
	Name          string         `json:"name"`
	Prompt        string         `json:"prompt"`
	Model         string         `json:"model"`
	Tools         []string       `json:"tools"`
	ImplicitTools bool           `json:"implicit_tools"`
	Uses          []ir.Use       `json:"uses"`
	Implements    string         `json:"implements"`
	Properties    map[string]any `json:"properties"`
}

type inspectProtocol struct {
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema"`
}

func toInspectJSON(p *ir.Program) inspectJSON {
	out := inspectJSON{
		SourceHash: p.Hash, Files: p.Files, Tools: []inspectTool{}, Agents: []inspectAgent{},
		Protocols: []inspectProtocol{}, Declarations: p.Decls,
	}
	if out.Declarations == nil {
		out.Declarations = []ir.Decl{}
	}
	for _, t := range p.Tools {
		out.Tools = append(out.Tools, inspectTool{
			Name: t.Name, Description: t.Description, Parameters: t.Parameters, Returns: t.Returns,
			RiskLevel: t.Risk, RequiresApproval: t.RequiresApproval, NeedsApproval: t.NeedsApproval(),
			Sandbox: t.Sandbox, Timeout: t.Timeout, ApprovalTimeout: t.ApprovalTimeout, Idempotent: t.Idempotent, Parallel: !t.Exclusive, Body: string(t.Body.Kind),
			Category: t.Category,
		})
	}
	for _, a := range p.Agents {
		uses := a.Uses
		if uses == nil {
			uses = []ir.Use{}
		}
		out.Agents = append(out.Agents, inspectAgent{
			Name: a.Name, Prompt: a.SystemPrompt(), Model: a.Model, Tools: a.Tools, ImplicitTools: a.ImplicitTools,
			Uses: uses, Implements: a.Implements, Properties: a.Properties,
		})
	}
	for _, pr := range p.Protocols {
		out.Protocols = append(out.Protocols, inspectProtocol{Name: pr.Name, Schema: pr.Schema})
	}
	return out
}

func newInspectCmd(e *env) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "inspect FILE",
		Short: "Show the compiled program: hash, tools with schemas and risk, agents and their tools",
		Long: `Compile FILE and show what nexa agent would run: the source hash, the files
(main file and includes), every tool with the JSON Schema sent to the model,
its risk level and effective approval policy, every agent with its model,
system prompt and the exact list of tools it is exposed to, the protocols,
and every other top-level declaration (flows, tests, types, ...), which are
parsed but never executed.

With --json the output is one JSON object:
  {"source_hash", "files", "tools": [...], "agents": [...], "protocols": [...],
   "declarations": [...]}
When the program does not compile, the diagnostics are printed as by
nexa validate (with --json: {"valid": false, "errors", "warnings"}) and the
exit status is 2.`,
		Example: `  nexa inspect review.nx
  nexa inspect --json review.nx | jq '.tools[] | {name, needs_approval}'`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			path := args[0]
			prog, diags := compile.Compile(path, compile.Options{NexaPath: e.getenv("NEXA_PATH")})
			if prog == nil {
				if asJSON {
					if err := diagWriteJSON(e.stdout, toValidateJSON(diags)); err != nil {
						return fmt.Errorf("encode diagnostics: %w", err)
					}
				} else {
					renderDiagnostics(e.stderr, diags, newDiagStyle(colorEnabled(e, e.stderr)))
					fmt.Fprintf(e.stderr, "%s: %s, %s\n", path,
						diagPlural(len(diags.Errors()), "error"), diagPlural(len(diags.Warnings()), "warning"))
				}
				return exitWith(compileExitCode(diags))
			}
			if asJSON {
				if err := diagWriteJSON(e.stdout, toInspectJSON(prog)); err != nil {
					return fmt.Errorf("encode program: %w", err)
				}
				return nil
			}
			writeInspectText(e.stdout, prog, newDiagStyle(colorEnabled(e, e.stdout)))
			if n := len(diags.Warnings()); n > 0 {
				fmt.Fprintf(e.stderr, "%s: %s (nexa validate %s shows them)\n", path, diagPlural(n, "warning"), path)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the compiled program as one JSON object")
	return cmd
}

// writeInspectText prints the program for people.
func writeInspectText(w io.Writer, p *ir.Program, st *diagStyle) {
	fmt.Fprintf(w, "%s %s\n", st.bold.Sprint("program"), p.Hash)
	fmt.Fprintf(w, "files: %s\n", strings.Join(p.Files, ", "))

	fmt.Fprintf(w, "\n%s\n", st.bold.Sprintf("tools (%d)", len(p.Tools)))
	for _, t := range p.Tools {
		policy := "no approval"
		if t.NeedsApproval() {
			policy = st.warn.Sprint("needs approval")
		}
		extra := ""
		if t.ApprovalTimeout > 0 {
			extra += fmt.Sprintf(", approval timeout %ds", t.ApprovalTimeout)
		}
		if t.Sandbox {
			extra += ", sandboxed"
		}
		if t.Idempotent {
			extra += ", idempotent"
		}
		if t.Exclusive {
			extra += ", parallel: false"
		}
		body := string(t.Body.Kind) + " body"
		if t.Body.Kind == ir.BodyBuiltin && t.Category != "" {
			body += " (" + t.Category + ")"
		}
		fmt.Fprintf(w, "  %s  risk %s, %s, timeout %ds, %s%s\n", st.bold.Sprint(t.Name), t.Risk, policy, t.Timeout, body, extra)
		if t.Description != "" {
			fmt.Fprintf(w, "    %s\n", t.Description)
		}
		if ps := paramSummary(t.Parameters); ps != "" {
			fmt.Fprintf(w, "    params: %s\n", ps)
		}
		fmt.Fprintf(w, "    returns: %s\n", t.Returns)
	}

	fmt.Fprintf(w, "\n%s\n", st.bold.Sprintf("agents (%d)", len(p.Agents)))
	for _, a := range p.Agents {
		model := a.Model
		if model == "" {
			model = "(provider default)"
		}
		fmt.Fprintf(w, "  %s  model %s\n", st.bold.Sprint(a.Name), model)
		tools := strings.Join(a.Tools, ", ")
		if tools == "" {
			tools = "(none)"
		}
		if a.ImplicitTools {
			tools += "  (no uses clause: every @tool function)"
		}
		fmt.Fprintf(w, "    tools: %s\n", tools)
		for _, u := range a.Uses {
			if u.Kind != ir.UseTool {
				fmt.Fprintf(w, "    uses %s: %s\n", u.Kind, u.Name)
			}
		}
		if a.Implements != "" {
			fmt.Fprintf(w, "    implements: %s\n", a.Implements)
		}
		if sp := a.SystemPrompt(); sp != "" {
			fmt.Fprintf(w, "    prompt: %s\n", inspectOneLine(sp, 100))
		}
		var keys []string
		for k := range a.Properties {
			if k != "prompt" && k != "role" && k != "model" {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			b, _ := json.Marshal(a.Properties[k])
			fmt.Fprintf(w, "    %s: %s\n", k, inspectOneLine(string(b), 100))
		}
	}

	fmt.Fprintf(w, "\n%s\n", st.bold.Sprintf("protocols (%d)", len(p.Protocols)))
	for _, pr := range p.Protocols {
		fmt.Fprintf(w, "  %s  %s\n", st.bold.Sprint(pr.Name), paramSummary(pr.Schema))
	}

	fmt.Fprintf(w, "\n%s\n", st.bold.Sprintf("declarations (%d)", len(p.Decls)))
	for _, d := range p.Decls {
		fmt.Fprintf(w, "  %-10s %-30s %s:%d\n", d.Kind, d.Name, d.File, d.Line)
	}
}

// paramSummary renders an object schema as `name: type, other?: type`.
func paramSummary(schema json.RawMessage) string {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if json.Unmarshal(schema, &s) != nil || len(s.Properties) == 0 {
		return ""
	}
	// keep the declaration order of the schema's properties
	order := propertyOrder(schema)
	req := map[string]bool{}
	for _, r := range s.Required {
		req[r] = true
	}
	var parts []string
	for _, name := range order {
		var ps map[string]any
		_ = json.Unmarshal(s.Properties[name], &ps)
		t := schemaTypeText(ps)
		mark := ""
		if !req[name] {
			mark = "?"
		}
		if d, ok := ps["default"]; ok {
			b, _ := json.Marshal(d)
			t += " = " + string(b)
		}
		parts = append(parts, name+mark+": "+t)
	}
	return strings.Join(parts, ", ")
}

// propertyOrder reads the keys of "properties" in the order they appear
// (the compiler writes them in declaration order).
func propertyOrder(schema json.RawMessage) []string {
	var s struct {
		Properties json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil || len(s.Properties) == 0 {
		return nil
	}
	dec := json.NewDecoder(strings.NewReader(string(s.Properties)))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return keys
		}
		key, _ := tok.(string)
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return keys
		}
		keys = append(keys, key)
	}
	return keys
}

// schemaTypeText writes a property schema back as a type: string,
// list[integer], object, integer?, string|integer.
func schemaTypeText(ps map[string]any) string {
	switch t := ps["type"].(type) {
	case string:
		return simpleTypeText(t, ps)
	case []any:
		var parts []string
		nullable := false
		for _, x := range t {
			if s, _ := x.(string); s == "null" {
				nullable = true
			} else {
				parts = append(parts, simpleTypeText(fmt.Sprint(x), ps))
			}
		}
		out := strings.Join(parts, "|")
		if nullable {
			out += "?"
		}
		return out
	}
	if alts, ok := ps["anyOf"].([]any); ok {
		var parts []string
		for _, a := range alts {
			if m, ok := a.(map[string]any); ok {
				parts = append(parts, schemaTypeText(m))
			}
		}
		return strings.Join(parts, "|")
	}
	return "any"
}

func simpleTypeText(t string, ps map[string]any) string {
	if t == "array" {
		if items, ok := ps["items"].(map[string]any); ok {
			return "list[" + schemaTypeText(items) + "]"
		}
		return "list"
	}
	return t
}

func inspectOneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
