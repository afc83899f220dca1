package stdlib

import (
	"encoding/json"
	"strings"
	"sync"
)

// Risk levels of docs/reference/runtime.md#tool-execution, spelled as ir.Tool.Risk spells them so
// the compiler can copy them as they are.
const (
	RiskLow    = "low"
	RiskMedium = "medium"
	RiskHigh   = "high"
)

// Prefix starts every namespace name, as written in `uses std.fs`.
const Prefix = "std."

// Tool is the declaration of one built-in tool. The compiler turns it into a
// ir.Tool with a builtin body; the runtime's builtin executor implements
// it under the same Name.
type Tool struct {
	// Name is the tool name the model calls ("file_read"); names are unique
	// across all namespaces.
	Name string
	// Namespace is the full namespace name ("std.fs").
	Namespace string
	// Description is sent to the model; it states units, defaults and
	// limits so the model can call the tool without guessing.
	Description string
	// Parameters is the JSON Schema of the arguments object (docs/reference/language.md#parameters-and-schemas, additionalProperties false).
	Parameters json.RawMessage
	// Returns is the declared return type, as in the IR ("string": every
	// built-in returns text, often JSON text).
	Returns string
	// Risk is "low" or "high" (docs/reference/runtime.md#tool-execution); high needs approval.
	Risk string
	// Timeout is the default execution bound in seconds.
	Timeout int
	// Idempotent marks tools that may run again on resume when their
	// outcome is unknown: reads and pure functions.
	Idempotent bool
}

//go:generate go run gen.go

// decl is one tool as catalog_gen.go writes it: constants only, so that
// the catalog is static data and nothing runs before main to build it.
type decl struct {
	name, namespace, description, parameters, risk string
	timeout                                        int
	idempotent                                     bool
}

// tool returns the declaration as a Tool whose Parameters are its own
// copy, so no caller can change the declarations seen by another.
func (d *decl) tool() Tool {
	return Tool{
		Name: d.name, Namespace: d.namespace, Description: d.description,
		Parameters: json.RawMessage(d.parameters), Returns: "string",
		Risk: d.risk, Timeout: d.timeout, Idempotent: d.idempotent,
	}
}

// index locates tools in catalog by name and by namespace (whose tools
// std.nx writes together: a range of catalog).
type index struct {
	byName      map[string]int
	byNamespace map[string][2]int
}

var (
	indexOnce sync.Once
	theIndex  index
)

// lookups returns the index, building it on the first call (about a
// microsecond; see BenchmarkBuildIndex) rather than in an init function, so
// that nothing runs before main and commands that never look at a built-in
// tool pay nothing.
func lookups() *index {
	indexOnce.Do(func() { theIndex = buildIndex() })
	return &theIndex
}

func buildIndex() index {
	ix := index{byName: make(map[string]int, len(catalog)), byNamespace: make(map[string][2]int, len(namespaceOrder))}
	for i := range catalog {
		d := &catalog[i]
		ix.byName[d.name] = i
		r, seen := ix.byNamespace[d.namespace]
		if !seen {
			r[0] = i
		}
		r[1] = i + 1
		ix.byNamespace[d.namespace] = r
	}
	return ix
}

// Namespaces returns the full names of the built-in namespaces ("std.fs",
// …) in the order of docs/reference/language.md#agents, so the compiler can list and suggest
// them.
func Namespaces() []string {
	return append([]string(nil), namespaceOrder[:]...)
}

// canonical accepts "std.fs" and "fs" alike, since the compiler sees the
// path after `std.` and users write the full name.
func canonical(ns string) string {
	if strings.HasPrefix(ns, Prefix) {
		return ns
	}
	return Prefix + ns
}

// Tools returns the tools of a namespace ("std.fs" or "fs") in declaration
// order, and false for an unknown namespace, so the compiler can expand
// `uses std.NS` into tools.
func Tools(ns string) ([]Tool, bool) {
	r, ok := lookups().byNamespace[canonical(ns)]
	if !ok {
		return nil, false
	}
	out := make([]Tool, 0, r[1]-r[0])
	for i := r[0]; i < r[1]; i++ {
		out = append(out, catalog[i].tool())
	}
	return out, true
}

// Lookup returns the built-in tool with that name, so the executor can check
// that a call names a real built-in and the compiler can detect clashes with
// user tools.
func Lookup(name string) (Tool, bool) {
	i, ok := lookups().byName[name]
	if !ok {
		return Tool{}, false
	}
	return catalog[i].tool(), true
}

// All returns every built-in tool, namespace by namespace, for listings
// (docs, nexa inspect) and tests.
func All() []Tool {
	out := make([]Tool, len(catalog))
	for i := range catalog {
		out[i] = catalog[i].tool()
	}
	return out
}
