package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/fatih/color"

	"github.com/nexa-run/nexa/internal/lang"
)

// diagStyle holds the colours of diagnostic output; every colour is off
// when NO_COLOR is set or the stream is not a terminal.
type diagStyle struct {
	err, warn, hint, gutter, bold *color.Color
}

// colorEnabled decides whether w gets colour: never with NO_COLOR or
// TERM=dumb, only when w is a terminal.
func colorEnabled(e *env, w io.Writer) bool {
	if e.getenv("NO_COLOR") != "" || e.getenv("TERM") == "dumb" {
		return false
	}
	return isTerminal(w)
}

func newDiagStyle(on bool) *diagStyle {
	s := &diagStyle{
		err:    color.New(color.FgRed, color.Bold),
		warn:   color.New(color.FgYellow, color.Bold),
		hint:   color.New(color.FgCyan),
		gutter: color.New(color.FgBlue),
		bold:   color.New(color.Bold),
	}
	for _, c := range []*color.Color{s.err, s.warn, s.hint, s.gutter, s.bold} {
		if on {
			c.EnableColor()
		} else {
			c.DisableColor()
		}
	}
	return s
}

// renderDiagnostics writes diagnostics for people:
//
//	file:line:col: error: message
//	   12 | source line
//	      |     ^
//	      = hint: …
func renderDiagnostics(w io.Writer, ds lang.Diagnostics, st *diagStyle) {
	width := 1
	for _, d := range ds {
		width = max(width, len(strconv.Itoa(d.Line)))
		for _, r := range d.Related {
			width = max(width, len(strconv.Itoa(r.Line)))
		}
	}
	for _, d := range ds {
		label := st.err.Sprint("error")
		if !d.IsError() {
			label = st.warn.Sprint("warning")
		}
		caret := st.err
		if !d.IsError() {
			caret = st.warn
		}
		if d.Line > 0 {
			fmt.Fprintf(w, "%s:%d:%d: %s: %s\n", d.File, d.Line, d.Column, label, st.bold.Sprint(d.Message))
			diagSnippet(w, width, d.Line, d.Column, d.SourceLine, "", st, caret)
		} else {
			fmt.Fprintf(w, "%s: %s: %s\n", d.File, label, st.bold.Sprint(d.Message))
		}
		for _, r := range d.Related {
			fmt.Fprintf(w, "%s %s:%d:%d: %s\n", st.gutter.Sprint(strings.Repeat(" ", width+2)+"-->"), r.File, r.Line, r.Column, r.Message)
			diagSnippet(w, width, r.Line, r.Column, r.SourceLine, r.Message, st, st.hint)
		}
		if d.Hint != "" {
			fmt.Fprintf(w, "%s %s\n", st.gutter.Sprint(strings.Repeat(" ", width+2)+"="), st.hint.Sprint("hint: "+d.Hint))
		}
	}
}

// renderDiagnosticLines writes each diagnostic on one line, the first line
// of renderDiagnostics with the hint appended:
//
//	file:line:col: warning: message (hint: …)
//
// nexa agent prints its program's warnings so, ahead of the run's progress.
func renderDiagnosticLines(w io.Writer, ds lang.Diagnostics, st *diagStyle) {
	for _, d := range ds {
		label := st.err.Sprint("error")
		if !d.IsError() {
			label = st.warn.Sprint("warning")
		}
		where := d.File
		if d.Line > 0 {
			where = fmt.Sprintf("%s:%d:%d", d.File, d.Line, d.Column)
		}
		hint := ""
		if d.Hint != "" {
			hint = " " + st.hint.Sprint("(hint: "+d.Hint+")")
		}
		fmt.Fprintf(w, "%s: %s: %s%s\n", where, label, d.Message, hint)
	}
}

// diagSnippet prints the source line and a caret under column col
// (counted in characters; tabs are kept so the caret lines up).
func diagSnippet(w io.Writer, width, line, col int, text, label string, st *diagStyle, caretColor *color.Color) {
	if text == "" && line <= 0 {
		return
	}
	fmt.Fprintf(w, "%s %s\n", st.gutter.Sprintf("%*d |", width+1, line), text)
	var pad strings.Builder
	i := 1
	for _, r := range text {
		if i >= col {
			break
		}
		if r == '\t' {
			pad.WriteByte('\t')
		} else {
			pad.WriteByte(' ')
		}
		i++
	}
	// the quoted line is cut at a few hundred characters; do not pad
	// further than that for an error far into a very long line
	for ; i < col && i <= len(text)+1; i++ {
		pad.WriteByte(' ')
	}
	caret := "^"
	if label != "" {
		caret += " " + label
	}
	fmt.Fprintf(w, "%s %s%s\n", st.gutter.Sprint(strings.Repeat(" ", width+1)+" |"), pad.String(), caretColor.Sprint(caret))
}

// diagJSON is docs/reference/json.md#diagnostic.
type diagJSON struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Column  int    `json:"column"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Hint    string `json:"hint"`
}

// validateJSON is the output of `nexa validate --json` (and of `nexa
// inspect --json` when the program does not compile).
type validateJSON struct {
	Valid    bool       `json:"valid"`
	Errors   []diagJSON `json:"errors"`
	Warnings []diagJSON `json:"warnings"`
}

// diagsJSON is ds as a list of `d` objects, never nil (an empty list
// encodes as []).
func diagsJSON(ds lang.Diagnostics) []diagJSON {
	out := make([]diagJSON, 0, len(ds))
	for _, d := range ds {
		out = append(out, diagJSON{File: d.File, Line: d.Line, Column: d.Column, Code: d.Code, Message: d.Message, Hint: d.Hint})
	}
	return out
}

func toValidateJSON(ds lang.Diagnostics) validateJSON {
	out := validateJSON{Valid: !ds.HasErrors(), Errors: []diagJSON{}, Warnings: []diagJSON{}}
	for _, d := range ds {
		j := diagJSON{File: d.File, Line: d.Line, Column: d.Column, Code: d.Code, Message: d.Message, Hint: d.Hint}
		if d.IsError() {
			out.Errors = append(out.Errors, j)
		} else {
			out.Warnings = append(out.Warnings, j)
		}
	}
	return out
}

// compileExitCode is the exit code for a failed compilation: 1 when the
// main file exists but cannot be read (an operational error), else 2.
func compileExitCode(ds lang.Diagnostics) int {
	for _, d := range ds {
		if d.IsError() && d.Code == lang.CodeIO && d.Line == 0 {
			return ExitFailed
		}
	}
	return ExitUsage
}

// diagWriteJSON prints v as indented JSON without HTML escapes (schemas and
// prompts keep their <, > and & readable).
func diagWriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

func diagPlural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}
