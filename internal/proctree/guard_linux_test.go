//go:build linux

package proctree

import (
	"os/exec"
	"strings"
	"testing"
)

// A program that never called RunIfSupervisor cannot be started again as
// a supervisor: Start says so instead of starting the program as itself
// (a test binary would run its own tests again, and hang).
func TestStartRefusesWithoutDispatch(t *testing.T) {
	was := dispatching.Load()
	dispatching.Store(false)
	defer dispatching.Store(was)
	err := Start(exec.Command("true"))
	if err == nil || !strings.Contains(err.Error(), "RunIfSupervisor") {
		t.Fatalf("Start without RunIfSupervisor: %v, want a refusal naming it", err)
	}
}
