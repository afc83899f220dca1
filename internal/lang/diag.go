package lang

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// Severity says whether a diagnostic stops compilation.
type Severity string

// The severities. Only errors make a program invalid.
const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
)

// Diagnostic codes are stable short strings: scripts and tests match on them,
// so existing codes never change meaning.
const (
	CodeSyntax          = "syntax"              // the text does not follow the grammar
	CodeLex             = "lex"                 // a character or literal that cannot start a token
	CodeTooDeep         = "too_deep"            // bracket nesting beyond MaxDepth
	CodeTooMany         = "too_many_errors"     // later errors of the file were dropped
	CodeDuplicate       = "duplicate"           // a name declared twice for one kind
	CodeUnknownTool     = "unknown_tool"        // a uses entry that names no tool
	CodeUnknownType     = "unknown_type"        // a type name that is neither built in nor a protocol
	CodeUnknownProtocol = "unknown_protocol"    // implements names no protocol
	CodeUntypedParam    = "untyped_param"       // a tool parameter without a type
	CodeBadSetting      = "bad_setting"         // a setting or property with a value of the wrong type
	CodeUnknownSetting  = "unknown_setting"     // a @tool setting or tool-block property nexa does not know
	CodeMissingDesc     = "missing_description" // no @tool, or an empty tool description
	CodeNoEffect        = "no_effect"           // accepted, but nexa agent ignores it (warning)
	CodeImplicitTools   = "implicit_tools"      // an agent without uses sees every tool (warning)
	CodeSkill           = "skill_document"      // a "file.md" uses entry (warning)
	CodeIncludeCycle    = "include_cycle"       // an include chain that returns to a file
	CodeIncludeNotFound = "include_not_found"   // an include that resolves nowhere
	CodeFileNotFound    = "file_not_found"      // the main file does not exist
	CodeIO              = "io_error"            // a file exists but cannot be read
	CodeUnsupported     = "unsupported"         // a construct outside the native-body subset
	CodeUnknownName     = "unknown_name"        // a name in a native body that is not defined
	CodeBadBody         = "bad_body"            // a tool body that mixes python! with other statements, etc.
	CodeBadDecorator    = "bad_decorator"       // an unknown or malformed decorator
	CodeBadDefault      = "bad_default"         // a parameter default of the wrong type
)

// Related is a second position a diagnostic refers to, such as the first
// declaration of a duplicate name.
type Related struct {
	File       string
	Line       int
	Column     int
	Message    string
	SourceLine string
}

// Diagnostic is one error or warning with its position. The JSON form is the
// `d` object of `nexa validate --json`.
type Diagnostic struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Column  int    `json:"column"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Hint    string `json:"hint"`
	// Severity is carried by the list a diagnostic is printed in (errors
	// or warnings) in JSON, so it is not a field there.
	Severity Severity `json:"-"`
	// SourceLine is the text of line Line of File (without the newline),
	// filled in by the compiler so that renderers need no file access.
	SourceLine string `json:"-"`
	// Related are other positions worth showing (both positions of a
	// duplicate).
	Related []Related `json:"-"`
}

// String is the one-line form `file:line:col: severity: message`.
func (d Diagnostic) String() string {
	return fmt.Sprintf("%s:%d:%d: %s: %s", d.File, d.Line, d.Column, d.Severity, d.Message)
}

// Error lets a diagnostic be used as an error value.
func (d Diagnostic) Error() string { return d.String() }

// IsError reports whether the diagnostic makes the program invalid.
func (d Diagnostic) IsError() bool { return d.Severity != SeverityWarning }

// Diagnostics is a list of diagnostics in the order they should be shown.
type Diagnostics []Diagnostic

// HasErrors reports whether any diagnostic is an error.
func (ds Diagnostics) HasErrors() bool {
	for _, d := range ds {
		if d.IsError() {
			return true
		}
	}
	return false
}

// Errors returns the error diagnostics.
func (ds Diagnostics) Errors() Diagnostics {
	var out Diagnostics
	for _, d := range ds {
		if d.IsError() {
			out = append(out, d)
		}
	}
	return out
}

// Warnings returns the warning diagnostics.
func (ds Diagnostics) Warnings() Diagnostics {
	var out Diagnostics
	for _, d := range ds {
		if !d.IsError() {
			out = append(out, d)
		}
	}
	return out
}

// Err is nil when there are no errors, else an error whose message lists
// every error on its own line (for callers that only need an error value).
func (ds Diagnostics) Err() error {
	errs := ds.Errors()
	if len(errs) == 0 {
		return nil
	}
	lines := make([]string, len(errs))
	for i, d := range errs {
		lines[i] = d.String()
	}
	return &CompileError{Diagnostics: errs, msg: strings.Join(lines, "\n")}
}

// CompileError is the error value of a list of error diagnostics.
type CompileError struct {
	Diagnostics Diagnostics
	msg         string
}

// Error lists the errors, one per line.
func (e *CompileError) Error() string { return e.msg }

// Sort orders diagnostics by file (in the order files were first seen in
// order), then line and column, keeping the original order of equal
// positions. files gives the rank of each file; unknown files sort last by
// name.
func (ds Diagnostics) Sort(files []string) {
	rank := make(map[string]int, len(files))
	for i, f := range files {
		if _, ok := rank[f]; !ok {
			rank[f] = i
		}
	}
	r := func(f string) int {
		if v, ok := rank[f]; ok {
			return v
		}
		return len(files)
	}
	sort.SliceStable(ds, func(i, j int) bool {
		a, b := ds[i], ds[j]
		if ra, rb := r(a.File), r(b.File); ra != rb {
			return ra < rb
		}
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Column < b.Column
	})
}

// SourceLines indexes a source so that diagnostics can quote their line.
type SourceLines struct {
	src    []byte
	starts []int
}

// NewSourceLines indexes src by line.
func NewSourceLines(src []byte) *SourceLines {
	starts := []int{0}
	for i, c := range src {
		if c == '\n' {
			starts = append(starts, i+1)
		}
	}
	return &SourceLines{src: src, starts: starts}
}

// Line returns line n (1-based) without its line ending, with invalid UTF-8
// and control characters other than tab replaced so that it prints safely.
func (s *SourceLines) Line(n int) string {
	if s == nil || n < 1 || n > len(s.starts) {
		return ""
	}
	start := s.starts[n-1]
	end := len(s.src)
	if n < len(s.starts) {
		end = s.starts[n] - 1
	}
	line := s.src[start:end]
	const maxShown = 400
	var b strings.Builder
	for len(line) > 0 && b.Len() < maxShown {
		r, size := utf8.DecodeRune(line)
		line = line[size:]
		switch {
		case r == utf8.RuneError && size <= 1:
			b.WriteRune('\uFFFD')
		case r == '\t':
			b.WriteByte('\t')
		case r == '\r' && len(line) == 0:
		case r < 0x20 || r == 0x7f:
			b.WriteRune('\uFFFD')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
