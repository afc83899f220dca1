// Package compile turns .nx sources into a Program: the immutable IR that
// `nexa agent` runs (tools with their JSON Schemas and settings, agents with
// resolved properties and exposed tools, protocols) and its hash.
//
// Compile reports every problem of every file as a Diagnostic; a Program is
// returned only when there is no error, so the runtime never sees a
// half-compiled program.
package compile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/nexa-run/nexa/internal/ir"
	"github.com/nexa-run/nexa/internal/lang"
)

// Diagnostic is one error or warning (see lang.Diagnostic).
type Diagnostic = lang.Diagnostic

// Diagnostics is a list of diagnostics with helpers (HasErrors, Errors,
// Warnings, Err).
type Diagnostics = lang.Diagnostics

// Options are the inputs of a compilation besides the main file. They are
// passed in rather than read from the process so that compilation is a pure
// function of its arguments.
type Options struct {
	// NexaPath is the value of NEXA_PATH: directories, separated by
	// colons, searched for includes not found beside the including file.
	NexaPath string
	// ReadFile reads a file; nil means os.ReadFile. Tests use it to compile
	// from memory.
	ReadFile func(name string) ([]byte, error)
}

// MaxSourceBytes bounds every file the compiler reads (the main file,
// includes, legacy python: files). Sources are hand-written; a larger file
// is a mistake (or /dev/zero), refused at once instead of filling memory.
const MaxSourceBytes = 4 << 20

func (o Options) read(name string) ([]byte, error) {
	if o.ReadFile != nil {
		return o.ReadFile(name)
	}
	return readSource(name)
}

// errNotRegular is the cause of a refused device, FIFO or socket.
var errNotRegular = errors.New("not a regular file (a device, FIFO or socket cannot be a source)")

// readSource reads a regular file of at most MaxSourceBytes. It looks before
// it opens (opening a FIFO would wait for a writer), opens without blocking
// in case the file was swapped meanwhile, checks again what it opened, and
// reads no more than the cap allows.
func readSource(name string) ([]byte, error) {
	fi, err := os.Stat(name)
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return nil, &fs.PathError{Op: "read", Path: name, Err: syscall.EISDIR}
	}
	if !fi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "read", Path: name, Err: errNotRegular}
	}
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "read", Path: name, Err: errNotRegular}
	}
	tooLarge := &fs.PathError{Op: "read", Path: name, Err: fmt.Errorf("larger than %d MiB, the limit for a source file", MaxSourceBytes>>20)}
	if fi.Size() > MaxSourceBytes {
		return nil, tooLarge
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxSourceBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxSourceBytes {
		return nil, tooLarge
	}
	return data, nil
}

func (o Options) exists(name string) bool {
	if o.ReadFile != nil {
		_, err := o.ReadFile(name)
		return err == nil
	}
	st, err := os.Stat(name)
	return err == nil && st.Mode().IsRegular()
}

