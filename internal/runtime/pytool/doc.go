// Package pytool runs Python tools (python! bodies and legacy `python:`
// files) for the runtime, one child interpreter per call.
//
// # Process model
//
// Each Execute starts `python3 -u -c BOOTSTRAP` (or the configured
// interpreter) in the invocation's working directory, in a process group of
// its own. BOOTSTRAP is the fixed program in bootstrap.py, embedded in the
// binary; nothing that comes from the tool, the model or the secrets is ever
// placed on a command line or spliced into code text. The child is never
// given a shell.
//
// # Protocol
//
//   - stdin carries one JSON request, read to EOF, then replaced by
//     /dev/null:
//     {"kind": "body"|"file", "source": text or path, "function": tool name,
//     "params": [names], "arguments": {…}, "secrets": {…},
//     "close_fds": true for a sandboxed call (close every inherited
//     descriptor but 0-2 and the result channel before user code runs)}.
//     A body becomes `def __nexa_tool__(params…)` whose statements are the
//     body's own parsed AST (ast.parse of the body text, grafted into a
//     FunctionDef), so string literals in the body keep their exact text
//     and traceback line numbers are the body's own. Parameter names are
//     checked in Go (identifier, not a Python keyword) and again in Python.
//   - fd 3 (cmd.ExtraFiles) is the result channel, newline-delimited JSON.
//     The bootstrap moves it to a high close-on-exec descriptor before any
//     user code runs, so print, open or subprocess cannot touch it by
//     accident. Records: {"event":"start"} just before the first line of
//     user code (the function call; for a legacy file, the module import),
//     then exactly one final record: {"ok":true,"output":…},
//     {"ok":false,"error":…}, {"unknown":true,"message":…} or {"fatal":…}
//     (the request could not be set up; no user code ran).
//   - stdout and stderr share one pipe that is copied to Invocation.Log.
//
// # Outcomes
//
//   - ok → Outcome{Output, Success: true}; an exception (SystemExit
//     included) → Outcome{Success: false} whose Output is the tail of the
//     traceback; the full traceback also goes to the log.
//   - ToolOutcomeUnknown, a timeout (Invocation.Timeout), a cancelled or
//     expired context, or a child that dies after the start record without
//     a final record → an error wrapping runtime.ErrUnknownOutcome: the
//     effect may have happened. A final record that arrived completely is
//     used even if the process had to be killed afterwards.
//   - Nothing ran (interpreter missing, unusable working directory, bad
//     arguments or parameter names, the bootstrap died before the start
//     record, sandbox requested but unavailable) → a *StartError: errors.Is(err,
//     ErrNotStarted) and errors.Is(err, runtime.ErrNotExecuted) are true,
//     it has a NotStarted() method, and it does NOT wrap ErrUnknownOutcome.
//     The runtime may treat such a call as not executed.
//
// # Sandbox
//
// A tool declared `sandbox: true` runs under the backend returned by
// Options.Sandbox (the CLI passes sandbox.Detect): the same command line,
// rewritten by sandbox.Bwrap.Wrap to run inside bubblewrap with no network,
// a read-only system, a private /tmp and the working directory as the only
// writable place (see package sandbox for the exact guarantees and limits).
// Its outcomes carry Sandboxed: true; other tools' carry false. The result
// channel (fd 3) and the output pipe pass into the sandbox unchanged, and the
// request asks the bootstrap (close_fds) to close every other inherited
// descriptor before user code runs. A legacy tool file's directory is
// exposed read-only if the sandbox would otherwise hide it (/tmp, /run).
// When no backend is configured or detection fails, the call is refused
// with a *StartError matching ErrSandboxUnavailable (and, for a failed
// detection, sandbox.ErrUnavailable, whose message says how to install
// bubblewrap); it is never run unsandboxed. Killing the process group (see
// below) kills bubblewrap, and with it everything in the sandbox.
//
// # Process group
//
// After the final record (plus a short grace for the interpreter to exit)
// or on timeout, the whole process group is sent SIGKILL, so subprocesses a
// tool started do not outlive its call; a tool that wants a long-lived
// process must detach it (start_new_session=True). The group is killed
// while the leader is still an unreaped zombie (waitid WNOWAIT), so the
// group id cannot have been reused. Being in its own group also shields
// the tool from the terminal's Ctrl-C: the runtime decides when to stop it.
package pytool
