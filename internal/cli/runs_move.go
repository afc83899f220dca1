package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nexa-run/nexa/internal/engine"
)

// nexa runs export and import: moving runs between stores. The format and
// the rules are runtime's (engine.Export, engine.Import) and documented in
// docs/store.md.

func newRunsExportCmd(e *env, open storeOpener) *cobra.Command {
	return &cobra.Command{
		Use:   "export RUN_ID…",
		Short: "Write runs, with everything they are, as JSON lines on standard output",
		Long: `Write the named runs as JSON lines on standard output: a header line, then one
line per run with its config, task, status, usage, output, error, messages,
provider replies, journal and logs. nexa runs import reads the file into
another store. Exporting only reads: a run that a process is driving is
exported as it stands, without its lease, and a note on standard error says so.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			for _, id := range args {
				if err := checkRunID(id); err != nil {
					return err
				}
			}
			s, err := open()
			if err != nil {
				return err
			}
			defer s.Close()
			rep, err := engine.Export(context.Background(), s, args, e.stdout, time.Now())
			if re, ok := engine.AsError(err); ok && re.Code == engine.CodeRunNotFound {
				return usageErrorf("%s (store %s); nothing was exported", re.Message, s.Path())
			}
			if re, ok := engine.AsError(err); ok && re.Code == engine.CodeExportTooLarge {
				return usageErrorf("%s", re.Message)
			}
			if err != nil {
				return &exitError{code: ExitFailed, msg: err.Error()}
			}
			for _, h := range rep.Held {
				fmt.Fprintf(e.stderr, "nexa: run %s is held by %s (lease until %s): exported as of revision %d, without the lease; it may change after this export\n",
					h.RunID, h.Holder.Owner, h.Holder.Expires.UTC().Format(time.RFC3339), h.Revision)
			}
			return nil
		},
	}
}

func newRunsImportCmd(e *env, open storeOpener) *cobra.Command {
	var asJSON, keepDecisions bool
	cmd := &cobra.Command{
		Use:   "import FILE|- [--keep-decisions]",
		Short: "Create the runs of an export file (- for standard input) in the store",
		Long: `Read a file written by nexa runs export (- reads standard input) and create
each of its runs in the store, which is created if it does not exist. The
whole file is checked first: a file that is not a valid export imports
nothing. A run whose id is already in the store is refused and left as it is;
the other runs are imported. Imported runs start at revision 1, held by no
one, and continue with nexa agent --resume like any other run. A file of
more than 256 MiB is refused.

A file proves nothing about who decided: the decisions recorded on calls
that have not executed are dropped, and those calls wait for approval
again (the output lists them). --keep-decisions keeps them instead, recorded
as decided by "import:<you>" (NEXA_USER, else your account) at the time of
the import.

Exit codes: 0 every run imported, 1 operational error (store unwritable),
2 invalid file or a run refused.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			in := e.stdin
			if args[0] != "-" {
				f, err := os.Open(args[0])
				if err != nil {
					return importFailure(e, asJSON, ExitUsage, engine.CodeUsage, fmt.Sprintf("import: %v", err))
				}
				defer f.Close()
				in = f
			}
			recs, err := engine.ReadExport(in)
			if err != nil {
				return importFailure(e, asJSON, ExitUsage, engine.CodeExportInvalid, err.Error())
			}
			s, err := open()
			if err != nil {
				code := engine.CodeStoreError
				var xe *exitError
				if errors.As(err, &xe) {
					if xe.code == ExitUsage {
						code = engine.CodeUsage
					}
					return importFailure(e, asJSON, xe.code, code, xe.msg)
				}
				return importFailure(e, asJSON, ExitFailed, code, err.Error())
			}
			defer s.Close()
			importer := decider(e)
			rep, err := engine.Import(context.Background(), s, recs, engine.ImportOptions{
				KeepDecisions: keepDecisions, Importer: importer, Now: time.Now()})
			exit := ExitOK
			if len(rep.Refused) > 0 {
				exit = ExitUsage
			}
			var runErr *engine.Error
			if err != nil {
				exit = ExitFailed
				runErr, _ = engine.AsError(err)
				if runErr == nil {
					runErr = &engine.Error{Code: engine.CodeStoreError, Message: err.Error()}
				}
			}
			if asJSON {
				out := struct {
					engine.ImportReport
					Error any `json:"error"`
				}{rep, nil}
				if runErr != nil {
					out.Error = map[string]string{"code": runErr.Code, "message": runErr.Message}
				}
				writeJSON(e.stdout, out)
			} else {
				for _, id := range rep.Imported {
					fmt.Fprintf(e.stdout, "imported run %s\n", id)
				}
				for _, rc := range rep.DecisionsDropped {
					fmt.Fprintf(e.stdout, "run %s: decisions dropped, waiting for approval again: %s\n", rc.RunID, strings.Join(rc.CallIDs, ", "))
				}
				for _, rc := range rep.DecisionsKept {
					fmt.Fprintf(e.stdout, "run %s: decisions kept as %s's: %s\n", rc.RunID, engine.ImportedBy(importer), strings.Join(rc.CallIDs, ", "))
				}
				for _, r := range rep.Refused {
					fmt.Fprintf(e.stderr, "nexa: %s\n", r.Message)
				}
				for _, id := range rep.LogsDropped {
					fmt.Fprintf(e.stderr, "nexa: run %s: this store keeps no logs; the run's logs were not imported\n", id)
				}
				if runErr != nil {
					fmt.Fprintf(e.stderr, "nexa: %s\n", runErr.Message)
				}
			}
			if exit == ExitOK {
				return nil
			}
			return exitWith(exit)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	cmd.Flags().BoolVar(&keepDecisions, "keep-decisions", false, "keep the file's decisions on calls not yet executed, recorded as yours (default: drop them)")
	return cmd
}

// importFailure ends an import that wrote nothing: with --json the result
// object with the error, else the message on standard error.
func importFailure(e *env, asJSON bool, exit int, code, msg string) error {
	if !asJSON {
		return &exitError{code: exit, msg: msg}
	}
	writeJSON(e.stdout, map[string]any{
		"imported": []string{}, "refused": []engine.ImportRefusal{},
		"decisions_dropped": []engine.RunCalls{}, "decisions_kept": []engine.RunCalls{},
		"error": map[string]string{"code": code, "message": msg},
	})
	return exitWith(exit)
}
