package schemacheck

import (
	"encoding/json"
	"os"
	"testing"
)

// programSchemas reads testdata/program.json: the schemas a typical
// program compiles when a run starts (seven std.fs tools, two tools of its
// own, an output protocol, two tools of an MCP server).
func programSchemas(b *testing.B) []struct {
	Name      string
	Generated bool
	Schema    json.RawMessage
} {
	b.Helper()
	raw, err := os.ReadFile("testdata/program.json")
	if err != nil {
		b.Fatal(err)
	}
	var out []struct {
		Name      string
		Generated bool
		Schema    json.RawMessage
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		b.Fatal(err)
	}
	return out
}

// BenchmarkCompileProgram is what a run pays at start-up to compile the
// schemas of a typical program, each for the first time in the process
// (the cache is emptied on every round).
func BenchmarkCompileProgram(b *testing.B) {
	schemas := programSchemas(b)
	for b.Loop() {
		forgetCompiled()
		for _, s := range schemas {
			compile := Compile
			if s.Generated {
				compile = CompileGenerated
			}
			if _, err := compile(s.Schema); err != nil {
				b.Fatalf("%s: %v", s.Name, err)
			}
		}
	}
}

// forgetCompiled empties the cache, so that a benchmark pays for compiling
// as a fresh process does.
func forgetCompiled() {
	cache.mu.Lock()
	clear(cache.m)
	cache.mu.Unlock()
}
