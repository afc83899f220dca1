package compile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/nexa-run/nexa/internal/ir"
	"github.com/nexa-run/nexa/internal/lang"
	"github.com/nexa-run/nexa/internal/stdlib"
)

// agentProps are the properties with meaning for nexa agent.
var agentProps = []string{"prompt", "role", "model", "max_tool_calls", "tool_call_strategy", "timeout", "retry", "temperature", "max_tokens", "output_format", "stream", "http_allow"}

// nexa23AgentProps are agent properties that Nexa 2.3 programs use and nexa
// does not (docs/language.md, section 4.5): warnings, never errors, even
// when they look like a misspelling of one of nexa's.
var nexa23AgentProps = []string{"cache", "memory", "experience", "max_history_turns", "output_schema",
	"description", "fallback", "input_type", "output_type", "uses"}

// agentDecorators maps each decorator to its one argument and the property
// it sets.
var agentDecorators = map[string][2]string{
	"limit":       {"max_tokens", "max_tokens"},
	"timeout":     {"seconds", "timeout"},
	"retry":       {"max_attempts", "retry"},
	"temperature": {"value", "temperature"},
}

func (c *compiler) compileAgent(ad *agentDecl, prog *ir.Program) *ir.Agent {
	d := ad.decl
	name := d.Name.Name
	a := &ir.Agent{
		Name: name, Retry: -1, ToolCallStrategy: "auto", File: ad.src.path, Line: d.Pos.Line,
		Properties: map[string]any{}, Tools: []string{},
	}
	// decorators first: properties win over them
	type setting struct {
		v   *lang.Value
		pos lang.Position
	}
	values := map[string]setting{}
	for _, deco := range d.Decorators {
		spec, ok := agentDecorators[deco.Name]
		if !ok {
			hint := "agent decorators are @limit(max_tokens=N), @timeout(seconds=N), @retry(max_attempts=N), @temperature(value=X)"
			if best := c.closest(deco.Name, sortedKeys(agentDecorators)); best != "" {
				hint = fmt.Sprintf("did you mean `@%s`?", best)
			}
			c.errorAt(deco.Pos, lang.CodeBadDecorator, hint, "unknown decorator @%s on agent %s", deco.Name, name)
			continue
		}
		if len(deco.Args) != 1 || (deco.Args[0].Name != "" && deco.Args[0].Name != spec[0]) {
			c.errorAt(deco.Pos, lang.CodeBadDecorator, fmt.Sprintf("write @%s(%s=…)", deco.Name, spec[0]),
				"@%s takes one argument, %s", deco.Name, spec[0])
			continue
		}
		values[spec[1]] = setting{deco.Args[0].Value, deco.Args[0].Pos}
	}
	seen := map[string]lang.Position{}
	for _, it := range d.Items {
		if it.Context != nil {
			if prev, dup := seen["context"]; dup {
				c.errorAt(it.Pos, lang.CodeDuplicate, "keep one of them", "context block given twice in agent %s (first at line %d)", name, prev.Line)
				continue
			}
			seen["context"] = it.Pos
			ctx := map[string]any{}
			for _, p := range it.Context.Props {
				if v, ok := c.valueJSON(p.Value); ok {
					ctx[p.Key.Name()] = v
				}
			}
			a.Properties["context"] = ctx
			c.warnAt(it.Pos, lang.CodeNoEffect, "nexa agent keeps it in the IR but does not use it",
				"context block of agent %s accepted, no effect in nexa agent", name)
			continue
		}
		p := it.Prop
		key := p.Key.Name()
		if prev, dup := seen[key]; dup {
			c.errorAt(p.Pos, lang.CodeDuplicate, "keep one of them", "property `%s` given twice in agent %s (first at line %d)", key, name, prev.Line)
			continue
		}
		seen[key] = p.Pos
		values[key] = setting{p.Value, p.Pos}
		if !contains(agentProps, key) {
			hint := "nexa agent keeps it in the IR but does not use it"
			best := c.closest(key, agentProps)
			if best != "" && !contains(nexa23AgentProps, key) {
				// A misspelt budget or setting would silently drop what
				// the author asked for (max_tool_call: 3): fail closed.
				c.errorAt(p.Pos, lang.CodeUnknownSetting, fmt.Sprintf("did you mean `%s`?", best),
					"unknown property `%s` of agent %s", key, name)
				continue
			}
			if best != "" {
				hint = fmt.Sprintf("did you mean `%s`?", best)
			}
			c.warnAt(p.Pos, lang.CodeNoEffect, hint, "property `%s` of agent %s accepted, no effect in nexa agent", key, name)
		}
	}
	for _, key := range sortedKeys(values) {
		s := values[key]
		c.agentProp(a, key, s.v)
		if v, ok := c.valueJSON(s.v); ok {
			a.Properties[key] = v
		}
	}
	if d.Returns != nil {
		a.Returns = d.Returns.String()
	}
	for _, cl := range d.Clauses {
		text := ""
		if cl.Text != nil {
			text = cl.Text.Value()
		} else {
			text = exprText(cl)
		}
		if cl.Kind == "requires" {
			a.Requires = append(a.Requires, text)
		} else {
			a.Ensures = append(a.Ensures, text)
		}
	}
	if len(d.Clauses) > 0 {
		c.warnAt(d.Clauses[0].Pos, lang.CodeNoEffect, "nexa agent keeps the clauses in the IR but does not check them",
			"requires/ensures clauses of agent %s accepted, no effect in nexa agent", name)
	}
	if d.Implements != nil {
		pn := d.Implements.Name
		if _, ok := c.protocols[pn]; !ok {
			hint := "declare it with protocol " + pn + " { field: type, … }"
			if best := c.closest(pn, sortedKeys(c.protocols)); best != "" {
				hint = fmt.Sprintf("did you mean `%s`?", best)
			}
			c.errorAt(d.Implements.Pos, lang.CodeUnknownProtocol, hint, "agent %s implements unknown protocol `%s`", name, pn)
		}
		a.Implements = pn
	}
	c.resolveUses(a, d, prog)
	return a
}

