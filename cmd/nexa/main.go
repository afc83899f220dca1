// Command nexa runs Nexa agents durably. All behaviour lives in internal/cli.
package main

import (
	"os"

	"github.com/nexa-run/nexa/internal/cli"
	"github.com/nexa-run/nexa/internal/lategc"
)

// collectFrom is how much memory a process takes before its first garbage
// collection (internal/lategc): more than a short command uses, a small
// part of what a long one does.
const collectFrom = 32 << 20

func main() {
	lategc.Start(collectFrom)
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
