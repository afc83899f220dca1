package compile

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nexa-run/nexa/internal/ir"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// irDump is everything a Program holds, for golden files: the fields the
// JSON tags of the IR leave out included.
func irDump(p *ir.Program) map[string]any {
	tools := []any{}
	for _, t := range p.Tools {
		pyFile := t.Body.PythonFile
		if pyFile != "" {
			pyFile = relativeTo(t.File, pyFile)
		}
		tools = append(tools, map[string]any{
			"name": t.Name, "description": t.Description, "parameters": t.Parameters, "returns": t.Returns,
			"risk_level": t.Risk, "requires_approval": t.RequiresApproval, "needs_approval": t.NeedsApproval(),
			"sandbox": t.Sandbox, "timeout": t.Timeout, "idempotent": t.Idempotent, "category": t.Category,
			"line": t.Line, "file": t.File,
			"body": map[string]any{"kind": t.Body.Kind, "python": t.Body.Python, "python_file": pyFile,
				"mcp": t.Body.MCP, "native": t.Body.Native},
		})
	}
	agents := []any{}
	for _, a := range p.Agents {
		agents = append(agents, map[string]any{
			"name": a.Name, "system_prompt": a.SystemPrompt(), "role": a.Role, "model": a.Model,
			"model_fallbacks": a.ModelFallbacks, "tools": a.Tools, "implicit_tools": a.ImplicitTools,
			"uses": a.Uses, "implements": a.Implements, "returns": a.Returns, "max_tool_calls": a.MaxToolCalls,
			"tool_call_strategy": a.ToolCallStrategy, "timeout": a.Timeout, "retry": a.Retry,
			"temperature": a.Temperature, "max_tokens": a.MaxTokens, "output_format": a.OutputFormat,
			"stream": a.Stream, "properties": a.Properties, "requires": a.Requires, "ensures": a.Ensures,
			"line": a.Line,
		})
	}
	return map[string]any{
		"source_hash": p.Hash, "files": p.Files, "tools": tools, "agents": agents,
		"protocols": p.Protocols, "declarations": p.Decls, "secret_files": p.SecretFiles,
		"active_config": p.ActiveConfig,
	}
}

// TestGolden compiles each testdata/golden/*.nx and compares the whole IR
// with its .ir.json file (go test -run TestGolden -update rewrites them).
func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/golden/*.nx")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden programs: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			prog, diags := Compile(f, Options{})
			if diags.HasErrors() {
				t.Fatalf("compile: %v", diags.Err())
			}
			checkSchemas(t, prog)
			got, err := json.MarshalIndent(irDump(prog), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			var warns []string
			for _, w := range diags.Warnings() {
				warns = append(warns, w.String())
			}
			got = append(got, []byte("\n// warnings:\n"+strings.Join(warns, "\n")+"\n")...)
			golden := strings.TrimSuffix(f, ".nx") + ".ir.json"
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("read golden (run with -update to create it): %v", err)
			}
			if string(got) != string(want) {
				t.Errorf("IR differs from %s (run go test -run TestGolden -update and review the diff)\n%s", golden, firstDiff(string(want), string(got)))
			}
		})
	}
}

// firstDiff shows the first differing line.
func firstDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(wl) || i < len(gl); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return "line " + itoa(i+1) + ":\n want: " + w + "\n  got: " + g
		}
	}
	return ""
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
