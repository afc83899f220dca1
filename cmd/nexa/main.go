// Command nexa runs Nexa agents durably. All behaviour lives in internal/cli.
package main

import (
	"os"

	"github.com/nexa-run/nexa/internal/cli"
	"github.com/nexa-run/nexa/internal/lategc"
	_ "github.com/nexa-run/nexa/internal/pretouch" // nexa agent: the heap faulted in while the process starts
)

func main() {
	lategc.Start(lategc.Default)
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
