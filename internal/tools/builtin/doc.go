// Package builtin executes the built-in tools of the std.* namespaces
// (docs/reference/runtime.md#tool-execution) declared in internal/stdlib. New returns a
// runtime.Executor that the CLI registers for ir.BodyBuiltin; it
// dispatches on the tool name and refuses names that are not built-ins.
//
// # Results and outcomes
//
// Every call ends in one of three ways, which the journal relies on:
//
//   - An Outcome with Success true: the result text (plain text, or JSON
//     text for structured results).
//   - An Outcome with Success false: an ordinary tool error whose text goes
//     to the model. It starts with "error: " (bad arguments, a missing file,
//     a path outside the working directory, a request that could not be
//     sent), except for a command that exited non-zero or an HTTP status of
//     400 or more, which keep the same JSON result as a success so the
//     model sees the exit code, output, status and body.
//   - An error. runtime.ErrNotExecuted (wrapped) means nothing ran (unknown
//     tool name, missing working directory, a command that could not be
//     started); runtime.ErrUnknownOutcome (wrapped) means nobody can know
//     whether the effect happened: a shell command killed at its timeout, or
//     an HTTP request that was written to the connection but got no
//     response (timeout, connection closed). The entry then stays started
//     until an operator resolves it.
//
// # std.fs
//
// Paths are relative to the run's working directory; absolute paths are
// accepted only when they point inside it. `..` that climbs out, and
// symbolic links (in any component) whose target is outside, are refused
// with a message naming the link. Two layers enforce this: resolve checks
// the path and the links that exist, and every file operation then goes
// through an os.Root opened on the working directory, which walks the path
// with openat and no-follow semantics, so a link swapped in between the
// check and the use still cannot escape. Files are opened non-blocking and
// must be regular files (a FIFO cannot hang a call). file_delete removes a
// link itself, never its target, and refuses directories unless recursive
// is set. The working directory itself is never modified by the file
// tools, and nexa's own files (.nexa/ and Options.Protected: a store named
// anywhere with its SQLite siblings, the logs and locks beside it, secrets
// files) are neither read, listed nor modified; Executor.Precheck lets the
// runtime answer such a call before it would wait for approval. file_read returns text
// only (UTF-8, no NUL bytes) and appends a note saying how to continue when
// the file is longer than max_bytes.
//
// # std.shell
//
// shell_exec runs `/bin/sh -c COMMAND` (the model's command: that is the
// tool's purpose, and its high risk level means each call needs an
// operator's approval) in the working directory, in its own process group,
// with stdin from /dev/null and the environment of nexa plus
// NEXA_IDEMPOTENCY_KEY, NEXA_RUN_ID and NEXA_CALL_ID. The timeout is the
// invocation's (the tool's 600 s cut to the run's deadline), shortened by a
// smaller timeout argument. When the shell exits, whatever it left running
// in its group is killed, so nothing outlives the call. At the timeout the
// whole group is killed and the outcome is unknown. The result is JSON
// {"exit_code","stdout","stderr"} (plus "signal" and *_truncated when they
// apply); each stream keeps its first and last OutputLimit/2 bytes. Output
// is also copied to the run's tool log as it arrives.
//
// # std.http
//
// One fresh connection per call (no keep-alive, so no retry on a reused
// connection can repeat a request). Whether the request was written is
// tracked with httptrace's WroteRequest hook: a failure before that (bad
// URL, DNS failure, connection refused, TLS error, timeout while
// connecting) is a known failure — nothing was sent; a timeout or broken
// connection after it is an unknown outcome. Once the status line has
// arrived the outcome is known, even if reading the body then fails (that
// is reported in body_error). http_post, http_put and http_delete send
// `Idempotency-Key: RUN_ID:CALL_ID` (overriding any header of that name
// from the model) and do not follow redirects; http_get follows up to five.
// The result is JSON {"status","status_text","headers","body"} with a
// subset of the response headers (Content-Type, Content-Length, Location,
// Retry-After, ETag, Last-Modified, Date); a body that is not UTF-8 text
// comes back as body_base64. Success is false for a status of 400 or more —
// the model still sees the status and body — so the journal and the
// provider's is_error flag match HTTP semantics.
//
// Internal addresses (loopback, private, link-local such as the cloud
// metadata service, CGNAT, multicast, reserved and documentation blocks,
// and IPv6 forms that embed such an IPv4 address) are refused by a guard
// (httpguard.go) in the dialer's Control hook, on the address the socket
// is about to connect to after name resolution. Every connection,
// including each redirect hop, goes through that dialer, so neither a
// name that resolves to an internal address nor a redirect gets around
// it; environment proxies are not used, since behind a proxy the real
// target could not be checked. An agent's http_allow entries
// (runtime.Invocation.HTTPAllow, plus Options.HTTPAllow) let named hosts
// through: an IP entry matches the dialled address, a name entry the
// request's host name. A refusal happens before anything is sent and is
// a known failure naming the address and the entry that would allow it,
// also when it stops a redirect.
//
// # Pure namespaces
//
// std.time (strftime-style formats or named ones, IANA zones from the
// embedded database, durations with d and w units), std.json (exact
// numbers, paths like a.b[0]; json_validate uses JSON Schema, draft 2020-12
// or draft-07, with external references disabled, and lists up to 50
// problems, each at its place), std.text, std.hash, std.math (a recursive-descent
// evaluator over float64 with a fixed table of functions: nothing in the
// expression can run code; length and nesting are bounded) and std.regex
// (Go RE2: linear time, no backreferences; \1 in a replacement is read as
// $1) have no side effects.
package builtin
