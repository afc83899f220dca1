// Command nexa runs Nexa agents durably. All behaviour lives in internal/cli.
package main

import (
	"os"

	"github.com/nexa-run/nexa/internal/cli"
	"github.com/nexa-run/nexa/internal/lategc"
	"github.com/nexa-run/nexa/internal/procenv"
	"github.com/nexa-run/nexa/internal/proctree"
)

func main() {
	// A tool's supervisor is this binary started again (internal/proctree):
	// it supervises and exits here, before anything else.
	proctree.RunIfSupervisor()
	// First, before any tool can start: take the keys out of the
	// environment block other processes read as /proc/PID/environ, and
	// make nexa not dumpable. Best effort: where /proc is missing or
	// refuses, nexa runs as before (docs/tools.md, "nexa's own environment").
	_ = procenv.HideSecrets()
	lategc.Start(lategc.Default)
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