// exprText renders a deterministic contract clause back as text.
func exprText(cl *lang.Clause) string {
	var parts []string
	for _, t := range cl.Tokens {
		if t.Type == lang.Comment {
			continue
		}
		parts = append(parts, t.Value)
	}
	if len(parts) > 0 && (parts[0] == "requires" || parts[0] == "ensures") {
		parts = parts[1:]
	}
	return strings.Join(parts, " ")
}

// agentProp applies a property with meaning for nexa agent.
func (c *compiler) agentProp(a *ir.Agent, key string, v *lang.Value) {
	bad := func(want, hint string) {
		c.errorAt(v.Pos, lang.CodeBadSetting, hint, "%s of agent %s must be %s, found %s", key, a.Name, want, describeValue(v))
	}
	switch key {
	case "prompt":
		if v.Str == nil {
			bad("a string", `write prompt: "…" or prompt: """…"""`)
			return
		}
		a.Prompt = v.Str.Value()
	case "role":
		if v.Str == nil {
			bad("a string", `write role: "…"`)
			return
		}
		a.Role = v.Str.Value()
	case "model":
		switch {
		case v.Str != nil:
			a.Model = v.Str.Value()
		case v.Ref != nil:
			a.Model = v.Ref.String()
		case v.List != nil:
			for _, it := range v.List.Items {
				s, ok := wordValue(it.Value)
				if !ok || (it.Label != "" && it.Label != "fallback") {
					c.errorAt(it.Pos, lang.CodeBadSetting, `write model: ["primary", fallback: "other"]`,
						"model list of agent %s holds model names and fallback: \"name\" entries, found %s", a.Name, describeValue(it.Value))
					continue
				}
				if a.Model == "" && it.Label == "" {
					a.Model = s
				} else {
					a.ModelFallbacks = append(a.ModelFallbacks, s)
				}
			}
			if a.Model == "" && len(a.ModelFallbacks) > 0 {
				a.Model, a.ModelFallbacks = a.ModelFallbacks[0], a.ModelFallbacks[1:]
			}
		default:
			bad("a model name or a list", `write model: "provider/model"`)
		}
	case "max_tool_calls":
		n, ok := intValue(v)
		if !ok || n < 0 {
			bad("a whole number ≥ 0", "write max_tool_calls: 8")
			return
		}
		a.MaxToolCalls = n
	case "tool_call_strategy":
		s, ok := wordValue(v)
		strategies := []string{"auto", "required", "none"}
		if !ok || !contains(strategies, s) {
			hint := "tool_call_strategy is auto, required or none"
			if best := c.closest(s, strategies); ok && best != "" {
				hint = fmt.Sprintf("did you mean %q?", best)
			}
			bad("auto, required or none", hint)
			return
		}
		a.ToolCallStrategy = s
	case "timeout":
		n, ok := intValue(v)
		if !ok || n <= 0 {
			bad("a positive whole number of seconds", "write timeout: 900")
			return
		}
		a.Timeout = n
	case "retry":
		n, ok := intValue(v)
		if !ok || n < 0 {
			bad("a whole number ≥ 0", "write retry: 3")
			return
		}
		a.Retry = n
	case "temperature":
		f, ok := floatValue(v)
		if !ok || f < 0 || f > 2 {
			bad("a number from 0 to 2", "write temperature: 0.2")
			return
		}
		a.Temperature = &f
	case "max_tokens":
		n, ok := intValue(v)
		if !ok || n <= 0 {
			bad("a positive whole number", "write max_tokens: 2000")
			return
		}
		a.MaxTokens = n
	case "output_format":
		s, ok := wordValue(v)
		if !ok || (s != "json" && s != "text") {
			bad(`"json" or "text"`, `write output_format: "json"`)
			return
		}
		a.OutputFormat = s
	case "stream":
		b, ok := boolValue(v)
		if !ok {
			bad("true or false", "write stream: true")
			return
		}
		a.Stream = &b
	case "http_allow":
		c.httpAllow(a, v)
	}
}