// MapFiles is an Options.ReadFile over in-memory files keyed by path
// (cleaned with filepath.Clean), for tests and tools that compile sources
// that are not on disk.
func MapFiles(files map[string]string) func(string) ([]byte, error) {
	clean := make(map[string]string, len(files))
	for k, v := range files {
		clean[filepath.Clean(k)] = v
	}
	return func(name string) ([]byte, error) {
		if v, ok := clean[filepath.Clean(name)]; ok {
			return []byte(v), nil
		}
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
}

// Compile compiles the program whose main file is path. It returns the
// Program (nil when there are errors) and every diagnostic, errors and
// warnings, sorted by file and position.
func Compile(path string, opts Options) (*ir.Program, Diagnostics) {
	c := newCompiler(opts)
	c.load(path)
	return c.finish()
}

// source is one loaded file.
type source struct {
	path  string // as shown to users: as given, or joined from the includer
	key   string // identity for "compiled once" and cycles
	data  []byte
	lines *lang.SourceLines
	file  *lang.File
}

type toolDecl struct {
	decl lang.Decl // *lang.ToolFn or *lang.LegacyTool
	src  *source
}

type agentDecl struct {
	decl *lang.Agent
	src  *source
}

type protoDecl struct {
	decl      *lang.Protocol
	src       *source
	typ       *ir.Type
	resolving bool
}

type aliasDecl struct {
	decl *lang.TypeDecl
}

type compiler struct {
	opts    Options
	sources []*source
	byKey   map[string]*source
	stack   []*source // include chain being loaded
	diags   Diagnostics

	// declarations by kind, in program order
	tools       []*toolDecl
	agents      []*agentDecl
	protos      []*protoDecl
	protocols   map[string]*protoDecl
	aliases     map[string]*aliasDecl
	seen        map[string]map[string]lang.Decl // kind → name → first declaration
	declSrc     map[lang.Decl]*source
	incTarget   map[*lang.Include]*source // where each include resolved
	decls       []ir.Decl
	secrets     []string
	secretKeys  map[string]bool // identities of the secrets files listed
	config      string
	suggestions int // closest() calls so far
	// names of tools whose declarations had syntax errors
	brokenTools []string
	extra       [][]byte // bytes of legacy python files, hashed with the sources
	// aliases being resolved (a type alias that refers to itself is an
	// error), innermost last
	aliasStack []*aliasDecl
	// built-in tools exposed by some agent, with the first uses entry
	// that exposed each
	builtins map[string]builtinUse
}

func newCompiler(opts Options) *compiler {
	return &compiler{
		opts:       opts,
		byKey:      map[string]*source{},
		protocols:  map[string]*protoDecl{},
		aliases:    map[string]*aliasDecl{},
		seen:       map[string]map[string]lang.Decl{},
		declSrc:    map[lang.Decl]*source{},
		incTarget:  map[*lang.Include]*source{},
		secretKeys: map[string]bool{},
	}
}

func (c *compiler) add(d Diagnostic) {
	if d.Severity == "" {
		d.Severity = lang.SeverityError
	}
	c.diags = append(c.diags, d)
}

func (c *compiler) errorAt(pos lang.Position, code, hint, format string, args ...any) {
	c.add(Diagnostic{File: pos.Filename, Line: pos.Line, Column: pos.Column, Code: code,
		Message: fmt.Sprintf(format, args...), Hint: hint, Severity: lang.SeverityError})
}

func (c *compiler) warnAt(pos lang.Position, code, hint, format string, args ...any) {
	c.add(Diagnostic{File: pos.Filename, Line: pos.Line, Column: pos.Column, Code: code,
		Message: fmt.Sprintf(format, args...), Hint: hint, Severity: lang.SeverityWarning})
}

// fileKey identifies a file independently of how it was named.
func (c *compiler) fileKey(path string) string {
	if c.opts.ReadFile == nil {
		if abs, err := filepath.Abs(path); err == nil {
			if real, err := filepath.EvalSymlinks(abs); err == nil {
				return real
			}
			return abs
		}
	}
	return filepath.Clean(path)
}

// load reads and parses the main file, then its includes depth-first.
func (c *compiler) load(path string) {
	data, err := c.opts.read(path)
	if err != nil {
		code := lang.CodeIO
		msg := fmt.Sprintf("cannot read %s: %v", path, unwrapPathErr(err))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			code = lang.CodeFileNotFound
			msg = fmt.Sprintf("file %s does not exist", path)
		case isDirErr(err):
			code = lang.CodeFileNotFound
			msg = fmt.Sprintf("%s is a directory, not a .nx file", path)
		}
		c.add(Diagnostic{File: path, Line: 0, Column: 0, Code: code, Message: msg, Severity: lang.SeverityError})
		return
	}
	// secrets.nxs beside the main file applies to the program
	beside := filepath.Join(filepath.Dir(path), "secrets.nxs")
	if c.opts.exists(beside) {
		c.secrets = append(c.secrets, beside)
		c.secretKeys[c.fileKey(beside)] = true
	}
	c.loadSource(path, data)
}

func unwrapPathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func (c *compiler) loadSource(path string, data []byte) *source {
	key := c.fileKey(path)
	src := &source{path: path, key: key, data: data, lines: lang.NewSourceLines(data)}
	c.byKey[key] = src
	c.sources = append(c.sources, src)
	f, diags := lang.Parse(path, data)
	src.file = f
	c.diags = append(c.diags, diags...)
	c.stack = append(c.stack, src)
	defer func() { c.stack = c.stack[:len(c.stack)-1] }()
	for _, d := range f.Decls {
		c.declSrc[d] = src
		if inc, ok := d.(*lang.Include); ok {
			c.include(src, inc)
		}
	}
	return src
}

