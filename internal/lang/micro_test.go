package lang

import (
	"strings"
	"testing"
)

func benchSrc(b *testing.B, one string) {
	src := []byte(strings.Repeat(one, 1000))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_, d := Parse("x.nx", src)
		if d.HasErrors() {
			b.Fatal(d)
		}
	}
}
func BenchmarkMinimal(b *testing.B) {
	benchSrc(b, "@tool(\"d\") fn f(): string { python! \"\"\"x\"\"\" }\n")
}
func BenchmarkParams(b *testing.B) {
	benchSrc(b, "@tool(\"d\") fn f(query: string, limit: int = 5, tags: list[str]?): string { python! \"\"\"x\"\"\" }\n")
}
func BenchmarkSettings(b *testing.B) {
	benchSrc(b, "@tool(\"d\", risk_level: \"medium\", timeout: 30) fn f(): string { python! \"\"\"x\"\"\" }\n")
}
func BenchmarkNative(b *testing.B) {
	benchSrc(b, "@tool(\"d\") fn f(): string { msg = \"Results for #{query}\";\n    if (limit > 3) { return msg + \"!\" } else { return msg } }\n")
}
