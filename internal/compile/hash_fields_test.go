package compile

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/nexa-run/nexa/internal/ir"
)

// coverage says how one field of the IR enters the program hash.
type coverage struct {
	how hashedAs
	// why explains an exclusion (required), or how a hashed field is
	// encoded when that is not as it is.
	why string
}

type hashedAs int

const (
	// hashed: the canonical IR (canonicalForm) encodes the field, so
	// changing it changes every hash.
	hashed hashedAs = iota
	// inSchema: a tool's parameter list or a part of it, encoded in
	// Tool.Parameters, which ir.ParametersSchema generates from it and
	// which is hashed.
	inSchema
	// excluded: the hash does not cover the field; why says why that is
	// safe.
	excluded
)

func (h hashedAs) String() string {
	return [...]string{"hashed", "inSchema", "excluded"}[h]
}

// irFieldCoverage is the decision, for every field of every struct of
// internal/ir reachable from ir.Program, whether the program hash covers
// it. A field added to the IR without a line here fails
// TestEveryIRFieldIsHashedOrExcluded; a line that does not match what the
// encoding does fails TestIRFieldCoverageIsTrue.
var irFieldCoverage = map[string]coverage{
	"Program.Hash":         {excluded, "it is the hash"},
	"Program.Files":        {hashed, "not as paths, which depend on the machine, but as each declaration's file index and as the base that python files are made relative to"},
	"Program.Tools":        {hashed, ""},
	"Program.Agents":       {hashed, ""},
	"Program.Protocols":    {hashed, ""},
	"Program.Decls":        {hashed, ""},
	"Program.SecretFiles":  {excluded, "secrets never enter the IR or the hash (docs/reference/language.md#compiled-program-and-hash); the runtime reads them"},
	"Program.ActiveConfig": {hashed, ""},

	"Tool.Name":             {hashed, ""},
	"Tool.Description":      {hashed, ""},
	"Tool.Parameters":       {hashed, ""},
	"Tool.Params":           {inSchema, "not encoded itself: the compiler generates Parameters from it (ir.ParametersSchema), or reads it from a declared schema (ir.ParamsFromSchema)"},
	"Tool.Returns":          {hashed, ""},
	"Tool.Risk":             {hashed, ""},
	"Tool.RequiresApproval": {hashed, ""},
	"Tool.Sandbox":          {hashed, ""},
	"Tool.Timeout":          {hashed, ""},
	"Tool.ApprovalTimeout":  {hashed, "left out of the encoding while zero, so programs that do not set it keep their hash"},
	"Tool.Idempotent":       {hashed, ""},
	"Tool.Exclusive":        {hashed, "left out of the encoding while false, so programs that do not set parallel: false keep their hash"},
	"Tool.Category":         {hashed, ""},
	"Tool.Body":             {hashed, ""},
	"Tool.File":             {excluded, "a path that depends on the machine; the tool's entry in Decls names its file by index, and the file's bytes are hashed"},
	"Tool.Line":             {excluded, "a position: moving a declaration changes the source bytes, which are hashed, and Decls has the line"},

	"Body.Kind":       {hashed, ""},
	"Body.Python":     {hashed, ""},
	"Body.PythonFile": {hashed, "relative to the main file's directory, so the hash does not depend on where the program lives; the file's bytes are hashed too"},
	"Body.MCP":        {hashed, ""},
	"Body.Native":     {hashed, "as ir.StmtsJSON"},

	"Param.Name":        {inSchema, ""},
	"Param.Type":        {inSchema, ""},
	"Param.Description": {inSchema, ""},
	"Param.Required":    {inSchema, ""},
	"Param.Default":     {inSchema, ""},

	"Type.Kind":        {inSchema, ""},
	"Type.Nullable":    {inSchema, ""},
	"Type.Items":       {inSchema, ""},
	"Type.Values":      {inSchema, ""},
	"Type.Fields":      {inSchema, ""},
	"Type.Alts":        {inSchema, ""},
	"Type.Description": {inSchema, ""},

	"Field.Name": {inSchema, ""},
	"Field.Type": {inSchema, ""},

	"Agent.Name":             {hashed, ""},
	"Agent.Prompt":           {hashed, ""},
	"Agent.Role":             {hashed, ""},
	"Agent.Model":            {hashed, ""},
	"Agent.ModelFallbacks":   {hashed, ""},
	"Agent.Tools":            {hashed, ""},
	"Agent.ImplicitTools":    {hashed, ""},
	"Agent.Uses":             {hashed, ""},
	"Agent.Implements":       {hashed, ""},
	"Agent.Returns":          {hashed, ""},
	"Agent.MaxToolCalls":     {hashed, ""},
	"Agent.ToolCallStrategy": {hashed, ""},
	"Agent.Timeout":          {hashed, ""},
	"Agent.Retry":            {hashed, ""},
	"Agent.Temperature":      {hashed, ""},
	"Agent.MaxTokens":        {hashed, ""},
	"Agent.OutputFormat":     {hashed, ""},
	"Agent.Stream":           {hashed, ""},
	"Agent.HTTPAllow":        {excluded, "derived from the http_allow property, which Properties keeps and the hash covers"},
	"Agent.Properties":       {hashed, ""},
	"Agent.Requires":         {hashed, ""},
	"Agent.Ensures":          {hashed, ""},
	"Agent.File":             {excluded, "a path that depends on the machine; Decls names the agent's file by index, and its bytes are hashed"},
	"Agent.Line":             {excluded, "a position: the source bytes are hashed, and Decls has the line"},

	"Use.Kind": {hashed, ""},
	"Use.Name": {hashed, ""},

	"Protocol.Name":   {hashed, ""},
	"Protocol.Schema": {hashed, ""},
	"Protocol.File":   {excluded, "a path that depends on the machine; Decls names the protocol's file by index, and its bytes are hashed"},
	"Protocol.Line":   {excluded, "a position: the source bytes are hashed, and Decls has the line"},

	"Decl.Kind": {hashed, ""},
	"Decl.Name": {hashed, ""},
	"Decl.File": {hashed, "as its index in Program.Files"},
	"Decl.Line": {hashed, ""},

	"ReturnStmt.Value": {hashed, ""},
	"ReturnStmt.Line":  {excluded, "a position: the source bytes are hashed"},
	"PrintStmt.Value":  {hashed, ""},
	"PrintStmt.Line":   {excluded, "a position: the source bytes are hashed"},
	"AssignStmt.Name":  {hashed, ""},
	"AssignStmt.Value": {hashed, ""},
	"AssignStmt.Line":  {excluded, "a position: the source bytes are hashed"},
	"IfStmt.Cond":      {hashed, ""},
	"IfStmt.Then":      {hashed, ""},
	"IfStmt.Else":      {hashed, ""},
	"IfStmt.Line":      {excluded, "a position: the source bytes are hashed"},
	"Literal.Value":    {hashed, ""},
	"Interp.Parts":     {hashed, ""},
	"InterpPart.Text":  {hashed, ""},
	"InterpPart.Expr":  {hashed, ""},
	"Name.Name":        {hashed, ""},
	"Member.X":         {hashed, ""},
	"Member.Name":      {hashed, ""},
	"Unary.Op":         {hashed, ""},
	"Unary.X":          {hashed, ""},
	"Binary.Op":        {hashed, ""},
	"Binary.L":         {hashed, ""},
	"Binary.R":         {hashed, ""},
}

