//go:build !linux

package proctree

import "os/exec"

// Start starts cmd. Without a parent-death signal or a subreaper, nothing
// ties the command's processes to nexa on this system.
func Start(cmd *exec.Cmd) error { return cmd.Start() }

// StartDirect starts cmd, as Start does on this system.
func StartDirect(cmd *exec.Cmd) error { return cmd.Start() }

// WaitExitNoReap is never called on this system: the callers that need it
// (Python tools, MCP servers on stdio) refuse to start here.
func WaitExitNoReap(int) {}

// RunIfSupervisor does nothing on this system: Start starts no supervisor.
func RunIfSupervisor() {}
