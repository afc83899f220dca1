// Package stdgen turns the built-in tool declarations of std.nx into Go
// data (catalog_gen.go in internal/stdlib). The declarations are compiled
// with nexa's own compiler, so they are checked like any program's tools
// (types, defaults, settings); doing it at `go generate` time rather than at
// start-up keeps every `nexa` command from compiling them again.
//
// The conventions std.nx follows on top of docs/language.md are written at
// the top of that file; Generate enforces them and fails with a message
// naming the tool and parameter at fault.
package stdgen

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/format"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/nexa-run/nexa/internal/compile"
	"github.com/nexa-run/nexa/internal/ir"
)

// SourceName is the file name std.nx is compiled under; diagnostics name it.
const SourceName = "std.nx"

// Generate compiles the std.nx source src and returns the gofmt'ed Go source
// of catalog_gen.go: the catalog of built-in tools, in the order of src,
// and the order of their namespaces. Any compiler diagnostic, warnings
// included, and any break of the std.nx conventions is an error: the file
// is this project's own, so there is nothing to tolerate.
func Generate(src []byte) ([]byte, error) {
	prog, diags := compile.Compile(SourceName, compile.Options{
		ReadFile: compile.MapFiles(map[string]string{SourceName: string(src)}),
	})
	if len(diags) > 0 {
		lines := make([]string, len(diags))
		for i, d := range diags {
			lines[i] = d.String()
		}
		return nil, fmt.Errorf("%s does not compile cleanly:\n%s", SourceName, strings.Join(lines, "\n"))
	}
	var (
		tools      []tool
		namespaces []string
		errs       []error
	)
	for _, d := range prog.Decls {
		if d.Kind != "tool" {
			errs = append(errs, fmt.Errorf("%s:%d: %s %s: %s declares built-in tools only, as @tool functions", SourceName, d.Line, d.Kind, d.Name, SourceName))
		}
	}
	if len(prog.Tools) == 0 {
		errs = append(errs, fmt.Errorf("%s declares no tools", SourceName))
	}
	for _, t := range prog.Tools {
		gt, err := fromIR(t)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s:%d: tool %s: %w", SourceName, t.Line, t.Name, err))
			continue
		}
		if n := len(namespaces); n == 0 || namespaces[n-1] != gt.namespace {
			if slices.Contains(namespaces, gt.namespace) {
				errs = append(errs, fmt.Errorf("%s:%d: tool %s: the tools of %s must be written together, and this one is apart from the others",
					SourceName, t.Line, t.Name, gt.namespace))
				continue
			}
			namespaces = append(namespaces, gt.namespace)
		}
		tools = append(tools, gt)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return render(tools, namespaces)
}

// tool is one built-in tool as catalog_gen.go spells it.
type tool struct {
	name, namespace, description, risk string
	parameters                         []byte // indented JSON Schema
	timeout                            int
	idempotent                         bool
}

// fromIR reads the declaration of one built-in tool out of its compiled
// form, checking what a built-in tool cannot express.
func fromIR(t *ir.Tool) (tool, error) {
	switch {
	case t.Body.Kind != ir.BodyNative || len(t.Body.Native) > 0:
		return tool{}, errors.New("the body must be empty, `{}`: built-in tools are implemented in internal/runtime/builtin")
	case !strings.HasPrefix(t.Category, "std.") || len(t.Category) == len("std."):
		return tool{}, fmt.Errorf(`category must name its namespace, such as category: "std.fs" (found %q)`, t.Category)
	case t.RequiresApproval || t.Sandbox || t.ApprovalTimeout != 0:
		return tool{}, errors.New("requires_approval, sandbox and approval_timeout are not part of a built-in declaration: approval follows from risk_level")
	case t.Returns != "string":
		return tool{}, fmt.Errorf("every built-in tool returns text: leave the return type out (found %s)", t.Returns)
	}
	schema, err := parametersSchema(t.Params)
	if err != nil {
		return tool{}, err
	}
	var indented bytes.Buffer
	if err := json.Indent(&indented, schema, "", "  "); err != nil {
		return tool{}, fmt.Errorf("indent parameters schema: %w", err)
	}
	return tool{
		name: t.Name, namespace: t.Category, description: foldLines(t.Description), risk: t.Risk,
		parameters: indented.Bytes(), timeout: t.Timeout, idempotent: t.Idempotent,
	}, nil
}

// foldLines joins the lines of a description wrapped in std.nx with single
// spaces, so the model reads one paragraph.
func foldLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSpace(l)
	}
	return strings.Join(lines, " ")
}

// parametersSchema is the JSON Schema of a built-in tool's arguments:
// the object schema of docs/reference/language.md#parameters-and-schemas, each property written as "type" (with
// "items" or "additionalProperties"), then the keywords of the
// parameter's comment, "default" and "description". The order is that of
// the hand-written catalogue this replaced, so that the schemas, and the
// hashes of programs that use them, stay byte for byte the same.
func parametersSchema(params []ir.Param) (json.RawMessage, error) {
	props := ir.NewObject()
	required := []string{}
	for _, p := range params {
		s, err := paramSchema(p)
		if err != nil {
			return nil, fmt.Errorf("parameter %s: %w", p.Name, err)
		}
		props.Set(p.Name, s)
		if p.Required {
			required = append(required, p.Name)
		}
	}
	return ir.CanonicalJSON(ir.NewObject().Set("type", "object").Set("properties", props).
		Set("required", required).Set("additionalProperties", false)), nil
}