// irStructs is every struct type declared in internal/ir (checked against
// its source), so that the walk can find the implementations of the IR's
// interfaces (Stmt, Expr), which reflection cannot list.
var irStructs = []reflect.Type{
	reflect.TypeFor[ir.Program](), reflect.TypeFor[ir.Tool](), reflect.TypeFor[ir.Body](),
	reflect.TypeFor[ir.Agent](), reflect.TypeFor[ir.Use](), reflect.TypeFor[ir.Protocol](),
	reflect.TypeFor[ir.Decl](), reflect.TypeFor[ir.Param](), reflect.TypeFor[ir.Type](),
	reflect.TypeFor[ir.Field](), reflect.TypeFor[ir.ReturnStmt](), reflect.TypeFor[ir.PrintStmt](),
	reflect.TypeFor[ir.AssignStmt](), reflect.TypeFor[ir.IfStmt](), reflect.TypeFor[ir.Literal](),
	reflect.TypeFor[ir.Interp](), reflect.TypeFor[ir.InterpPart](), reflect.TypeFor[ir.Name](),
	reflect.TypeFor[ir.Member](), reflect.TypeFor[ir.Unary](), reflect.TypeFor[ir.Binary](),
	reflect.TypeFor[ir.Object](),
}

// notInProgram are the struct types of internal/ir that a Program does not
// hold, with the reason.
var notInProgram = map[string]string{
	"Object": "a builder of ordered JSON objects; the IR holds the bytes it writes (Tool.Parameters, Protocol.Schema)",
	"member": "a key and value of an Object",
}

