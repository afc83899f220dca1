package pytool

import (
	"flag"
	"github.com/nexa-run/nexa/internal/proctree"
	"os"
	"testing"
)

// TestMain lets more of this package's parallel tests run at once than the
// default (GOMAXPROCS): they spend most of their time waiting for Python
// interpreters to start, which on a slow interpreter (a pyenv shim, a
// loaded CI machine) would otherwise make the package outlast go test's
// timeout. An explicit -test.parallel is kept.
func TestMain(m *testing.M) {
	proctree.RunIfSupervisor() // Start re-executes this test binary as the tools' supervisor
	flag.Parse()
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if !explicit {
		_ = flag.Set("test.parallel", "8")
	}
	os.Exit(m.Run())
}