// include resolves one include statement: beside the including file, then
// along NEXA_PATH.
func (c *compiler) include(from *source, inc *lang.Include) {
	rel := inc.Path.Value()
	if strings.TrimSpace(rel) == "" {
		c.errorAt(inc.Path.Pos, lang.CodeIncludeNotFound, "", "include of an empty path")
		return
	}
	var candidates []string
	if filepath.IsAbs(rel) {
		candidates = []string{rel}
	} else {
		candidates = append(candidates, filepath.Join(filepath.Dir(from.path), rel))
		for _, dir := range filepath.SplitList(c.opts.NexaPath) {
			if dir != "" {
				candidates = append(candidates, filepath.Join(dir, rel))
			}
		}
	}
	var found string
	var data []byte
	for _, cand := range candidates {
		if loaded, ok := c.byKey[c.fileKey(c.displayPath(cand))]; ok {
			// included before (or part of the chain being loaded): no
			// need to read it again
			found, data = loaded.path, loaded.data
			break
		}
		if strings.HasSuffix(cand, ".nxs") {
			if c.opts.exists(cand) {
				found = cand
				break
			}
			continue
		}
		b, err := c.opts.read(cand)
		if err == nil {
			found, data = cand, b
			break
		}
		if !errors.Is(err, fs.ErrNotExist) && !isDirErr(err) {
			c.errorAt(inc.Path.Pos, lang.CodeIO, "", "cannot read included file %s: %v", cand, unwrapPathErr(err))
			return
		}
	}
	if found == "" && strings.HasSuffix(rel, ".nxs") {
		// a secrets file is often kept out of version control; its
		// absence is worth a warning, not a failed build
		c.warnAt(inc.Path.Pos, lang.CodeIncludeNotFound, "its keys will be missing; nexa_secrets.get returns None for them",
			"included secrets file %q not found", rel)
		return
	}
	if found == "" {
		where := "beside " + from.path
		if c.opts.NexaPath != "" {
			where += " or in NEXA_PATH (" + c.opts.NexaPath + ")"
		} else {
			where += "; set NEXA_PATH to search more directories"
		}
		c.errorAt(inc.Path.Pos, lang.CodeIncludeNotFound, "the path is looked up "+where,
			"included file %q not found", rel)
		return
	}
	if strings.HasSuffix(found, ".nxs") {
		key := c.fileKey(found)
		if c.secretKeys[key] {
			return
		}
		c.secretKeys[key] = true
		c.secrets = append(c.secrets, found)
		return
	}
	found = c.displayPath(found)
	key := c.fileKey(found)
	for i, s := range c.stack {
		if s.key == key {
			chain := make([]string, 0, len(c.stack)-i+1)
			for _, t := range c.stack[i:] {
				chain = append(chain, t.path)
			}
			chain = append(chain, found)
			c.errorAt(inc.Path.Pos, lang.CodeIncludeCycle, "remove one of the includes of this chain",
				"include cycle: %s", strings.Join(chain, " → "))
			return
		}
	}
	if _, done := c.byKey[key]; done {
		return // included before: compiled once
	}
	c.incTarget[inc] = c.loadSource(found, data)
}

// displayPath shows a file found through an absolute NEXA_PATH entry
// relative to the working directory when it lies below it, so that
// Files and diagnostics do not carry machine paths needlessly.
func (c *compiler) displayPath(p string) string {
	if c.opts.ReadFile != nil || !filepath.IsAbs(p) {
		return p
	}
	wd, err := os.Getwd()
	if err != nil {
		return p
	}
	rel, err := filepath.Rel(wd, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return p
	}
	return rel
}

func isDirErr(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) && strings.Contains(pe.Err.Error(), "is a directory")
}

// finish runs the checks over all loaded declarations and builds the IR.
func (c *compiler) finish() (*ir.Program, Diagnostics) {
	c.collect()
	prog := &ir.Program{Tools: []*ir.Tool{}, Agents: []*ir.Agent{}, Protocols: []*ir.Protocol{}, Decls: c.decls}
	for _, s := range c.sources {
		prog.Files = append(prog.Files, s.path)
	}
	for _, p := range c.protos {
		sch := c.protocolType(p, p.decl.Pos).Schema()
		prog.Protocols = append(prog.Protocols, &ir.Protocol{
			Name: p.decl.DeclName(), Schema: ir.CanonicalJSON(sch), File: p.src.path, Line: p.decl.Pos.Line,
		})
	}
	for _, t := range c.compileTools() {
		if t != nil {
			prog.Tools = append(prog.Tools, t)
		}
	}
	for _, a := range c.agents {
		if t := c.compileAgent(a, prog); t != nil {
			prog.Agents = append(prog.Agents, t)
		}
	}
	c.addBuiltins(prog)
	prog.SecretFiles = c.secrets
	prog.ActiveConfig = c.config
	c.attachSources()
	files := make([]string, 0, len(c.sources))
	for _, s := range c.sources {
		files = append(files, s.path)
	}
	c.diags.Sort(files)
	if c.diags.HasErrors() {
		return nil, c.diags
	}
	prog.Hash = c.hash(prog)
	return prog, c.diags
}