var irPkg = reflect.TypeFor[ir.Program]().PkgPath()

// reachableIRFields lists "Type.Field" for every field of every struct of
// internal/ir reachable from ir.Program, following pointers, slices, maps
// and the implementations (among irStructs) of interfaces of internal/ir,
// and the set of struct types reached.
func reachableIRFields() ([]string, map[string]bool) {
	var fields []string
	seen := map[string]bool{}
	var visit func(t reflect.Type)
	visit = func(t reflect.Type) {
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array:
			visit(t.Elem())
		case reflect.Map:
			visit(t.Key())
			visit(t.Elem())
		case reflect.Interface:
			if t.PkgPath() != irPkg {
				return
			}
			for _, s := range irStructs {
				if s.Implements(t) || reflect.PointerTo(s).Implements(t) {
					visit(s)
				}
			}
		case reflect.Struct:
			if t.PkgPath() != irPkg || seen[t.Name()] {
				return
			}
			seen[t.Name()] = true
			for f := range t.Fields() {
				fields = append(fields, t.Name()+"."+f.Name)
				visit(f.Type)
			}
		}
	}
	visit(reflect.TypeFor[ir.Program]())
	return fields, seen
}

// Adding a field to the IR without deciding whether the program hash
// covers it fails here: a field the runtime reads but the hash ignores
// would let a run resume against a program that behaves differently.
func TestEveryIRFieldIsHashedOrExcluded(t *testing.T) {
	fields, reached := reachableIRFields()
	for _, f := range fields {
		c, ok := irFieldCoverage[f]
		if !ok {
			t.Errorf("ir.%s is reachable from ir.Program, but irFieldCoverage does not say whether the program hash covers it: "+
				"encode it in canonicalForm (hash.go) and list it as hashed, or list it as excluded with the reason it may be left out", f)
			continue
		}
		if c.how == excluded && strings.TrimSpace(c.why) == "" {
			t.Errorf("ir.%s is excluded from the hash without a reason", f)
		}
	}
	for f := range irFieldCoverage {
		if !slices.Contains(fields, f) {
			t.Errorf("irFieldCoverage lists ir.%s, which is no longer a field reachable from ir.Program", f)
		}
	}

	// Every struct type of internal/ir is in irStructs (so the
	// implementations of its interfaces are found), and is either reached
	// or known not to be part of a Program.
	declared := irStructNames(t)
	listed := make([]string, len(irStructs))
	for i, s := range irStructs {
		listed[i] = s.Name()
	}
	for _, name := range declared {
		switch {
		case reached[name]:
		case notInProgram[name] != "":
		case slices.Contains(listed, name):
			t.Errorf("ir.%s is not reachable from ir.Program: if it is a Stmt or Expr, it needs the marker method; else list it in notInProgram with the reason", name)
		default:
			t.Errorf("ir.%s is declared in internal/ir but not in irStructs: add it there (and, if a Program never holds it, to notInProgram)", name)
		}
	}
	for _, name := range listed {
		if !slices.Contains(declared, name) {
			t.Errorf("irStructs lists ir.%s, which internal/ir no longer declares", name)
		}
	}
}

// irStructNames reads the names of the struct types declared in the
// sources of internal/ir (tests excluded).
func irStructNames(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "ir", "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("cannot list the sources of internal/ir: %v", err)
	}
	var names []string
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			for _, s := range g.Specs {
				ts := s.(*ast.TypeSpec)
				if _, isStruct := ts.Type.(*ast.StructType); isStruct {
					names = append(names, ts.Name.Name)
				}
			}
		}
	}
	return names
}