// httpAllow reads the list of internal hosts std.http may reach for this
// agent; every entry must parse, so that a typo cannot silently leave a
// host refused (or, worse, read as a broader rule than written).
func (c *compiler) httpAllow(a *ir.Agent, v *lang.Value) {
	const hint = `write http_allow: ["localhost:8080", "10.0.0.5"] (host or host:port)`
	if v.List == nil {
		c.errorAt(v.Pos, lang.CodeBadSetting, hint, "http_allow of agent %s must be a list of hosts, found %s", a.Name, describeValue(v))
		return
	}
	a.HTTPAllow = []string{}
	for _, it := range v.List.Items {
		if it.Value.Str == nil || it.Label != "" {
			c.errorAt(it.Pos, lang.CodeBadSetting, hint, "http_allow of agent %s holds host strings, found %s", a.Name, describeValue(it.Value))
			continue
		}
		host, port, err := ir.ParseHTTPAllow(it.Value.Str.Value())
		if err != nil {
			c.errorAt(it.Pos, lang.CodeBadSetting, hint, "http_allow of agent %s: %v", a.Name, err)
			continue
		}
		a.HTTPAllow = append(a.HTTPAllow, ir.FormatHTTPAllow(host, port))
	}
}

// resolveUses fills Uses and the exposed Tools of an agent.
func (c *compiler) resolveUses(a *ir.Agent, d *lang.Agent, prog *ir.Program) {
	toolNames := map[string]bool{}
	for _, t := range c.tools {
		toolNames[t.decl.DeclName()] = true
	}
	for _, n := range c.brokenTools {
		toolNames[n] = true
	}
	exposed := map[string]bool{}
	var toolList []string // sorted tool names (and built-in ones), computed for the first suggestion
	if len(d.Uses) == 0 {
		a.ImplicitTools = true
		for _, t := range c.tools {
			if _, ok := t.decl.(*lang.ToolFn); ok {
				exposed[t.decl.DeclName()] = true
			}
		}
		if len(exposed) > 0 {
			names := sortedKeys(exposed)
			shown := strings.Join(names[:min(len(names), 3)], ", ")
			if len(names) > 3 {
				shown += ", …"
			}
			c.warnAt(d.Name.Pos, lang.CodeImplicitTools, "add `uses "+shown+"` to choose the tools",
				"agent %s has no uses clause, so it is exposed to every @tool function (%s)", a.Name, joinNames(names))
		}
	}
	for _, u := range d.Uses {
		switch {
		case u.MCP != nil:
			spec := u.MCP.Value()
			c.checkMCPSpec(u.MCP.Pos, spec)
			a.Uses = append(a.Uses, ir.Use{Kind: ir.UseMCP, Name: spec})
		case u.File != nil:
			a.Uses = append(a.Uses, ir.Use{Kind: ir.UseSkill, Name: u.File.Value()})
			c.warnAt(u.Pos, lang.CodeSkill, "skill documents give the agent no tools in nexa agent",
				"skill document %q of agent %s accepted, no effect in nexa agent", u.File.Value(), a.Name)
		case len(u.Path) >= 2 && u.Path[0] == "std":
			entry := strings.Join(u.Path, ".")
			a.Uses = append(a.Uses, ir.Use{Kind: ir.UseStd, Name: entry})
			if tools, ok := stdlib.Tools(entry); ok {
				// std.NS: every tool of the namespace
				for _, t := range tools {
					exposed[t.Name] = true
					c.useBuiltin(t.Name, a.Name, entry, u.Pos)
				}
				continue
			}
			if tools, ok := stdlib.Tools(stdlib.Prefix + u.Path[1]); ok && len(u.Path) == 3 {
				// std.NS.TOOL: one tool of the namespace
				if t, found := findBuiltin(tools, u.Path[2]); found {
					exposed[t.Name] = true
					c.useBuiltin(t.Name, a.Name, entry, u.Pos)
					continue
				}
				names := make([]string, len(tools))
				for i, t := range tools {
					names[i] = t.Name
				}
				hint := fmt.Sprintf("the tools of %s%s are %s", stdlib.Prefix, u.Path[1], strings.Join(names, ", "))
				if best := c.closest(u.Path[2], names); best != "" {
					hint = fmt.Sprintf("did you mean `%s%s.%s`?", stdlib.Prefix, u.Path[1], best)
				}
				c.errorAt(u.Pos, lang.CodeUnknownTool, hint, "agent %s uses unknown built-in tool `%s`", a.Name, entry)
				continue
			}
			ns := strings.Join(u.Path[1:], ".")
			namespaces := stdlib.Namespaces()
			short := make([]string, len(namespaces))
			for i, n := range namespaces {
				short[i] = strings.TrimPrefix(n, stdlib.Prefix)
			}
			hint := "built-in namespaces: " + strings.Join(namespaces, ", ")
			if best := c.closest(ns, short); best != "" {
				hint = fmt.Sprintf("did you mean `std.%s`?", best)
			}
			c.warnAt(u.Pos, lang.CodeUnknownTool, hint, "unknown built-in namespace `std.%s` in agent %s; it gives no tools", ns, a.Name)
		default:
			name := strings.Join(u.Path, ".")
			a.Uses = append(a.Uses, ir.Use{Kind: ir.UseTool, Name: name})
			if toolNames[name] {
				exposed[name] = true
				continue
			}
			if _, ok := stdlib.Lookup(name); ok {
				// a built-in tool by its plain name, when no tool of the
				// program has that name
				exposed[name] = true
				c.useBuiltin(name, a.Name, name, u.Pos)
				continue
			}
			hint := "declare it with @tool(\"…\") fn " + name + "(…) or include the file that does"
			if toolList == nil {
				candidates := map[string]bool{}
				for n := range toolNames {
					candidates[n] = true
				}
				for _, t := range stdlib.All() {
					candidates[t.Name] = true
				}
				toolList = sortedKeys(candidates)
			}
			if best := c.closest(name, toolList); best != "" {
				hint = fmt.Sprintf("did you mean `%s`?", best)
			} else if _, isAgent := c.seen["agent"][name]; isAgent {
				hint = name + " is an agent; uses lists tools"
			}
			c.errorAt(u.Pos, lang.CodeUnknownTool, hint, "agent %s uses unknown tool `%s`", a.Name, name)
		}
	}
	a.Tools = sortedKeys(exposed)
	sort.Strings(a.Tools)
}

