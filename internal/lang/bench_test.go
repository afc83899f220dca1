package lang

import (
	"strings"
	"testing"
)

func benchParse(b *testing.B, one string) {
	src := []byte(strings.Repeat(one, 1000))
	b.SetBytes(int64(len(src)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, d := Parse("x.nx", src); d.HasErrors() {
			b.Fatal(d.Err())
		}
	}
}

// BenchmarkParseMinimalTool parses 1,000 minimal @tool functions.
func BenchmarkParseMinimalTool(b *testing.B) {
	benchParse(b, "@tool(\"d\") fn f(): string { python! \"\"\"x\"\"\" }\n")
}

// BenchmarkParseTypicalTool parses 1,000 tools with settings and typed
// parameters.
func BenchmarkParseTypicalTool(b *testing.B) {
	benchParse(b, "@tool(\"d\", risk_level: \"medium\", timeout: 30)\nfn f(query: string, limit: int = 5, tags: list[str]?): string { python! \"\"\"x\"\"\" }\n")
}

// BenchmarkParseNativeTool parses 1,000 tools with native bodies.
func BenchmarkParseNativeTool(b *testing.B) {
	benchParse(b, "@tool(\"d\") fn f(): string { msg = \"Results for #{query}\";\n    if (limit > 3) { return msg + \"!\" } else { return msg } }\n")
}

// BenchmarkLex lexes 1,000 typical tools.
func BenchmarkLex(b *testing.B) {
	src := []byte(strings.Repeat("@tool(\"d\", risk_level: \"medium\", timeout: 30)\nfn f(query: string, limit: int = 5, tags: list[str]?): string { python! \"\"\"x\"\"\" }\n", 1000))
	b.SetBytes(int64(len(src)))
	for i := 0; i < b.N; i++ {
		Lex("x.nx", src)
	}
}
