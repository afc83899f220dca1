package builtin

import (
	"os"
	"testing"

	"github.com/nexa-run/nexa/internal/proctree"
)

// TestMain lets this test binary act as the supervisor of the shell
// commands shell_exec starts (proctree.Start runs the binary again).
func TestMain(m *testing.M) {
	proctree.RunIfSupervisor()
	os.Exit(m.Run())
}