// builtinUse is the first uses entry that exposed a built-in tool: a tool
// of the program with the same name is an error that points at it.
type builtinUse struct {
	agent string
	entry string // as written: "std.fs", "std.fs.file_read" or "file_read"
	pos   lang.Position
}

// useBuiltin records that agent exposes the built-in tool name through
// entry, so that finish adds the tool to the program once.
func (c *compiler) useBuiltin(name, agent, entry string, pos lang.Position) {
	if _, seen := c.builtins[name]; seen {
		return
	}
	if c.builtins == nil {
		c.builtins = map[string]builtinUse{}
	}
	c.builtins[name] = builtinUse{agent: agent, entry: entry, pos: pos}
}

// findBuiltin returns the tool of that name among tools.
func findBuiltin(tools []stdlib.Tool, name string) (stdlib.Tool, bool) {
	for _, t := range tools {
		if t.Name == name {
			return t, true
		}
	}
	return stdlib.Tool{}, false
}

// addBuiltins appends to the program every built-in tool some agent
// exposes, once each and in the order of stdlib (namespace by namespace),
// after the program's own tools. A tool of the program with the name of
// one of them is an error: the agents using the namespace would see two
// tools of that name.
func (c *compiler) addBuiltins(prog *ir.Program) {
	if len(c.builtins) == 0 {
		return
	}
	for _, t := range c.tools {
		name := t.decl.DeclName()
		use, clash := c.builtins[name]
		if !clash {
			continue
		}
		d, _ := stdlib.Lookup(name)
		np := t.decl.NamePos()
		c.add(Diagnostic{
			File: np.Filename, Line: np.Line, Column: np.Column, Code: lang.CodeDuplicate,
			Message: fmt.Sprintf("tool `%s` has the name of the built-in tool %s of %s, which agent %s uses (%s at %s:%d:%d)",
				name, name, d.Namespace, use.agent, use.entry, use.pos.Filename, use.pos.Line, use.pos.Column),
			Hint:     "rename the tool: an agent that uses " + d.Namespace + " would see two tools named " + name,
			Severity: lang.SeverityError,
			Related:  []lang.Related{{File: use.pos.Filename, Line: use.pos.Line, Column: use.pos.Column, Message: use.entry + " used here"}},
		})
	}
	for _, d := range stdlib.All() {
		if _, used := c.builtins[d.Name]; used {
			prog.Tools = append(prog.Tools, builtinTool(d))
		}
	}
}

// builtinTool is the IR of a built-in tool: its declaration in stdlib, run
// by the runtime's builtin executor.
func builtinTool(d stdlib.Tool) *ir.Tool {
	params := d.Parameters
	var b bytes.Buffer
	if json.Compact(&b, d.Parameters) == nil {
		params = b.Bytes() // the same schema, written like the program's own
	}
	returns := d.Returns
	if returns == "" {
		returns = "string"
	}
	// The declarations are this project's own; a schema that cannot be
	// read leaves the tool without Params (a test reads every one).
	list, _ := ir.ParamsFromSchema(params)
	return &ir.Tool{
		Name: d.Name, Description: d.Description, Parameters: params, Params: list, Returns: returns,
		Risk: d.Risk, Timeout: d.Timeout, Idempotent: d.Idempotent, Category: d.Namespace,
		Body: ir.Body{Kind: ir.BodyBuiltin},
	}
}
