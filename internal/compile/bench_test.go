package compile

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// genTools writes a program of n annotated tools (half Python, half native)
// and one agent that uses a few of them.
func genTools(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "@tool(\"Tool number %d\", risk_level: \"medium\", timeout: 30)\n", i)
		fmt.Fprintf(&b, "fn tool_%d(query: string, limit: int = 5, tags: list[str]?): string {\n", i)
		if i%2 == 0 {
			b.WriteString("    python! \"\"\"\n    return query\n    \"\"\"\n}\n\n")
		} else {
			b.WriteString("    msg = \"Results for #{query}\";\n    if (limit > 3) { return msg + \"!\" } else { return msg }\n}\n\n")
		}
	}
	b.WriteString("agent Main uses tool_0, tool_1 {\n    prompt: \"Use the tools.\",\n    model: \"m\"\n}\n")
	return b.String()
}

// BenchmarkCompile3000Tools compiles a generated program of 3,000 tools
// from memory (parse, schemas, native lowering, hash).
func BenchmarkCompile3000Tools(b *testing.B) {
	src := genTools(3000)
	opts := Options{ReadFile: MapFiles(map[string]string{"big.nx": src})}
	b.SetBytes(int64(len(src)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		prog, diags := Compile("big.nx", opts)
		if prog == nil || diags.HasErrors() {
			b.Fatalf("compile failed: %v", diags.Err())
		}
		if len(prog.Tools) != 3000 {
			b.Fatalf("got %d tools", len(prog.Tools))
		}
	}
}

// genExample writes a program shaped like the larger examples of the public
// Nexa 2.3 repository (which this project does not ship): a few protocols,
// a dozen tools of both body kinds, several agents with the usual
// properties, and the 2.x declarations nexa agent only checks for balance
// (flows and tests).
func genExample() string {
	var b strings.Builder
	for i := 0; i < 3; i++ {
		fmt.Fprintf(&b, "protocol Report%d {\n    title: string,\n    score: int,\n    tags: list[str]?\n}\n\n", i)
	}
	for i := 0; i < 12; i++ {
		fmt.Fprintf(&b, "// Tool %d of the example.\n@tool(\"Look up item %d\", risk_level: \"low\", timeout: 20)\n", i, i)
		fmt.Fprintf(&b, "fn lookup_%d(\n    query: string, // what to look for\n    limit: int = 10,\n    filters: dict[str, str]?\n): string {\n", i)
		if i%3 == 0 {
			b.WriteString("    python! \"\"\"\n    import json\n    return json.dumps({\"q\": query, \"n\": limit})\n    \"\"\"\n}\n\n")
		} else {
			b.WriteString("    msg = \"Looked up #{query}\";\n    if (limit > 5) { return msg + \" (many)\" } else { return msg }\n}\n\n")
		}
	}
	for i := 0; i < 6; i++ {
		fmt.Fprintf(&b, "agent Agent%d -> Report%d uses lookup_%d, lookup_%d, std.time {\n", i, i%3, i, i+6)
		fmt.Fprintf(&b, "    role: \"Researcher number %d\",\n    prompt: \"\"\"\n    Find what the user asks for, then write a short report.\n    Use the tools; cite what they return.\n    \"\"\",\n", i)
		b.WriteString("    model: \"deepseek/deepseek-chat\",\n    max_tokens: 2000,\n    timeout: 120\n}\n\n")
	}
	b.WriteString("flow main {\n    r = Agent0.run(\"task\");\n    Agent1.run(r) |>> Agent2;\n}\n\n")
	b.WriteString("test \"agents answer\" {\n    assert Agent0.run(\"x\") != \"\";\n}\n")
	return b.String()
}

// BenchmarkCompileCorpus compiles each golden program and a generated
// program shaped like the larger public 2.3 examples, one file at a time:
// the cost of `nexa validate` or of starting `nexa agent` on a real
// program. Target: each under 5 ms.
func BenchmarkCompileCorpus(b *testing.B) {
	files, err := filepath.Glob("testdata/golden/*.nx")
	if err != nil || len(files) == 0 {
		b.Fatalf("no golden programs: %v", err)
	}
	srcs := map[string]string{"example.nx": genExample()}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		srcs[filepath.Base(f)] = string(data)
		if py := filepath.Join(filepath.Dir(f), "impl.py"); filepath.Base(f) == "review.nx" {
			if data, err := os.ReadFile(py); err == nil {
				srcs["impl.py"] = string(data)
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(srcs)) {
		if !strings.HasSuffix(name, ".nx") {
			continue
		}
		b.Run(strings.TrimSuffix(name, ".nx"), func(b *testing.B) {
			opts := Options{ReadFile: MapFiles(srcs)}
			b.SetBytes(int64(len(srcs[name])))
			for b.Loop() {
				prog, diags := Compile(name, opts)
				if prog == nil || diags.HasErrors() {
					b.Fatalf("compile failed: %v", diags.Err())
				}
			}
		})
	}
}
