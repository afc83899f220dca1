package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/nexa-run/nexa/internal/compile"
	"github.com/nexa-run/nexa/internal/ir"
)

func newValidateCmd(e *env) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "validate FILE",
		Short: "Compile a .nx program and report every error and warning",
		Long: `Compile FILE and its includes and report every diagnostic: each error names
file:line:col, shows the source line with a caret and, where it can, the fix
("did you mean ...?"). All errors of all files are reported, not only the first.

Warnings (settings nexa agent ignores, agents exposed to every tool, ...) do
not make a program invalid.

Includes are looked up beside the including file, then in each directory of
NEXA_PATH (colon-separated).

Exit status: 0 when there is no error (warnings allowed), 2 when there are
compile errors or FILE does not exist, 1 when FILE cannot be read.`,
		Example: `  nexa validate review.nx
  nexa validate --json review.nx | jq '.errors[] | .message'
  NEXA_PATH=$HOME/nexa-lib nexa validate app.nx`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			path := args[0]
			prog, diags := compile.Compile(path, compile.Options{NexaPath: e.getenv("NEXA_PATH")})
			if asJSON {
				if err := diagWriteJSON(e.stdout, toValidateJSON(diags)); err != nil {
					return fmt.Errorf("encode diagnostics: %w", err)
				}
			} else {
				renderDiagnostics(e.stderr, diags, newDiagStyle(colorEnabled(e, e.stderr)))
				if prog != nil {
					// the program's own tools, then the built-in ones its
					// agents bring in with uses std.NS
					own, builtin := 0, 0
					for _, t := range prog.Tools {
						if t.Body.Kind == ir.BodyBuiltin {
							builtin++
						} else {
							own++
						}
					}
					tools := diagPlural(own, "tool")
					if builtin > 0 {
						tools += ", " + diagPlural(builtin, "built-in tool")
					}
					fmt.Fprintf(e.stdout, "%s: valid (%s, %s, %s, %s)\n", path, tools,
						diagPlural(len(prog.Agents), "agent"),
						diagPlural(len(prog.Protocols), "protocol"), diagPlural(len(diags.Warnings()), "warning"))
				} else {
					fmt.Fprintf(e.stderr, "%s: %s, %s\n", path,
						diagPlural(len(diags.Errors()), "error"), diagPlural(len(diags.Warnings()), "warning"))
				}
			}
			if diags.HasErrors() {
				return exitWith(compileExitCode(diags))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"valid", "errors", "warnings"} as JSON on stdout`)
	return cmd
}
