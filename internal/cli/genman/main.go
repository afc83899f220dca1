// Command genman writes a man page for every nexa command and help topic
// into a directory: `make man` runs it. It is a program of its own so that
// the nexa binary does not carry the man page generator.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/nexa-run/nexa/internal/cli"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: genman DIR")
		os.Exit(2)
	}
	if err := generate(os.Args[1]); err != nil {
		fmt.Fprintf(os.Stderr, "genman: %v\n", err)
		os.Exit(1)
	}
}

// generate writes nexa.1, nexa-agent.1, nexa-runs-show.1, … into dir
// (created if needed): one page per command, and one per help topic, which
// cobra's tree walk leaves out.
func generate(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("man page directory: %w", err)
	}
	root := cli.Command()
	root.DisableAutoGenTag = true // the pages do not change unless nexa does
	header := &doc.GenManHeader{Title: "NEXA", Section: "1", Source: "nexa " + cli.Version, Manual: "nexa manual"}
	if err := doc.GenManTree(root, header, dir); err != nil {
		return fmt.Errorf("man pages: %w", err)
	}
	for _, c := range root.Commands() {
		if c.IsAdditionalHelpTopicCommand() {
			if err := writePage(c, header, dir); err != nil {
				return err
			}
		}
	}
	return nil
}

// writePage writes the man page of one command, named as GenManTree names
// its pages.
func writePage(c *cobra.Command, header *doc.GenManHeader, dir string) error {
	h := *header
	name := strings.ReplaceAll(c.CommandPath(), " ", "-") + "." + h.Section
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		return fmt.Errorf("man page: %w", err)
	}
	if err := doc.GenMan(c, &h, f); err != nil {
		f.Close()
		return fmt.Errorf("man page %s: %w", name, err)
	}
	return f.Close()
}