// attachSources fills in the source line of every diagnostic.
func (c *compiler) attachSources() {
	byPath := map[string]*source{}
	for _, s := range c.sources {
		byPath[s.path] = s
	}
	for i := range c.diags {
		d := &c.diags[i]
		if s, ok := byPath[d.File]; ok {
			d.SourceLine = s.lines.Line(d.Line)
			for j := range d.Related {
				if rs, ok := byPath[d.Related[j].File]; ok {
					d.Related[j].SourceLine = rs.lines.Line(d.Related[j].Line)
				}
			}
		}
	}
}

// collect registers declarations in program order — an included file's
// declarations at the place of its include — checking that names are unique
// per kind.
func (c *compiler) collect() {
	if len(c.sources) > 0 {
		c.collectFile(c.sources[0])
	}
}

func (c *compiler) collectFile(s *source) {
	for _, d := range s.file.Decls {
		if inc, ok := d.(*lang.Include); ok {
			if target := c.incTarget[inc]; target != nil {
				c.collectFile(target)
			}
		}
		kind := d.DeclKind()
		name := d.DeclName()
		if kind != "include" {
			c.decls = append(c.decls, ir.Decl{Kind: kind, Name: name, File: s.path, Line: d.DeclPos().Line})
		}
		if uc, ok := d.(*lang.UseConfig); ok && c.config == "" {
			c.config = uc.DeclName()
		}
		if !c.register(d, kind, name) {
			continue
		}
		switch v := d.(type) {
		case *lang.ToolFn, *lang.LegacyTool:
			c.tools = append(c.tools, &toolDecl{decl: v, src: s})
		case *lang.Agent:
			c.agents = append(c.agents, &agentDecl{decl: v, src: s})
		case *lang.Protocol:
			p := &protoDecl{decl: v, src: s}
			c.protos = append(c.protos, p)
			c.protocols[name] = p
		case *lang.TypeDecl:
			c.aliases[name] = &aliasDecl{decl: v}
		case *lang.BrokenDecl:
			// keep the name known so that references to it do not
			// add errors to the syntax error already reported
			switch v.Kind {
			case "protocol":
				c.protocols[name] = &protoDecl{decl: &lang.Protocol{Pos: v.Pos, Name: &lang.Name{Pos: v.NameAt, Name: name}}, src: s, typ: &ir.Type{Kind: ir.KindMap}}
			case "tool":
				c.brokenTools = append(c.brokenTools, name)
			}
		}
	}
}

// anonymousKinds are the kinds whose names need not be unique: anonymous forms
// (spawn(…), defer …, match …) and includes are not named.
var anonymousKinds = map[string]bool{
	"include": true, "use_config": true, "spawn": true, "parallel": true, "race": true,
	"channel": true, "after": true, "schedule": true, "defer": true, "match": true, "decorated": true,
}

// register records a declaration's name; a second declaration of the same
// kind and name is an error showing both positions.
func (c *compiler) register(d lang.Decl, kind, name string) bool {
	if anonymousKinds[kind] || name == "" {
		return true
	}
	byName := c.seen[kind]
	if byName == nil {
		byName = map[string]lang.Decl{}
		c.seen[kind] = byName
	}
	first, dup := byName[name]
	if !dup {
		byName[name] = d
		return true
	}
	fp := first.NamePos()
	np := d.NamePos()
	c.add(Diagnostic{
		File: np.Filename, Line: np.Line, Column: np.Column, Code: lang.CodeDuplicate,
		Message:  fmt.Sprintf("duplicate %s `%s`: first declared at %s:%d:%d", kindLabel(kind), name, fp.Filename, fp.Line, fp.Column),
		Hint:     "rename or remove one of the two declarations",
		Severity: lang.SeverityError,
		Related:  []lang.Related{{File: fp.Filename, Line: fp.Line, Column: fp.Column, Message: "first declared here"}},
	})
	return false
}

func kindLabel(kind string) string {
	if kind == "use_config" {
		return "use config"
	}
	return kind
}

// sortedKeys returns a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// maxSuggestions bounds the "did you mean" searches of one compilation:
// each compares a name with every candidate, so a file with thousands of
// unknown names must not make compilation quadratic.
const maxSuggestions = 200

// closest suggests the candidate nearest to name, within the budget.
func (c *compiler) closest(name string, candidates []string) string {
	if c.suggestions >= maxSuggestions {
		return ""
	}
	c.suggestions++
	return lang.Closest(name, candidates)
}
