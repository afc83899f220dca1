// Package session assembles what a run needs, for every entry point: the
// store, the secrets and their redactor, the model provider, the policy,
// the MCP servers' tools, the executors with the files they must not reach,
// the deadline, and the engine's runner over all of them. nexa agent,
// nexa runs approve, nexa serve (and its --execute) all build runs here,
// from typed options; the command line only maps its flags to those
// options and renders what comes back.
//
// It is the one package that imports the model clients, the executors and
// the MCP client together, so that nothing else has to.
package session

import "github.com/nexa-run/nexa/internal/telemetry"

// Env is what the assembly reads of the process it runs in: the
// environment (provider keys, NEXA_* settings). Tests give their own.
type Env struct {
	// Getenv reads one variable; nil reads none.
	Getenv func(string) string
	// Environ lists the whole environment, so that every secret-named
	// variable's value is redacted; nil lists none.
	Environ func() []string
	// Version is the binary's version, which nexa names itself by to MCP
	// servers.
	Version string
	// Tracing makes the spans of the runs assembled here (one per run
	// segment, model request and tool call); nil or off makes none.
	Tracing *telemetry.Tracing
	// Metrics count what the runs assembled here do (steps, tool calls,
	// retries, segments); nil counts nothing.
	Metrics *telemetry.Metrics
}

func (e Env) getenv(k string) string {
	if e.Getenv == nil {
		return ""
	}
	return e.Getenv(k)
}
