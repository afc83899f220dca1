// Package mcptool runs the tools of MCP servers (`uses mcp:"…"`, `tool X {
// mcp: "…" }`) for the runtime, with the official Go SDK
// (github.com/modelcontextprotocol/go-sdk) as the client.
//
// # Transports
//
// ParseSpec reads a server spec (docs/reference/runtime.md#mcp-tools):
//
//   - "http://…" and "https://…" are Streamable HTTP endpoints. The SDK
//     speaks the 2026-07-28 revision first (stateless, server/discover)
//     and falls back to the initialize handshake of the earlier revisions
//     it knows. The standalone GET stream is not opened (nexa needs no
//     server-initiated messages). Tool calls go out on new connections (a
//     clone of the client's *http.Transport without keep-alives), so that
//     a lost call can be told apart from a connection the server closed
//     while idle. key=value words after the URL are OAuth client
//     credentials (OAuthSpec; auth.go): a bearer token is fetched with the
//     client-credentials grant and renewed; an authorization nexa cannot
//     give (no credentials, refused ones) is ErrAuthRequired, never an
//     interactive flow.
//   - "stdio:COMMAND ARGS…" is a child process speaking newline-delimited
//     JSON-RPC on stdin/stdout. The line is split into words with POSIX
//     single quotes, double quotes and backslashes and started directly,
//     never through a shell; unquoted shell operators (| & ; < > ` and $
//     expansions) are refused, because they would silently become literal
//     arguments. Leading VAR=value words are assignments, as in a shell,
//     and only there $NAME / ${NAME} is expanded, from Options.Secret.
//     The child runs in Options.WorkDir (the run's working directory) with
//     the least environment (toolenv.MCP: what the MCP SDKs pass by
//     default), Options.Env and the assignments, never nexa's whole one,
//     in a process group of its own; its stderr goes to Options.Log and
//     its last 4 KiB into error messages.
//
// Anything else is refused with a message saying what to write.
//
// Connect starts or reaches one server, performs the handshake (no roots,
// sampling or elicitation are offered) and lists its tools, every page.
// Close cancels calls in flight, deletes an HTTP session, and stops a stdio
// child: EOF on stdin, then SIGTERM, then SIGKILL after Options.StopGrace
// each, signals going to the whole process group. When the leader exits on
// its own, whatever remains of its group is killed at once (the leader is
// still an unreaped zombie then, so the group id cannot have been reused).
//
// Manager connects the servers of a run (each spec once, concurrently),
// refuses two servers that offer the same tool name (the error names both),
// routes calls by tool name as the runtime.Executor of ir.BodyMCP,
// gives the tools as compile tools (runtime.Config.ExtraTools) and the
// records to store in the run (runtime.Config.MCPServers), and closes all.
//
// # Risk
//
// A tool's risk level comes from its annotations only when the program
// trusts its server (the setting trust=annotations in the spec,
// Spec.TrustAnnotations), exactly as docs/reference/runtime.md#mcp-tools
// says: readOnlyHint true → low; else destructiveHint explicitly false →
// medium; else → high (MCP assumes a tool destructive when the hint is
// absent), so it needs the operator's approval; idempotentHint becomes the
// tool's idempotent flag. Annotations are the server's own claims, so for
// a server that is not trusted, the default, every tool is high and none
// idempotent: a server cannot exempt its tools from approval, or have a
// cut-off call run again, by saying so. Its stated hints are appended to
// the tool's description, for the person deciding a call to see.
//
// Input schemas are kept as the server wrote them, except that a schema is
// always an object schema ("type":"object" and "properties" are added when
// missing; an empty or non-object schema becomes an empty object schema),
// since arguments are always a JSON object.
//
// # Outcomes
//
// Server.Call (and Manager.Execute) return:
//
//   - a result → Outcome{Success: true}, its text blocks joined by newlines,
//     other content summarised as JSON (binary data by its size), then the
//     structured content as JSON unless a text block holds the same value;
//     a tool with an output schema must return structured content matching
//     it, else the outcome is Success false saying why (Outcome.Structured
//     keeps a matching one);
//   - isError: true, or a JSON-RPC error answer from the server (unknown
//     tool, invalid params) → Outcome{Success: false} with the message: a
//     known outcome;
//   - an error wrapping runtime.ErrNotExecuted when the request cannot have
//     reached the server: the server was closed or had already exited, the
//     connection had ended, the tool is not offered, the arguments are not a
//     JSON object, the context was already done, or the HTTP connection
//     could not be opened;
//   - an error wrapping runtime.ErrUnknownOutcome when it may have: the
//     child exited or the connection broke while the call was in flight, the
//     timeout (Invocation.Timeout) or ctx ended it, or Close cancelled it.
//     The SDK then sends notifications/cancelled, but whether the effect
//     happened is unknown, so the runtime leaves the journal entry started.
//
// Every call carries the idempotency key RUN_ID:CALL_ID in its _meta under
// "nexa/idempotency_key", so a server can drop a duplicate side effect when
// an idempotent call runs again after a crash.
//
// # Tasks
//
// Calls declare the Tasks extension (tasks.go); the task answer is
// rewritten by a wrapper of the stdio connection, or by an
// http.RoundTripper in the response body over HTTP (tasks_http.go). A task
// answer is handed to CallOptions.Handed (tool.Invocation.Handed, which
// journals it) before anything else, then polled with tasks/get until it
// ends; the run's deadline cancels it (tasks/cancel), Stop and a lost
// connection leave it (tool.ErrDetached), and Manager.Resume
// (tool.Resumer) polls the task of an earlier process.
//
// # Schema hash
//
// Server.SchemaHash is "sha256:<hex>" over a canonical JSON encoding of the
// tool list sorted by name: names, descriptions, normalised input schemas,
// output schemas (when declared) and annotation hints, which is everything
// the model, the result checks and the approval policy see. A run records it per server (state.MCPServer); on resume the
// servers are started again and a different hash refuses the resume like a
// source change, because the calls in the journal were made against other
// tools.
package mcptool
