package compile

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// genMixed writes n tools of which some have errors, warnings or
// suggestions (more than the suggestion budget), with aliases (one of them
// recursive) and protocols, so that the parallel and the sequential
// compilation of tools can be compared.
func genMixed(n int, clean bool) string {
	var b strings.Builder
	b.WriteString("type Email = str @ \"an address\"\ntype Loop = Loop\nprotocol P { x: int, e: Email }\n")
	for i := 0; i < n; i++ {
		ty := "string"
		extra := ""
		switch {
		case clean:
			ty = []string{"string", "Email", "P?", "list[P]", "dict[str, Email]"}[i%5]
		case i%7 == 1:
			ty = "strng" // unknown type: error with a suggestion
		case i%11 == 2:
			ty = "Loop" // recursive alias
		case i%13 == 3:
			extra = ", risk: \"high\"" // unknown setting: warning
		case i%17 == 4:
			ty = "Email"
		}
		fmt.Fprintf(&b, "@tool(\"Tool %d\"%s)\nfn t%d(q: %s, n: int = 2): string {\n", i, extra, i, ty)
		if i%2 == 0 {
			b.WriteString("    python! \"\"\"return q\"\"\"\n}\n")
		} else if !clean && i%19 == 5 {
			b.WriteString("    return qq\n}\n") // unknown name: suggestion
		} else {
			b.WriteString("    m = \"#{q}\"; if (n > 1) { return m + \"!\" } else { return m }\n}\n")
		}
	}
	b.WriteString("agent A uses t0, t1 { prompt: \"p\" }\n")
	return b.String()
}

// TestParallelToolsMatchSequential: compiling tools on all cores gives
// exactly what a sequential compilation gives (IR, hash, diagnostics in
// order, the suggestion budget spent in program order).
func TestParallelToolsMatchSequential(t *testing.T) {
	for _, clean := range []bool{true, false} {
		src := genMixed(1500, clean)
		compileWith := func(threshold int) (*Program, Diagnostics) {
			old := parallelTools
			parallelTools = threshold
			defer func() { parallelTools = old }()
			return Compile("m.nx", Options{ReadFile: MapFiles(map[string]string{"m.nx": src})})
		}
		seqProg, seqDiags := compileWith(1 << 30)
		parProg, parDiags := compileWith(1)
		if !reflect.DeepEqual(seqDiags, parDiags) {
			t.Fatalf("clean=%v: diagnostics differ:\nsequential %d:\n%s\nparallel %d:\n%s", clean, len(seqDiags), dump(seqDiags[:min(5, len(seqDiags))]), len(parDiags), dump(parDiags[:min(5, len(parDiags))]))
		}
		if clean {
			if seqProg == nil || parProg == nil {
				t.Fatalf("clean program did not compile: %v", seqDiags.Err())
			}
			a, _ := CanonicalIR(seqProg)
			b, _ := CanonicalIR(parProg)
			if string(a) != string(b) || seqProg.Hash != parProg.Hash {
				t.Fatal("parallel compilation changed the IR")
			}
			// the canonical IR encoded in one part and in parallel parts
			old := parallelIRTools
			parallelIRTools = 1 << 30
			one, _ := CanonicalIR(seqProg)
			parallelIRTools = 1
			many, _ := CanonicalIR(seqProg)
			parallelIRTools = old
			if string(one) != string(a) || string(many) != string(a) || !json.Valid(a) {
				t.Fatal("the canonical IR depends on how its tools were encoded")
			}
			continue
		}
		if len(seqDiags.Errors()) < 250 || len(seqDiags.Warnings()) == 0 {
			t.Fatalf("the mixed program should exhaust the suggestion budget: %d errors, %d warnings", len(seqDiags.Errors()), len(seqDiags.Warnings()))
		}
	}
}
