// Package runtime drives durable agent runs: it sends the conversation to a
// provider, journals every tool call in three stages, applies the approval
// and budget policy, executes tools through executors, and saves the run in
// a store after every step, so that any later process can continue it.
//
// The package exists so that the guarantees of a run are kept in one place,
// whatever starts the run. Those guarantees, which its tests check directly:
//
//  1. A journal entry moves not_started → started → completed, or
//     not_started → completed (denied, refused, invalid). started →
//     completed happens only by the tool's own result, an operator's
//     resolution, or a re-execution of a tool declared idempotent.
//  2. started is committed before the executor is called; a result is
//     committed before the tool messages are appended to the conversation.
//  3. A provider reply is committed before any of its calls is journaled as
//     started; a committed reply is never requested again.
//  4. Every write is one transaction conditioned on the revision that was
//     read (see package state), so two executors never both act on a run.
//  5. An approval is a Boolean in the journal, written only by an explicit
//     decision of an operator (ApplyDecisions).
//  6. Secret values are redacted before anything is saved; tools receive
//     only what the program gives them.
//
// Executors (Python, native, built-in, MCP) live in sub-packages and are
// handed in by the caller; providers live in package provider.
package engine
