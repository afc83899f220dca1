package cli

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/nexa-run/nexa/internal/lang"
)

func TestDiagColourRules(t *testing.T) {
	e := &env{getenv: func(string) string { return "" }}
	if colorEnabled(e, &bytes.Buffer{}) {
		t.Error("a buffer is not a terminal: no colour")
	}
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if colorEnabled(e, f) {
		t.Error("a regular file is not a terminal: no colour")
	}
	noColor := &env{getenv: func(k string) string {
		if k == "NO_COLOR" {
			return "1"
		}
		return ""
	}}
	if colorEnabled(noColor, os.Stderr) {
		t.Error("NO_COLOR must turn colour off")
	}
}

func TestRenderDiagnostics(t *testing.T) {
	ds := lang.Diagnostics{
		{File: "a.nx", Line: 12, Column: 3, Code: "unknown_tool", Message: "agent A uses unknown tool `x`",
			Hint: "did you mean `y`?", Severity: lang.SeverityError, SourceLine: "\tuses x {"},
		{File: "a.nx", Line: 2, Column: 1, Code: "no_effect", Message: "accepted", Severity: lang.SeverityWarning,
			SourceLine: "cache: true",
			Related:    []lang.Related{{File: "b.nx", Line: 7, Column: 5, Message: "first declared here", SourceLine: "    agent A {"}}},
	}
	var plain bytes.Buffer
	renderDiagnostics(&plain, ds, newDiagStyle(false))
	want := "a.nx:12:3: error: agent A uses unknown tool `x`\n" +
		" 12 | \tuses x {\n" +
		"    | \t ^\n" +
		"    = hint: did you mean `y`?\n" +
		"a.nx:2:1: warning: accepted\n" +
		"  2 | cache: true\n" +
		"    | ^\n" +
		"    --> b.nx:7:5: first declared here\n" +
		"  7 |     agent A {\n" +
		"    |     ^ first declared here\n"
	if plain.String() != want {
		t.Errorf("plain output\n got:\n%s\nwant:\n%s", plain.String(), want)
	}
	if strings.Contains(plain.String(), "\x1b[") {
		t.Error("colour codes in plain output")
	}
	var coloured bytes.Buffer
	renderDiagnostics(&coloured, ds, newDiagStyle(true))
	if !strings.Contains(coloured.String(), "\x1b[") {
		t.Error("no colour codes when colour is on")
	}
}
