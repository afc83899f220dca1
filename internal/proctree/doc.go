// Package proctree starts the processes of tools so that none of them
// outlives nexa: every executor that starts a process (shell commands, MCP
// stdio servers, Python interpreters and their warm zygotes, bubblewrap)
// starts it through this package.
//
// # Guarantee (Linux)
//
// Start runs the command under a small supervisor: nexa's own binary,
// re-executed (through /proc/self/exe, so a binary replaced on disk during
// the run does not matter) under a name that RunIfSupervisor recognises:
// every program that starts tools calls it first thing in main (a test
// binary, in its TestMain), visibly, and so can act as the supervisor.
// The supervisor:
//
//   - is started from an OS thread that never exits, with a parent-death
//     signal (PR_SET_PDEATHSIG). The kernel sends that signal when the
//     thread that forked the child ends, not the process, so forking from
//     an arbitrary goroutine's thread could fire it at a random moment
//     while nexa runs;
//   - is a child subreaper (PR_SET_CHILD_SUBREAPER): a descendant whose
//     parent exits (a double fork, a `cmd &` of a shell that has returned)
//     is reparented to the supervisor, not to init, so it stays findable;
//   - forks the command from its own locked main thread with parent-death
//     signal SIGKILL, so the command dies even if the supervisor is killed;
//   - when nexa dies, however it dies (SIGKILL included), or when the
//     supervisor gets SIGTERM, SIGINT or SIGHUP: sends SIGKILL to every
//     descendant, whatever its process group or session (setsid does not
//     escape a subreaper), until none is left, then dies of that signal;
//   - when the command exits: kills what is left of its process group
//     among its descendants (as the callers' group kill does, but before
//     it exits, so nothing is left if nexa dies in between), and exits
//     with the command's status, a signal included, so the caller sees
//     the command's own exit status, in cmd.ProcessState.
//
// To the caller the supervisor stands in for the command: cmd.Process is
// the supervisor, it is the leader of the process group when the caller
// set SysProcAttr.Setpgid (the command inherits the group), standard
// descriptors and cmd.ExtraFiles reach the command at the same numbers,
// and a command that cannot be executed (missing, not executable) makes
// Start fail with the error exec.Cmd.Start would give, once the supervisor
// has been reaped. Killing the group (kill(-pid, SIGKILL)), as the callers
// do at the end of a call, kills the supervisor and the command at once.
//
// StartDirect is for commands that already bind their whole tree to their
// own life and only need the parent-death signal from a long-lived thread:
// bubblewrap with --die-with-parent and a PID namespace, whose death ends
// every process of the namespace.
//
// # Limits
//
//   - A process that leaves the command's process group (setsid, a new
//     group) and outlives its call is no longer supervised once the
//     command has exited: Python tools may detach a process on purpose
//     that way. While the command runs, such processes do die with nexa.
//   - Killing the supervisor itself with SIGKILL (the group kill at the
//     end of a call does that; so can the OOM killer, or a tool) takes the
//     command with it, but not descendants that left the group.
//   - Nothing is done about work handed to a process outside the tree
//     (systemd-run, at, cron, a daemon reached over a socket, ssh), or
//     about what was already sent over the network.
//   - Without /proc (the supervisor is /proc/self/exe) Start falls back to
//     StartDirect: the command dies with nexa, its descendants may not.
//   - Descendants are found by scanning /proc; a pid that is reused in the
//     microseconds between the scan and the kill could be signalled.
//
// # Other systems
//
// On systems other than Linux there is neither a parent-death signal nor a
// subreaper: Start and StartDirect are exec.Cmd.Start, and processes are
// bound to the call only by the callers' process-group kill; a tool's
// processes may outlive a nexa that is killed.
package proctree