// sampleProgram is a program in which every field of the IR is set, and
// every kind of type, statement and expression occurs, so that changing
// any field can be seen. It is built afresh for every change.
func sampleProgram() *ir.Program {
	float := 0.5
	stream := true
	params := []ir.Param{
		{Name: "a", Type: &ir.Type{Kind: ir.KindString, Description: "an address"}, Description: "A", Required: true},
		{Name: "b", Type: &ir.Type{Kind: ir.KindArray, Items: &ir.Type{Kind: ir.KindInteger}}, Description: "B", Default: json.RawMessage(`[1]`)},
		{Name: "c", Type: &ir.Type{Kind: ir.KindMap, Values: &ir.Type{Kind: ir.KindBoolean, Nullable: true}}, Description: "C"},
		{Name: "d", Type: &ir.Type{Kind: ir.KindRecord, Fields: []ir.Field{{Name: "f", Type: &ir.Type{Kind: ir.KindNumber}}}}, Description: "D"},
		{Name: "e", Type: &ir.Type{Kind: ir.KindUnion, Alts: []*ir.Type{{Kind: ir.KindString}, {Kind: ir.KindNull}}}, Description: "E"},
	}
	body := []ir.Stmt{
		&ir.AssignStmt{Name: "v", Value: &ir.Literal{Value: int64(1)}, Line: 3},
		&ir.IfStmt{
			Cond: &ir.Binary{Op: ">", L: &ir.Name{Name: "v"}, R: &ir.Unary{Op: "-", X: &ir.Literal{Value: 2.5}}},
			Then: []ir.Stmt{&ir.ReturnStmt{Value: &ir.Interp{Parts: []ir.InterpPart{{Text: "n="}, {Expr: &ir.Member{X: &ir.Name{Name: "a"}, Name: "f"}}}}, Line: 5}},
			Else: []ir.Stmt{&ir.PrintStmt{Value: &ir.Literal{Value: "no"}, Line: 7}},
			Line: 4,
		},
	}
	return &ir.Program{
		Hash:  "sha256:0",
		Files: []string{"/work/app/main.nx", "/work/app/lib.nx"},
		Tools: []*ir.Tool{{
			Name: "t", Description: "does t", Parameters: ir.ParametersSchema(params), Params: params,
			Returns: "string", Risk: "high", RequiresApproval: true, Sandbox: true, Timeout: 60,
			ApprovalTimeout: 30, Idempotent: true, Exclusive: true, Category: "c",
			Body: ir.Body{Kind: ir.BodyNative, Python: "return 1", PythonFile: "/work/app/impl.py", MCP: "stdio:x", Native: body},
			File: "/work/app/lib.nx", Line: 2,
		}},
		Agents: []*ir.Agent{{
			Name: "A", Prompt: "p", Role: "r", Model: "m", ModelFallbacks: []string{"f"}, Tools: []string{"t"},
			ImplicitTools: true, Uses: []ir.Use{{Kind: ir.UseTool, Name: "t"}}, Implements: "P", Returns: "str",
			MaxToolCalls: 3, ToolCallStrategy: "auto", Timeout: 9, Retry: 1, Temperature: &float, MaxTokens: 100,
			OutputFormat: "text", Stream: &stream, HTTPAllow: []string{"localhost"},
			Properties: map[string]any{"http_allow": []any{"localhost"}}, Requires: []string{"q"}, Ensures: []string{"e"},
			File: "/work/app/main.nx", Line: 9,
		}},
		Protocols:    []*ir.Protocol{{Name: "P", Schema: json.RawMessage(`{"type":"object"}`), File: "/work/app/main.nx", Line: 12}},
		Decls:        []ir.Decl{{Kind: "tool", Name: "t", File: "/work/app/lib.nx", Line: 2}, {Kind: "agent", Name: "A", File: "/work/app/main.nx", Line: 9}},
		SecretFiles:  []string{"/work/app/secrets.nxs"},
		ActiveConfig: "default",
	}
}

// structsOfType appends to out every addressable struct of type typ held
// in v, in walk order.
func structsOfType(v reflect.Value, typ reflect.Type, out *[]reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			structsOfType(v.Elem(), typ, out)
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			structsOfType(v.Index(i), typ, out)
		}
	case reflect.Struct:
		if v.Type() == typ {
			*out = append(*out, v)
		}
		if v.Type().PkgPath() == irPkg {
			for i := range v.NumField() {
				structsOfType(v.Field(i), typ, out)
			}
		}
	}
}

