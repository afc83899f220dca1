// Package pytool runs Python tools (python! bodies and legacy `python:`
// files) for the runtime, one fresh Python process per call.
//
// # Process model
//
// A call runs the fixed program in bootstrap.py (BOOTSTRAP, embedded in the
// binary) in the invocation's working directory, in a process group of its
// own; nothing that comes from the tool, the model or the secrets is ever
// placed on a command line or spliced into code text, and the child is
// never given a shell. There are two ways to get that process:
//
//   - per call ("cold"): Execute starts `python3 -u -c BOOTSTRAP` (or the
//     configured interpreter). Sandboxed calls always take this path (under
//     bubblewrap), and so does every call with Options.NoWarm.
//   - warm (the default for unsandboxed calls): the call is forked by a
//     zygote, see "Warm interpreters" below. It is a new process all the
//     same, and behaves as the per-call one does.
//
// Both paths share the protocol, the outcome mapping and the process-group
// rules below; the package's tests run the key ones through both.
//
// # Protocol
//
//   - stdin carries one JSON request, read to EOF, then replaced by
//     /dev/null (a forked call gets it on its own socket instead, and its
//     stdin is /dev/null from the start):
//     {"kind": "body"|"file", "source": text or path, "function": tool name,
//     "params": [names], "arguments": {…}, "secrets": {…},
//     "close_fds": true for a sandboxed call (close every inherited
//     descriptor but 0-2 and the result channel before user code runs),
//     and for a forked call "environ" (base64 of the NUL-separated
//     NEXA_IDEMPOTENCY_KEY, NEXA_RUN_ID, NEXA_CALL_ID assignments) and
//     "cwd" (the absolute working directory)}.
//     A body becomes `def __nexa_tool__(params…)` whose statements are the
//     body's own parsed AST (ast.parse of the body text, grafted into a
//     FunctionDef), so string literals in the body keep their exact text
//     and traceback line numbers are the body's own. Parameter names are
//     checked in Go (identifier, not a Python keyword) and again in Python.
//   - fd 3 (cmd.ExtraFiles; a forked call gets it on its own socket) is
//     the result channel, newline-delimited JSON.
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
//     used even if the process had to be killed afterwards. So is a call
//     whose result channel is still held open once its process group is
//     dead (only user code can pass it to a process outside the group, and
//     records not read by then are lost): it is never "not started".
//   - Nothing ran (interpreter missing, unusable working directory, bad
//     arguments or parameter names, the bootstrap died before the start
//     record, sandbox requested but unavailable) → a *StartError: errors.Is(err,
//     ErrNotStarted) and errors.Is(err, runtime.ErrNotExecuted) are true,
//     it has a NotStarted() method, and it does NOT wrap ErrUnknownOutcome.
//     The runtime may treat such a call as not executed.
//
// # Import path
//
// The working directory is never implicitly on sys.path, with every
// interpreter version: `python -c` puts it first (Python 3.11+ would leave
// it off with -P), and the bootstrap removes that entry before it imports
// anything, for good. Sandboxed tools can write to the working directory;
// a file planted there (csv.py) must never be imported by the bootstrap or
// by a tool running outside the sandbox. A legacy `python:` file is loaded
// by path (importlib.util.spec_from_file_location) and its directory is not
// added either; a tool that wants its working directory or its own
// directory on sys.path adds it itself. PYTHONPATH entries and site-packages
// are kept (-I, -E and -s would drop them): they are the user's explicit
// choice, and child processes of a tool inherit nothing from this rule.
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
// exposed read-only if the sandbox would otherwise hide it (/tmp, /run),
// and cannot be changed from inside. Options.Protected names nexa's own
// files (the store and its SQLite siblings, .nexa, logs, locks, secrets
// files), which a sandboxed call can neither read nor change, and the
// files nexa runs later (the program, legacy tool files), which it cannot
// change.
// When no backend is configured or detection fails, the call is refused
// with a *StartError matching ErrSandboxUnavailable (and, for a failed
// detection, sandbox.ErrUnavailable, whose message says how to install
// bubblewrap); it is never run unsandboxed. Killing the process group (see
// below) kills bubblewrap, and with it everything in the sandbox.
//
// # Warm interpreters
//
// Starting Python is most of a trivial call's cost (≈33 ms with
// /usr/bin/python3, ≈135 ms through a pyenv shim, which is what `python3`
// often is). Unless Options.NoWarm is set, the Executor keeps a zygote per
// (working directory, start-up environment): `python3 -u -c BOOTSTRAP
// --nexa-zygote`, started lazily by the first unsandboxed call with the same
// interpreter, environment (minus the three call variables), working
// directory and process-group rule as a per-call interpreter. It imports
// what the bootstrap imports (with the working directory off sys.path, as
// for a call), closes every descriptor it inherited but 0-2 and its control
// socket, and waits. It never runs user code and never sees a call's
// arguments, secrets, environment variables or result: over a
// SOCK_SEQPACKET socket pair (fd 3) it only forks children on request and
// reports their pids and exits.
//
// Children are forked ahead of their calls: two as soon as the zygote is
// ready, and a replacement for the one a call took when that call ends
// (forked during the call, its preparation would compete with the call for
// the cores); a call that finds none waits for the one it asks for. A child is a clean fork
// of the zygote, which is the same at every fork since it never runs user
// code, so forking it early changes nothing a call can see. With the pid
// comes nexa's end of a stream socket of the child's own (SCM_RIGHTS); the
// zygote keeps no copy. Before its call is known the child: restores
// SIGCHLD, makes its own process group (setpgid, as the per-call path
// does; the zygote does it as well, so the group exists before nexa learns
// the pid), closes the zygote's descriptors (its control socket, its
// wake-up pipe, nexa's end of the child's socket; the zygote closed what
// it inherited, and its stdin is /dev/null), and rehearses a call's
// set-up and end on made-up data, step by step, what every call needs
// first, stopping as soon as a call is waiting (it would only delay it):
// after a fork, the first write to a page copies it and the first run of a
// piece of the interpreter's machine code maps it again, and those page
// faults were most of what a call cost. The rehearsal runs none of the
// tool's code and keeps nothing (the call variables it sets are removed
// again). Then it waits on its socket. What needs doing only once is done
// in the zygote before it forks: the bootstrap's per-process set-up (its
// helpers and classes: each child gets its own copy, as of every object
// of the zygote), a few rehearsals of its own (a function's first runs
// write to memory later runs leave alone), and marking the import caches
// stale (the zygote imports nothing after that, nor does a child before
// its call, so they are read again at the call's first import).
//
// A call sends the child, over that socket, its output pipe and result
// channel (SCM_RIGHTS) with the first bytes of the request, then the rest,
// then end of file. Only now does the child learn anything of the call: it
// checks that its zygote is still its parent (if not, it refuses the call
// with an "orphaned" record and exits, having run nothing, and nexa runs
// the call on a new zygote), moves the pipes onto 1, 2 and a high
// close-on-exec descriptor, sets the call variables in its environment
// (the zygote's environment is otherwise exactly what the interpreter
// started with, wrapper changes included), changes to the working
// directory (by path, so a directory removed and made again works; a
// missing one is a *StartError), and runs the same per-call code as a
// fresh interpreter. A child nobody takes leaves when its socket reaches
// end of file: when nexa replaces or stops the zygote, closes the
// executor, or exits; the zygote also kills its children's groups when it
// stops.
// It ends as a fresh interpreter's exit does, in the same order: non-daemon
// threads are joined, atexit handlers run, the standard streams are
// flushed, and what the call created (the modules it imported, the names it
// added to __main__) is torn down and collected, so its objects are
// finalized (files it left open are flushed, temporary files removed).
// Then it leaves with os._exit instead of tearing down the whole inherited
// interpreter: that teardown writes to nearly every page of the zygote's
// heap and so copies it, which cost about 40 ms a call. The zygote freezes
// its objects (gc.freeze) once it has started, so a child's collector
// walks only what was made since (mostly its call's objects).
//
// So each call is still a new process forked from a zygote that never ran
// user code: globals, imported modules, os.environ, cwd, signal handlers,
// umask and threads of one call cannot reach another, and prints cannot
// reach the result. What calls of one zygote share is what they would
// share anyway or what is immaterial: the interpreter's start-up state (the
// same for the same environment and directory; when Options.Env is nil, a
// change of nexa's environment gets a new zygote), the string hash seed
// (PYTHONHASHSEED; random is reseeded at fork), the process attributes nexa
// had when the zygote started (umask, resource limits), and the zygote as
// parent (os.getppid() is the zygote, /proc/self/cmdline ends in
// --nexa-zygote). Unlike a per-call child, a forked call does not inherit
// descriptors nexa itself inherited without close-on-exec (a sandboxed
// call closes them too). A tool could signal or, where ptrace is allowed,
// inspect the zygote; it can do the same to nexa itself, which runs as the
// same user.
//
// Measured on a trivial tool (docs/benchmarks.md#python-tools): a warm
// call costs less than the interpreter's own start (`python3 -c pass`); the
// first call of a zygote pays for starting it. See BenchmarkPythonCall,
// BenchmarkPythonCallWarm, BenchmarkPythonCallWarmSpaced and
// BenchmarkInterpreterStartup.
//
// The zygote reports each child's exit ({"exited": pid, ...}) but leaves it
// an unreaped zombie until nexa, having killed its process group, releases
// it: the group id cannot have been reused, as on the per-call path.
// Timeouts, cancellation, exit status and the outcome mapping are therefore
// the same. nexa also holds a pidfd of each child (where the kernel has
// them), so it learns of the exit without waiting for the zygote to notice
// it; the zygote's report still says how a child without a result ended. If the zygote dies during a call (a tool can kill its parent),
// nexa kills the call's group at once and the call ends as unknown (or with
// its result, if it had been delivered).
//
// A zygote that is dead, fails to fork in time or stops answering is
// replaced, once per call; if a new one cannot start (or its start failed
// twice in a row for that key, or there are already four zygotes busy), the
// call takes the per-call path. A call falls back only when nothing of it
// has run: before its request was sent, or when its child refused it or
// died with its zygote before the start record (the result channel, read
// to its end, has neither a start nor a final record); nothing is ever run
// less isolated.
// Executor.Close closes the control sockets: each zygote kills its
// children's process groups and exits (it is killed after 3 s otherwise),
// and Close waits for that. A zygote also exits when nexa exits, however
// it exits, since its control socket then reaches end of file; an Executor
// dropped without Close has its zygotes stopped when it is collected. After
// Close, calls run per call.
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
//
// Per-call interpreters and zygotes are started through package proctree:
// the process nexa knows (the group leader, whose status is the
// interpreter's) is a supervisor that kills the interpreter and all its
// descendants, detached ones included, if nexa dies, even by SIGKILL. A
// per-call interpreter's os.getppid() is that supervisor; a forked call's is
// still the zygote. Sandboxed calls are started by sandbox.Start instead:
// bubblewrap dies with nexa and takes its PID namespace with it.
package pytool
