package lang

import "fmt"

// normalize fills the derived fields of nodes whose grammar is written
// LL(1) (a value, then an optional `: value`), and reports the forms that
// parse but make no sense (`"x": 1` as a decorator argument name, …).
func normalize(d Decl, tl *tokenList) Diagnostics {
	n := &normalizer{}
	switch v := d.(type) {
	case *ToolFn:
		n.decorators(v.Decorators)
		for _, p := range v.Params {
			n.value(p.Default)
		}
	case *Agent:
		n.decorators(v.Decorators)
		for _, cl := range v.Clauses {
			cl.Tokens = tl.between(cl.Pos.Offset, cl.EndPos.Offset)
		}
		for _, u := range v.Uses {
			if u.Spec != nil {
				if len(u.Path) == 1 && u.Path[0] == "mcp" {
					u.MCP = u.Spec
				} else {
					n.errorf(u.Pos, `write mcp:"stdio:…" for an MCP server`, "expected `,` or `{` after the uses entry, found `:`")
				}
			}
		}
		for _, it := range v.Items {
			switch {
			case it.Value != nil:
				it.Prop = &Property{Pos: it.Pos, Key: it.Key, Value: it.Value}
				n.value(it.Value)
			case it.Key.Name() == "context":
				it.Context = &ContextBlock{Pos: it.Pos, Props: it.Block}
				for _, p := range it.Block {
					n.value(p.Value)
				}
			default:
				n.errorf(it.Pos, fmt.Sprintf("write `%s: value`; only `context { … }` takes a block", it.Key.Name()),
					"expected `:` after `%s`, found `{`", it.Key.Name())
			}
		}
	case *LegacyTool:
		for _, p := range v.Props {
			n.value(p.Value)
		}
	}
	return n.diags
}

type normalizer struct{ diags Diagnostics }

func (n *normalizer) errorf(pos Position, hint, format string, args ...any) {
	n.diags = append(n.diags, Diagnostic{File: pos.Filename, Line: pos.Line, Column: pos.Column,
		Code: CodeSyntax, Message: fmt.Sprintf(format, args...), Hint: hint, Severity: SeverityError})
}

func (n *normalizer) decorators(ds []*Decorator) {
	for _, d := range ds {
		for _, a := range d.Args {
			if a.Named == nil {
				a.Value = a.First
				n.value(a.Value)
				continue
			}
			a.Value = a.Named
			if a.First.Ref != nil && len(a.First.Ref.Parts) == 1 {
				a.Name = a.First.Ref.Parts[0]
			} else {
				a.NameErr = true
				n.errorf(a.First.Pos, "write name: value or name=value", "expected a setting name, found %s", valueForm(a.First))
			}
			n.value(a.Value)
		}
	}
}

// value normalizes nested lists and objects (bounded by the bracket depth
// the splitter allows).
func (n *normalizer) value(v *Value) {
	if v == nil {
		return
	}
	switch {
	case v.List != nil:
		for _, it := range v.List.Items {
			if it.Labeled == nil {
				it.Value = it.First
			} else {
				it.Value = it.Labeled
				if it.First.Ref != nil && len(it.First.Ref.Parts) == 1 {
					it.Label = it.First.Ref.Parts[0]
				} else {
					n.errorf(it.First.Pos, `write label: value, as in fallback: "model"`, "expected a label, found %s", valueForm(it.First))
				}
			}
			n.value(it.Value)
		}
	case v.Object != nil:
		for _, e := range v.Object.Entries {
			n.value(e.Value)
		}
	}
}

func valueForm(v *Value) string {
	switch {
	case v.Str != nil:
		return "a string"
	case v.Number != nil:
		return "a number"
	case v.Bool != nil:
		return *v.Bool
	case v.List != nil:
		return "a list"
	case v.Object != nil:
		return "an object"
	case v.Ref != nil:
		return "`" + v.Ref.String() + "`"
	}
	return "a value"
}
