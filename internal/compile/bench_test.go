package compile

import (
	"fmt"
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
