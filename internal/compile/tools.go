package compile

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/nexa-run/nexa/internal/ir"
	"github.com/nexa-run/nexa/internal/lang"
)

// Risk levels of docs/reference/language.md#annotated-tools, lowest first.
var riskLevels = []string{"low", "medium", "high", "critical"}

// toolSettings are the @tool settings nexa knows. Any other name is an
// error: a misspelt setting (requires_aproval) must not silently switch
// off what it was meant to switch on. Nexa 2.3 reads only risk_level,
// requires_approval and sandbox of a tool (and has a category), all known
// here, so no tool setting of 2.3 is ignored (docs/language.md#45-nexa-23-settings-that-nexa-ignores).
var toolSettings = []string{"description", "risk_level", "requires_approval", "sandbox", "timeout", "approval_timeout", "idempotent", "parallel", "category"}

// DefaultToolTimeout is the timeout of a tool that sets none, in seconds.
const DefaultToolTimeout = 60

// compileTools compiles every tool declaration, in program order.
func (c *compiler) compileTools() []*ir.Tool {
	out := make([]*ir.Tool, len(c.tools))
	for i, t := range c.tools {
		out[i] = c.compileTool(t)
	}
	return out
}

func (c *compiler) compileTool(t *toolDecl) *ir.Tool {
	switch d := t.decl.(type) {
	case *lang.ToolFn:
		return c.compileToolFn(d, t.src)
	case *lang.LegacyTool:
		return c.compileLegacyTool(d, t.src)
	}
	return nil
}

func (c *compiler) compileToolFn(fn *lang.ToolFn, src *source) *ir.Tool {
	name := fn.Name.Name
	tool := &ir.Tool{Name: name, Risk: "low", Timeout: DefaultToolTimeout, Returns: "string", File: src.path, Line: fn.Pos.Line}
	var deco *lang.Decorator
	for _, d := range fn.Decorators {
		if d.Name == "tool" {
			if deco != nil {
				c.errorAt(d.Pos, lang.CodeDuplicate, "keep one @tool(…)", "tool %s has two @tool decorators", name)
				continue
			}
			deco = d
			continue
		}
		hint := "a function takes only @tool(\"description\", settings…)"
		if best := c.closest(d.Name, []string{"tool"}); best != "" {
			hint = "did you mean `@tool`?"
		}
		c.errorAt(d.Pos, lang.CodeBadDecorator, hint, "unknown decorator @%s on fn %s", d.Name, name)
	}
	if deco == nil {
		c.errorAt(fn.Pos, lang.CodeMissingDesc, `write @tool("what the tool does") on the line before fn`,
			"fn %s has no @tool(\"description\") decorator", name)
	} else {
		c.toolSettings(tool, deco)
		for _, a := range deco.Args {
			if a.Name == "approval_timeout" {
				c.checkApprovalTimeout(tool, a.Pos)
				break
			}
		}
	}
	if tool.Description == "" && deco != nil {
		c.errorAt(deco.Pos, lang.CodeMissingDesc, `the first argument of @tool is the description the model reads: @tool("Search the web", …)`,
			"tool %s needs a non-empty description", name)
	}
	params := make([]ir.Param, 0, len(fn.Params))
	for i, p := range fn.Params {
		if prev := findParam(fn.Params[:i], p.Name); prev != nil {
			c.add(Diagnostic{File: p.Pos.Filename, Line: p.Pos.Line, Column: p.Pos.Column, Code: lang.CodeDuplicate,
				Message:  fmt.Sprintf("duplicate parameter `%s` of tool %s: first at %d:%d", p.Name, name, prev.Pos.Line, prev.Pos.Column),
				Hint:     "rename or remove one of them",
				Severity: lang.SeverityError,
				Related:  []lang.Related{{File: prev.Pos.Filename, Line: prev.Pos.Line, Column: prev.Pos.Column, Message: "first declared here"}}})
			continue
		}
		if p.Type == nil {
			c.errorAt(p.Pos, lang.CodeUntypedParam,
				fmt.Sprintf("write `%s: string` (or int, float, bool, list[T], …); 2.3 treated untyped parameters as strings, the 2.4 path needs the type", p.Name),
				"parameter `%s` of tool %s has no type", p.Name, name)
			continue
		}
		ti := c.resolveType(p.Type, typeCtx{"parameter ", p.Name, " of tool ", name})
		param := ir.Param{Name: p.Name, Type: nullable(ti), Description: "Parameter " + p.Name, Required: !ti.optional}
		if p.Doc != "" {
			param.Description = p.Doc
		}
		if constraint := param.Type.Description; constraint != "" {
			// a semantic type's constraint (type Email = str @ "…")
			param.Description += " (" + constraint + ")"
		}
		if p.Default != nil {
			if def, ok := c.defaultJSON(p.Default, ti, p.Name); ok {
				param.Default = ir.CanonicalJSON(def)
			}
			param.Required = false
		}
		params = append(params, param)
	}
	tool.Params = params
	tool.Parameters = ir.ParametersSchema(params)
	if fn.Returns != nil {
		c.resolveType(fn.Returns, typeCtx{"the return type of tool ", name})
		tool.Returns = fn.Returns.String()
	}
	tool.Body = c.toolBody(fn, tool)
	return tool
}