// change gives f a different value of its type.
func change(t *testing.T, name string, f reflect.Value) {
	t.Helper()
	if !f.CanSet() {
		t.Fatalf("ir.%s cannot be set by the test (unexported?): check its coverage by hand", name)
	}
	if f.Type() == reflect.TypeFor[json.RawMessage]() {
		f.SetBytes([]byte(`{"changed":true}`))
		return
	}
	switch f.Kind() {
	case reflect.String:
		f.SetString(f.String() + "~")
	case reflect.Bool:
		f.SetBool(!f.Bool())
	case reflect.Int, reflect.Int64, reflect.Int32:
		f.SetInt(f.Int() + 1)
	case reflect.Float64:
		f.SetFloat(f.Float() + 1)
	case reflect.Pointer:
		if f.IsNil() {
			f.Set(reflect.New(f.Type().Elem()))
		} else {
			f.SetZero()
		}
	case reflect.Slice:
		if f.Len() > 0 {
			f.Set(f.Slice(0, f.Len()-1))
		} else {
			f.Set(reflect.Append(f, reflect.Zero(f.Type().Elem())))
		}
	case reflect.Map:
		if f.IsNil() {
			f.Set(reflect.MakeMap(f.Type()))
		}
		f.SetMapIndex(reflect.ValueOf("~changed"), reflect.Zero(f.Type().Elem()))
	case reflect.Interface:
		switch {
		case !f.IsNil():
			f.SetZero()
		case f.NumMethod() == 0:
			f.Set(reflect.ValueOf("~changed"))
		default:
			f.Set(reflect.ValueOf(&ir.Name{Name: "~changed"}))
		}
	case reflect.Struct:
		if f.IsZero() {
			t.Fatalf("ir.%s is zero in sampleProgram: set it", name)
		}
		f.SetZero()
	default:
		t.Fatalf("ir.%s: the test cannot change a %s; teach change how", name, f.Kind())
	}
}

// encodings are what the hash covers of a program: its canonical IR, and
// the schemas its tools' parameter lists generate.
func encodings(p *ir.Program) (canonical, schemas []byte) {
	var b bytes.Buffer
	for _, t := range p.Tools {
		b.Write(ir.ParametersSchema(t.Params))
		b.WriteByte('\n')
	}
	return CanonicalIR(p), b.Bytes()
}

// What irFieldCoverage says is what the encoding does: changing a field
// listed as hashed changes the canonical IR, changing one listed as in
// the schema changes the generated parameters schema, and changing one
// listed as excluded changes neither the canonical IR nor (so) the hash.
// A field counts as covered when changing it in any one place of
// sampleProgram shows in the encoding.
func TestIRFieldCoverageIsTrue(t *testing.T) {
	baseIR, baseSchemas := encodings(sampleProgram())
	byType := map[string]reflect.Type{}
	for _, s := range irStructs {
		byType[s.Name()] = s
	}
	fields, _ := reachableIRFields()
	for _, name := range fields {
		c, ok := irFieldCoverage[name]
		if !ok {
			continue // reported by TestEveryIRFieldIsHashedOrExcluded
		}
		typeName, fieldName, _ := strings.Cut(name, ".")
		var n []reflect.Value
		structsOfType(reflect.ValueOf(sampleProgram()), byType[typeName], &n)
		if len(n) == 0 {
			t.Errorf("sampleProgram holds no ir.%s: add one, so that ir.%s can be checked", typeName, name)
			continue
		}
		inIR, inSchemas := false, false
		for i := range n {
			p := sampleProgram()
			var found []reflect.Value
			structsOfType(reflect.ValueOf(p), byType[typeName], &found)
			change(t, name, found[i].FieldByName(fieldName))
			gotIR, gotSchemas := encodings(p)
			inIR = inIR || !bytes.Equal(gotIR, baseIR)
			inSchemas = inSchemas || !bytes.Equal(gotSchemas, baseSchemas)
		}
		switch {
		case c.how == hashed && !inIR:
			t.Errorf("ir.%s is listed as hashed, but changing it does not change the canonical IR: encode it in canonicalForm (hash.go), or list it as excluded with the reason", name)
		case c.how == inSchema && !inSchemas:
			t.Errorf("ir.%s is listed as part of the parameters schema, but changing it does not change ir.ParametersSchema", name)
		case c.how != hashed && inIR:
			t.Errorf("ir.%s is listed as %s, but changing it changes the canonical IR: list it as hashed", name, c.how)
		case c.how == excluded && inSchemas:
			t.Errorf("ir.%s is listed as excluded, but changing it changes the parameters schema: list it as inSchema", name)
		}
	}
}