func paramSchema(p ir.Param) (*ir.Object, error) {
	if p.Type == nil {
		return nil, errors.New("has no type")
	}
	if p.Description == "Parameter "+p.Name || p.Type.Description != "" {
		// the compiler's stand-in, or an alias constraint appended to it
		return nil, errors.New("needs a comment, the description the model reads (and no type alias with a constraint)")
	}
	typ := *p.Type
	if typ.Kind == ir.KindUnion {
		return nil, errors.New("unions are not supported in built-in declarations")
	}
	// `T?` only means the argument may be left out: built-in tools never
	// take null.
	typ.Nullable = false
	desc, keywords, err := splitKeywords(p.Description)
	if err != nil {
		return nil, err
	}
	s := typ.Schema()
	for _, k := range keywordOrder {
		v, ok := keywords[k]
		if !ok {
			continue
		}
		if err := checkKeyword(k, v, typ.Kind); err != nil {
			return nil, err
		}
		s.Set(k, v)
	}
	if p.Default != nil {
		s.Set("default", p.Default)
	}
	return s.Set("description", desc), nil
}

// keywordOrder lists the schema keywords a parameter's comment may add,
// in the order they are written into the schema.
var keywordOrder = []string{"minimum", "maximum", "minLength", "maxLength", "enum", "pattern"}

// splitKeywords separates the JSON object of schema keywords that may end a
// parameter's comment from the description before it.
func splitKeywords(comment string) (string, map[string]json.RawMessage, error) {
	if !strings.HasSuffix(comment, "}") {
		return comment, nil, nil
	}
	for i := 0; i < len(comment); i++ {
		if comment[i] != '{' || (i > 0 && comment[i-1] != ' ') {
			continue
		}
		keywords, err := decodeKeywords(comment[i:])
		if err != nil {
			continue
		}
		desc := strings.TrimSpace(comment[:i])
		if desc == "" {
			return "", nil, errors.New("the comment has schema keywords but no description before them")
		}
		return desc, keywords, nil
	}
	return "", nil, fmt.Errorf("the comment ends with %q, which is not a JSON object of schema keywords", comment[strings.LastIndex(comment, "{"):])
}

// decodeKeywords decodes text, which must be exactly one JSON object, into
// its members, refusing a keyword that is not in keywordOrder or is given
// twice.
func decodeKeywords(text string) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(strings.NewReader(text))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("not an object")
	}
	out := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		if !slices.Contains(keywordOrder, key) {
			return nil, fmt.Errorf("unknown keyword %q", key)
		}
		if _, dup := out[key]; dup {
			return nil, fmt.Errorf("keyword %q given twice", key)
		}
		var b bytes.Buffer
		if err := json.Compact(&b, v); err != nil {
			return nil, err
		}
		out[key] = b.Bytes()
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if dec.More() || dec.InputOffset() != int64(len(text)) {
		return nil, errors.New("text after the object")
	}
	return out, nil
}

// checkKeyword refuses a keyword whose value is of the wrong type or that
// does not apply to a parameter of kind kind.
func checkKeyword(k string, v json.RawMessage, kind ir.TypeKind) error {
	numeric := kind == ir.KindInteger || kind == ir.KindNumber
	switch k {
	case "minimum", "maximum":
		var f float64
		if !numeric || json.Unmarshal(v, &f) != nil {
			return fmt.Errorf("%s applies to a number parameter and takes a number", k)
		}
	case "minLength", "maxLength":
		if _, err := strconv.ParseUint(string(v), 10, 31); kind != ir.KindString || err != nil {
			return fmt.Errorf("%s applies to a string parameter and takes a whole number ≥ 0", k)
		}
	case "pattern":
		var re string
		if kind != ir.KindString || json.Unmarshal(v, &re) != nil {
			return errors.New("pattern applies to a string parameter and takes a string")
		}
		if _, err := regexp.Compile(re); err != nil {
			return fmt.Errorf("pattern %q: %w", re, err)
		}
	case "enum":
		var vals []any
		if json.Unmarshal(v, &vals) != nil || len(vals) == 0 {
			return errors.New("enum takes a non-empty list of values")
		}
	}
	return nil
}

// render writes catalog_gen.go.
func render(tools []tool, namespaces []string) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("// Code generated by \"go generate\" from std.nx; DO NOT EDIT.\n\n")
	b.WriteString("package stdlib\n\n")
	b.WriteString("// namespaceOrder is the order of the namespaces in std.nx: that of\n")
	b.WriteString("// Namespaces() and of the compiler's hints.\n")
	b.WriteString("var namespaceOrder = [...]string{")
	for i, ns := range namespaces {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(ns))
	}
	b.WriteString("}\n\n")
	b.WriteString("// catalog is every built-in tool of std.nx, in its order.\n")
	b.WriteString("var catalog = [...]decl{\n")
	for _, t := range tools {
		fmt.Fprintf(&b, "\t{\n\t\tname: %q, namespace: %q, risk: %q, timeout: %d, idempotent: %t,\n",
			t.name, t.namespace, t.risk, t.timeout, t.idempotent)
		fmt.Fprintf(&b, "\t\tdescription: %s,\n", strconv.Quote(t.description))
		fmt.Fprintf(&b, "\t\tparameters: %s,\n\t},\n", goString(string(t.parameters)))
	}
	b.WriteString("}\n")
	out, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("format generated code: %w", err)
	}
	return out, nil
}

// goString is s as a Go string literal: raw, for the indented schemas to
// read as JSON, unless s holds a backquote or carriage return.
func goString(s string) string {
	if strings.ContainsAny(s, "`\r") {
		return strconv.Quote(s)
	}
	return "`" + s + "`"
}