// findParam returns the parameter of that name among params, or nil.
func findParam(params []*lang.Param, name string) *lang.Param {
	for _, p := range params {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// toolSettings reads the arguments of @tool(…).
func (c *compiler) toolSettings(tool *ir.Tool, deco *lang.Decorator) {
	var set []string // the settings given so far (a handful)
	for i, a := range deco.Args {
		key := a.Name
		if key == "" {
			if i == 0 {
				key = "description"
			} else {
				c.errorAt(a.Pos, lang.CodeBadSetting, "write settings as name: value, e.g. risk_level: \"high\"",
					"unexpected positional argument in @tool; only the description comes first without a name")
				continue
			}
		}
		if contains(set, key) {
			c.errorAt(a.Pos, lang.CodeDuplicate, "keep one of them", "setting `%s` given twice in @tool of %s", key, tool.Name)
			continue
		}
		set = append(set, key)
		c.toolSetting(tool, key, a.Value, a.Pos)
	}
}

// toolSetting applies one setting (from @tool or a legacy tool block).
func (c *compiler) toolSetting(tool *ir.Tool, key string, v *lang.Value, pos lang.Position) {
	switch key {
	case "description":
		if v.Str == nil {
			c.errorAt(v.Pos, lang.CodeBadSetting, "write the description as a string", "description of tool %s must be a string, found %s", tool.Name, describeValue(v))
			return
		}
		tool.Description = strings.TrimSpace(v.Str.Value())
	case "risk_level":
		s, ok := wordValue(v)
		if !ok || !contains(riskLevels, s) {
			hint := "risk_level is one of low, medium, high, critical"
			if best := c.closest(s, riskLevels); ok && best != "" {
				hint = fmt.Sprintf("did you mean %q?", best)
			}
			c.errorAt(v.Pos, lang.CodeBadSetting, hint, "risk_level of tool %s must be low, medium, high or critical, found %s", tool.Name, describeValue(v))
			return
		}
		tool.Risk = s
	case "requires_approval", "sandbox", "idempotent", "parallel":
		b, ok := boolValue(v)
		if !ok {
			c.errorAt(v.Pos, lang.CodeBadSetting, fmt.Sprintf("write %s: true or %s: false", key, key),
				"%s of tool %s must be true or false, found %s", key, tool.Name, describeValue(v))
			return
		}
		switch key {
		case "requires_approval":
			tool.RequiresApproval = b
		case "sandbox":
			tool.Sandbox = b
		case "idempotent":
			tool.Idempotent = b
		case "parallel":
			tool.Exclusive = !b
		}
	case "timeout":
		n, ok := intValue(v)
		if !ok || n <= 0 {
			c.errorAt(v.Pos, lang.CodeBadSetting, "write the timeout in whole seconds, e.g. timeout: 30",
				"timeout of tool %s must be a positive whole number of seconds, found %s", tool.Name, describeValue(v))
			return
		}
		tool.Timeout = n
	case "approval_timeout":
		n, ok := intValue(v)
		if !ok || n <= 0 {
			c.errorAt(v.Pos, lang.CodeBadSetting, "write how long a call may wait for a decision in whole seconds, e.g. approval_timeout: 3600",
				"approval_timeout of tool %s must be a positive whole number of seconds, found %s", tool.Name, describeValue(v))
			return
		}
		tool.ApprovalTimeout = n
	case "category":
		s, ok := wordValue(v)
		if !ok {
			c.errorAt(v.Pos, lang.CodeBadSetting, "write category: \"name\"", "category of tool %s must be a string, found %s", tool.Name, describeValue(v))
			return
		}
		tool.Category = s
	default:
		hint := "known settings: " + strings.Join(toolSettings, ", ")
		if best := c.closest(key, toolSettings); best != "" {
			hint = fmt.Sprintf("did you mean `%s`?", best)
		}
		c.errorAt(pos, lang.CodeUnknownSetting, hint, "unknown setting `%s` of tool %s", key, tool.Name)
	}
}

// checkApprovalTimeout warns when a tool sets approval_timeout (at pos)
// but its calls never wait for a decision by its own declaration. It is
// not an error: a policy rule may still ask a person about such a call,
// and then the bound applies.
func (c *compiler) checkApprovalTimeout(tool *ir.Tool, pos lang.Position) {
	if tool.ApprovalTimeout > 0 && !tool.NeedsApproval() {
		c.warnAt(pos, lang.CodeNoEffect, "add requires_approval: true (or risk_level: \"high\") if calls of the tool should wait for a person",
			"approval_timeout of tool %s has an effect only when a call waits for approval; the tool needs none unless a policy rule asks", tool.Name)
	}
}

// wordValue reads a string or bare word.
func wordValue(v *lang.Value) (string, bool) {
	switch {
	case v.Str != nil:
		return v.Str.Value(), true
	case v.Ref != nil:
		return v.Ref.String(), true
	}
	return "", false
}

// boolValue reads true/false, bare or quoted.
func boolValue(v *lang.Value) (bool, bool) {
	s := ""
	switch {
	case v.Bool != nil:
		s = *v.Bool
	case v.Str != nil:
		s = strings.TrimSpace(v.Str.Value())
	default:
		return false, false
	}
	switch s {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}

// numericSetting reads a setting's number, bare or quoted, as numberValue
// gives it (int64 or float64).
func numericSetting(v *lang.Value) (any, bool) {
	switch {
	case v.Number != nil:
		return numberValue(v.Number.Text, v.Number.Neg), true
	case v.Str != nil:
		s := strings.TrimSpace(v.Str.Value())
		neg := strings.HasPrefix(s, "-")
		s = strings.TrimPrefix(s, "-")
		if s == "" || strings.Trim(s, "0123456789.eE+-") != "" {
			return nil, false
		}
		return numberValue(s, neg), true
	}
	return nil, false
}

// intValue reads a whole number, bare or quoted.
func intValue(v *lang.Value) (int, bool) {
	x, ok := numericSetting(v)
	if !ok {
		return 0, false
	}
	switch n := x.(type) {
	case int64:
		if n > 1<<31 || n < -(1<<31) {
			return 0, false
		}
		return int(n), true
	case float64:
		if n == float64(int64(n)) && n < 1<<31 && n > -(1<<31) {
			return int(n), true
		}
	}
	return 0, false
}

// floatValue reads a number, bare or quoted.
func floatValue(v *lang.Value) (float64, bool) {
	x, ok := numericSetting(v)
	if !ok {
		return 0, false
	}
	switch n := x.(type) {
	case int64:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// toolBody classifies and lowers the body of an annotated function.
func (c *compiler) toolBody(fn *lang.ToolFn, tool *ir.Tool) ir.Body {
	stmts := fn.Body.Stmts
	var py *lang.PythonStmt
	for _, s := range stmts {
		if s.Python != nil {
			py = s.Python
			break
		}
	}
	if py != nil {
		if len(stmts) > 1 {
			for _, s := range stmts {
				if s.Python != py {
					c.errorAt(s.Pos, lang.CodeBadBody,
						"put all of the code inside the python! block",
						"the body of tool %s has a python! block, so it may contain nothing else", tool.Name)
					break
				}
			}
		}
		return ir.Body{Kind: ir.BodyPython, Python: Dedent(py.Code.Value())}
	}
	scope := map[string]bool{}
	for _, p := range fn.Params {
		scope[p.Name] = true
	}
	l := &lowerer{c: c, tool: tool.Name, scope: scope}
	return ir.Body{Kind: ir.BodyNative, Native: l.block(stmts)}
}

// Dedent removes the common leading whitespace of the non-blank lines of a
// python! body and drops blank first and last lines, so that flush-left and
// indented bodies both become valid Python. A first line that has text on
// the line of the opening quotes keeps its text; the common indentation is
// then taken from the following lines.
func Dedent(text string) string {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	lines := strings.Split(text, "\n")
	for len(lines) > 0 && strings.TrimSpace(lines[0]) == "" {
		lines = lines[1:]
	}
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	switch {
	case len(lines) == 0:
		return ""
	case !startsOnQuoteLine(text):
		return ir.RemoveMargin(strings.Join(lines, "\n"))
	case len(lines) == 1:
		return strings.TrimLeft(lines[0], " \t")
	}
	return strings.TrimLeft(lines[0], " \t") + "\n" + ir.RemoveMargin(strings.Join(lines[1:], "\n"))
}

// startsOnQuoteLine reports whether the body's first text is on the line of
// the opening quotes (`python! """return x"""`).
func startsOnQuoteLine(text string) bool {
	i := strings.IndexByte(text, '\n')
	if i < 0 {
		return true
	}
	return strings.TrimSpace(text[:i]) != ""
}

// legacyKeys are the properties of a legacy tool block.
var legacyKeys = []string{"description", "parameters", "mcp", "python", "risk_level", "requires_approval", "sandbox", "timeout", "approval_timeout", "idempotent", "parallel", "category", "returns"}

func (c *compiler) compileLegacyTool(lt *lang.LegacyTool, src *source) *ir.Tool {
	name := lt.Name.Name
	tool := &ir.Tool{Name: name, Risk: "low", Timeout: DefaultToolTimeout, Returns: "string", File: src.path, Line: lt.Pos.Line}
	props := map[string]*lang.Property{}
	for _, p := range lt.Props {
		k := p.Key.Name()
		if _, dup := props[k]; dup {
			c.errorAt(p.Pos, lang.CodeDuplicate, "keep one of them", "property `%s` given twice in tool %s", k, name)
			continue
		}
		props[k] = p
	}
	params := []ir.Param{}
	if p, ok := props["parameters"]; ok {
		if p.Value.Object == nil {
			c.errorAt(p.Value.Pos, lang.CodeBadSetting, `write parameters: { "name": "string", … }`,
				"parameters of tool %s must be an object of parameter names and types, found %s", name, describeValue(p.Value))
		} else {
			for _, e := range p.Value.Object.Entries {
				pname := e.Key.Name()
				var te *lang.TypeExpr
				switch {
				case e.Value.Str != nil:
					t, ok := c.parseQuotedType(e.Value.Str)
					if !ok {
						continue
					}
					te = t
				case e.Value.Ref != nil && len(e.Value.Ref.Parts) == 1:
					te = &lang.TypeExpr{Pos: e.Value.Pos, Alts: []*lang.TypeTerm{{Pos: e.Value.Pos, Name: e.Value.Ref.Parts[0]}}}
				default:
					c.errorAt(e.Value.Pos, lang.CodeUnknownType, `write the type as a string, e.g. "string" or "list[int]"`,
						"type of parameter `%s` of tool %s must be a type name, found %s", pname, name, describeValue(e.Value))
					continue
				}
				ti := c.resolveType(te, typeCtx{"parameter ", pname, " of tool ", name})
				params = append(params, ir.Param{Name: pname, Type: nullable(ti), Description: "Parameter " + pname, Required: !ti.optional})
			}
		}
	}
	tool.Params = params
	tool.Parameters = ir.ParametersSchema(params)
	for _, k := range toolSettings {
		if p, ok := props[k]; ok {
			c.toolSetting(tool, k, p.Value, p.Pos)
		}
	}
	if p, ok := props["approval_timeout"]; ok {
		c.checkApprovalTimeout(tool, p.Pos)
	}
	for _, p := range lt.Props {
		k := p.Key.Name()
		if !contains(legacyKeys, k) {
			hint := "known properties: " + strings.Join(legacyKeys, ", ")
			if best := c.closest(k, legacyKeys); best != "" {
				hint = fmt.Sprintf("did you mean `%s`?", best)
			}
			c.errorAt(p.Pos, lang.CodeUnknownSetting, hint, "unknown property `%s` of tool %s", k, name)
		}
	}
	if p, ok := props["returns"]; ok {
		if s, ok := wordValue(p.Value); ok {
			tool.Returns = s
		} else {
			c.errorAt(p.Value.Pos, lang.CodeBadSetting, `write returns: "string" (or another type name)`,
				"returns of tool %s must be a type name, found %s", name, describeValue(p.Value))
		}
	}
	mcp, hasMCP := props["mcp"]
	py, hasPy := props["python"]
	switch {
	case hasMCP && hasPy:
		c.errorAt(py.Pos, lang.CodeBadBody, "declare two tools", "tool %s cannot be both an MCP server and a Python file", name)
	case hasMCP:
		spec, ok := wordValue(mcp.Value)
		if !ok || mcp.Value.Str == nil {
			c.errorAt(mcp.Value.Pos, lang.CodeBadSetting, `write mcp: "stdio:command args" or mcp: "https://…"`,
				"mcp of tool %s must be a string, found %s", name, describeValue(mcp.Value))
		} else {
			c.checkMCPSpec(mcp.Value.Pos, spec)
		}
		tool.Body = ir.Body{Kind: ir.BodyMCP, MCP: spec}
		if tool.Description == "" {
			tool.Description = "Tools of the MCP server " + spec
		}
		return tool
	case hasPy:
		file, ok := wordValue(py.Value)
		if !ok || py.Value.Str == nil || strings.TrimSpace(file) == "" {
			c.errorAt(py.Value.Pos, lang.CodeBadSetting, `write python: "file.py"`, "python of tool %s must be a file name, found %s", name, describeValue(py.Value))
			return tool
		}
		resolved := file
		if !filepath.IsAbs(file) {
			resolved = filepath.Join(filepath.Dir(src.path), file)
			if c.opts.ReadFile == nil {
				// the runtime runs tools in the run's working directory,
				// so the IR names the file absolutely
				if abs, err := filepath.Abs(resolved); err == nil {
					resolved = abs
				}
			}
		}
		if data, err := c.opts.read(resolved); err != nil {
			c.warnAt(py.Value.Pos, lang.CodeIncludeNotFound, "nexa agent will fail when the model calls this tool",
				"python file %s of tool %s cannot be read: %v", resolved, name, unwrapPathErr(err))
		} else {
			c.extra = append(c.extra, data)
		}
		tool.Body = ir.Body{Kind: ir.BodyPython, PythonFile: resolved}
		if tool.Description == "" {
			c.warnAt(lt.Pos, lang.CodeMissingDesc, `add description: "…" so that the model knows what the tool does`,
				"tool %s has no description", name)
		}
		return tool
	}
	tool.Body = ir.Body{Kind: ir.BodySchema}
	if tool.Description == "" {
		c.errorAt(lt.Name.Pos, lang.CodeMissingDesc, `add description: "what the tool does"`, "tool %s needs a non-empty description", name)
	}
	return tool
}

// checkMCPSpec accepts the MCP server forms of docs/reference/runtime.md#mcp-tools.
func (c *compiler) checkMCPSpec(pos lang.Position, spec string) {
	s := strings.TrimSpace(spec)
	switch {
	case strings.HasPrefix(s, "http://"), strings.HasPrefix(s, "https://"):
		return
	case strings.HasPrefix(s, "stdio:") && strings.TrimSpace(strings.TrimPrefix(s, "stdio:")) != "":
		return
	}
	// 2.x accepted any text here; keep such programs valid, but say that
	// nexa agent cannot start this server (its tools then fail when used).
	c.warnAt(pos, lang.CodeBadSetting, `write "stdio:COMMAND ARGS…" or an http:// / https:// URL`,
		"MCP server %q is neither a stdio: command nor an http(s) URL; nexa agent cannot start it", spec)
}
