package stdlib

import (
	"encoding/json"
	"strings"
)

// Risk levels of runtime.md 8, spelled as ir.Tool.Risk spells them so
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
	// Parameters is the JSON Schema of the arguments object (language.md
	// 4.1 style, additionalProperties false).
	Parameters json.RawMessage
	// Returns is the declared return type, as in the IR ("string": every
	// built-in returns text, often JSON text).
	Returns string
	// Risk is "low" or "high" (runtime.md 8); high needs approval.
	Risk string
	// Timeout is the default execution bound in seconds.
	Timeout int
	// Idempotent marks tools that may run again on resume when their
	// outcome is unknown: reads and pure functions.
	Idempotent bool
}

// clone returns a copy whose Parameters do not alias the catalog, so no
// caller can change the declarations seen by another.
func (t Tool) clone() Tool {
	t.Parameters = append(json.RawMessage(nil), t.Parameters...)
	return t
}

// namespaceOrder is the order of runtime.md 8, which is also the order of
// Namespaces() and of the compiler's hints.
var namespaceOrder = []string{"std.fs", "std.shell", "std.http", "std.time", "std.json", "std.text", "std.hash", "std.math", "std.regex"}

var (
	byNamespace = map[string][]Tool{}
	byName      = map[string]Tool{}
)

func init() {
	for i := range catalog {
		if catalog[i].Returns == "" {
			catalog[i].Returns = "string"
		}
		t := catalog[i]
		byNamespace[t.Namespace] = append(byNamespace[t.Namespace], t)
		byName[t.Name] = t
	}
}

// Namespaces returns the full names of the built-in namespaces ("std.fs",
// …) in the order of runtime.md 8, so the compiler can list and suggest
// them.
func Namespaces() []string {
	return append([]string(nil), namespaceOrder...)
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
	list, ok := byNamespace[canonical(ns)]
	if !ok {
		return nil, false
	}
	out := make([]Tool, len(list))
	for i, t := range list {
		out[i] = t.clone()
	}
	return out, true
}

// Lookup returns the built-in tool with that name, so the executor can check
// that a call names a real built-in and the compiler can detect clashes with
// user tools.
func Lookup(name string) (Tool, bool) {
	t, ok := byName[name]
	if !ok {
		return Tool{}, false
	}
	return t.clone(), true
}

// All returns every built-in tool, namespace by namespace, for listings
// (docs, nexa inspect) and tests.
func All() []Tool {
	out := make([]Tool, 0, len(catalog))
	for _, ns := range namespaceOrder {
		list, _ := Tools(ns)
		out = append(out, list...)
	}
	return out
}
