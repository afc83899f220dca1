// Package engine drives durable agent runs: it sends the conversation to a
// provider, journals every tool call in three stages, applies the approval,
// policy and budget rules, executes tools through executors, and saves the
// run in a store after every step, so that any later process can continue
// it.
//
// The package exists so that the guarantees of a run are kept in one place,
// whatever starts the run. They are written once, in
// docs/reference/runtime.md#invariants, and its tests check them directly.
//
// Executors (package tool's contract, implemented under internal/tools) and
// model clients (package provider) are handed in by the caller; none of them
// imports this package.
package engine
