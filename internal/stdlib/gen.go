//go:build ignore

// gen.go rewrites catalog_gen.go from std.nx; run it with
// `go generate ./internal/stdlib` after changing std.nx.
package main

import (
	"fmt"
	"os"

	"github.com/nexa-run/nexa/internal/stdgen"
)

func main() {
	src, err := os.ReadFile(stdgen.SourceName)
	if err != nil {
		fmt.Fprintln(os.Stderr, "stdgen:", err)
		os.Exit(1)
	}
	out, err := stdgen.Generate(src)
	if err != nil {
		fmt.Fprintln(os.Stderr, "stdgen:", err)
		os.Exit(1)
	}
	if err := os.WriteFile("catalog_gen.go", out, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "stdgen:", err)
		os.Exit(1)
	}
}
