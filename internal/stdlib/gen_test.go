package stdlib_test

import (
	"bytes"
	"os"
	"testing"

	"github.com/nexa-run/nexa/internal/compile"
	"github.com/nexa-run/nexa/internal/stdgen"
)

// catalog_gen.go is what std.nx generates today: a change to std.nx without
// `go generate ./internal/stdlib` fails here instead of shipping the old
// declarations.
func TestCatalogGenIsCurrent(t *testing.T) {
	src, err := os.ReadFile(stdgen.SourceName)
	if err != nil {
		t.Fatal(err)
	}
	want, err := stdgen.Generate(src)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("catalog_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("catalog_gen.go is stale: run `go generate ./internal/stdlib` after changing %s", stdgen.SourceName)
	}
}

// What compiling std.nx would cost every command if nexa did it at
// start-up rather than at `go generate` time (compare BenchmarkBuildIndex,
// the cost nexa pays instead, once, on first use).
func BenchmarkCompileStdNX(b *testing.B) {
	src, err := os.ReadFile(stdgen.SourceName)
	if err != nil {
		b.Fatal(err)
	}
	opts := compile.Options{ReadFile: compile.MapFiles(map[string]string{stdgen.SourceName: string(src)})}
	for b.Loop() {
		if _, diags := compile.Compile(stdgen.SourceName, opts); diags.HasErrors() {
			b.Fatal(diags.Err())
		}
	}
}
