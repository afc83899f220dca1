package compile

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzCompile: no source makes the compiler panic; a program without
// errors always has a well-formed hash and valid JSON schemas, and every
// diagnostic has a position.
func FuzzCompile(f *testing.F) {
	f.Add(reviewNX)
	f.Add(genTools(3))
	f.Add("include \"lib.nx\";\nagent A uses shared { prompt: \"p\" }")
	f.Add("@tool(\"d\") fn f(a: list[dict[str, P]]?, b: Result[int, str]) { if (a) { return \"#{a.b}\" } else { print(1 + 2 * 3) } }\nprotocol P { x: P? }")
	f.Fuzz(func(t *testing.T, src string) {
		files := map[string]string{
			"main.nx": src,
			"lib.nx":  "@tool(\"shared\") fn shared(x: string): string { return x }\ninclude \"main.nx\";",
		}
		prog, diags := Compile("main.nx", Options{ReadFile: MapFiles(files)})
		for _, d := range diags {
			if d.Line < 1 || d.Column < 1 || d.Code == "" || d.Message == "" {
				t.Fatalf("bad diagnostic %+v", d)
			}
		}
		if diags.HasErrors() {
			if prog != nil {
				t.Fatal("program returned despite errors")
			}
			return
		}
		if prog == nil || !strings.HasPrefix(prog.Hash, "sha256:") || len(prog.Hash) != 71 {
			t.Fatalf("bad program/hash: %+v", prog)
		}
		for _, tl := range prog.Tools {
			if !json.Valid(tl.Parameters) {
				t.Fatalf("invalid schema for %s: %s", tl.Name, tl.Parameters)
			}
		}
		for _, p := range prog.Protocols {
			if !json.Valid(p.Schema) {
				t.Fatalf("invalid schema for %s: %s", p.Name, p.Schema)
			}
		}
	})
}
