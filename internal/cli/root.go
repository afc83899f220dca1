// Package cli wires the compiler, runtime and store into the nexa command:
// flags, environment, JSON and terminal output, exit codes.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nexa-run/nexa/internal/engine"
	"github.com/nexa-run/nexa/internal/telemetry"
)

// Version is set at build time with -ldflags "-X ...cli.Version=v1.2.3".
var Version = "dev"

// Commit is set at build time; "unknown" when built without it.
var Commit = "unknown"

// LanguagePath is the language path this binary implements.
const LanguagePath = "2.4"

// docs/reference/cli.md#exit-codes.
const (
	ExitOK              = 0
	ExitFailed          = 1
	ExitUsage           = 2
	ExitWaitingApproval = 3
	ExitUnknownOutcome  = 4
	ExitTimedOut        = 5
	ExitBudgetExhausted = 6
	ExitConflict        = 7
	ExitInterrupted     = 130
)

// exitError carries an exit code out of a command; its message (if any) has
// already been printed or is printed by Main.
type exitError struct {
	code    int
	msg     string
	printed bool
	// errCode is the stable error code of the JSON error object
	// (docs/reference/json.md#error-codes); empty means the default
	// for code (see jsonCode).
	errCode string
	// jsonDone: the command already printed its JSON error object.
	jsonDone bool
}

// jsonCode is the error code a --json command prints for e.
func (e *exitError) jsonCode() string {
	if e.errCode != "" {
		return e.errCode
	}
	switch e.code {
	case ExitUsage:
		return engine.CodeUsage
	case ExitConflict:
		return engine.CodeCheckpointConflict
	}
	return engine.CodeInternal
}

func (e *exitError) Error() string { return e.msg }

// usageErrorf is a usage or input error (exit 2).
func usageErrorf(format string, args ...any) error {
	return &exitError{code: ExitUsage, msg: fmt.Sprintf(format, args...)}
}

// exitWith ends the command with code after the command printed everything.
func exitWith(code int) error { return &exitError{code: code, printed: true} }

// env is the process environment as the commands see it; tests replace it.
type env struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string
	// environ lists the whole environment, for redaction of every
	// secret-named variable; nil means none.
	environ func() []string
	// flush, when set, forwards what stdout and stderr wrappers still
	// hold (see redactedEnv).
	flush func()
	// tracing exports the spans of the runs this process drives when
	// the OTEL_EXPORTER_OTLP_* variables ask for it; off otherwise.
	tracing *telemetry.Tracing
}

// closeOutput flushes wrapped stdout and stderr.
func (e *env) closeOutput() {
	if e.flush != nil {
		e.flush()
	}
}

// Main runs the nexa command line and returns the process exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) (code int) {
	defer func() {
		// A bug must not put a Go stack trace in front of a user; the
		// store's transactions leave every run as it was last saved.
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "nexa: internal error: %v\nThis is a bug in nexa; runs in the store are as they were last saved.\n", r)
			code = ExitFailed
		}
	}()
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr, getenv: os.Getenv, environ: os.Environ}
	e.tracing = startTracing(e)
	// The last spans are sent before the process exits, waiting at most
	// a few seconds for a collector that does not answer.
	defer func() { _ = e.tracing.ShutdownWithin(5 * time.Second) }()
	root := newRootCmd(e)
	args = pairRespondArgs(args)
	root.SetArgs(args)
	// The completion command is added by cobra when it runs; add it now so
	// that its unknown subcommands are refused like every other parent's.
	root.InitDefaultCompletionCmd(args...)
	refuseUnknownSubcommands(root)
	cmd, err := root.ExecuteC()
	if err == nil {
		return ExitOK
	}
	var xe *exitError
	if !errors.As(err, &xe) {
		// Cobra's own flag and argument errors are usage errors.
		xe = &exitError{code: ExitUsage, msg: err.Error()}
	}
	if !xe.printed && xe.msg != "" {
		fmt.Fprintf(stderr, "nexa: %s\n", xe.msg)
	}
	if !xe.printed && !xe.jsonDone && wantsJSON(cmd, args) {
		// A program reading --json output gets an object on failure
		// too, not an empty stdout (docs/reference/json.md#errors).
		writeJSON(stdout, jsonErrorObject{Error: jsonError{Code: xe.jsonCode(), Message: xe.msg}})
	}
	return xe.code
}

// startTracing starts the process's tracing (docs/observability.md): off,
// at no cost, unless an OTLP endpoint is configured. A configuration the
// exporter refuses turns tracing off with a warning; it never stops a run.
func startTracing(e *env) *telemetry.Tracing {
	tr, err := telemetry.StartTracing(context.Background(), e.getenv, Version)
	if err != nil {
		fmt.Fprintf(e.stderr, "nexa: warning: traces are off: %v\n", err)
		return nil
	}
	return tr
}

// jsonErrorObject is what a --json command prints on stdout when it fails.
type jsonErrorObject struct {
	Error jsonError `json:"error"`
}

// jsonError is the code and message of a failed command.
type jsonError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// wantsJSON reports whether the command that failed was asked for --json.
// When the flags could not be parsed the flag is looked for among the
// arguments, so that a mistyped flag still answers a JSON reader in JSON.
func wantsJSON(cmd *cobra.Command, args []string) bool {
	if cmd == nil {
		return false
	}
	f := cmd.Flags().Lookup("json")
	if f == nil {
		return false
	}
	if f.Changed {
		return f.Value.String() == "true"
	}
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "--json" || a == "--json=true" {
			return true
		}
	}
	return false
}

func newRootCmd(e *env) *cobra.Command {
	root := &cobra.Command{
		Use:   "nexa",
		Short: "Run Nexa agents durably: approvals, resume, auditable tool journals",
		Long: `nexa compiles .nx programs and runs their agents durably.

A run survives crashes, pauses for approval of risky tool calls, resumes from
any later process, never executes a tool twice, and reports which calls have
unknown outcomes.`,
		Version:       versionString(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	root.SetVersionTemplate("nexa {{.Version}}\n")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageErrorf("%v (see '%s --help')", err, c.CommandPath())
	})
	for _, add := range commands {
		root.AddCommand(add(e))
	}
	root.AddCommand(newVersionCmd(e))
	root.AddCommand(helpTopics()...)
	root.SetHelpCommand(newHelpCmd())
	addCompletions(e, root)
	return root
}

// refuseUnknownSubcommands makes every command that has subcommands refuse
// an argument that names none of them (exit 2, with the nearest names), where
// cobra would print the help and exit 0 — a script with a typo must not look
// as if it succeeded. With no argument a parent prints its help.
func refuseUnknownSubcommands(c *cobra.Command) {
	if c.HasSubCommands() {
		c.SuggestionsMinimumDistance = 2
		c.Args = cobra.ArbitraryArgs
		c.Run = nil
		c.RunE = func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return c.Help()
			}
			return unknownSubcommand(c, args[0])
		}
	}
	for _, sub := range c.Commands() {
		refuseUnknownSubcommands(sub)
	}
}

// unknownSubcommand is the usage error for a name that is no subcommand of
// c, suggesting the close ones.
func unknownSubcommand(c *cobra.Command, name string) error {
	msg := fmt.Sprintf("unknown command %q for %q", name, c.CommandPath())
	if sug := c.SuggestionsFor(name); len(sug) > 0 {
		msg += "; did you mean " + strings.Join(sug, " or ") + "?"
	}
	return usageErrorf("%s (see '%s --help')", msg, c.CommandPath())
}

// commands are the subcommands, each built by its file of this package.
// They are listed here, not registered by package initialisation, so that
// nothing of the command line is built before main runs.
var commands = []func(*env) *cobra.Command{
	newAgentCmd, newInspectCmd, newPolicyCmd, newRunsCmd, newServeCmd, newValidateCmd, newWorkerCmd,
}

func versionString() string {
	v, c := buildStamp()
	return fmt.Sprintf("%s (language %s, commit %s)", v, LanguagePath, c)
}

// buildStamp is the version and commit of this binary. The Makefile's
// LDFLAGS set both; a plain `go install` sets neither, so the values Go
// records in the binary stand in: the module version of
// `go install …@v1.2.3` and the VCS revision of a build in a checkout
// (a "-dirty" suffix when the tree had changes). A binary nobody stamped
// says "dev" and "unknown" rather than guess.
func buildStamp() (version, commit string) {
	info, _ := debug.ReadBuildInfo()
	return stampFrom(Version, Commit, info)
}

// stampFrom fills a version or commit the linker left at its default from
// the build info (nil when the binary has none).
func stampFrom(version, commit string, info *debug.BuildInfo) (string, string) {
	if info == nil {
		return version, commit
	}
	if version == "dev" && info.Main.Version != "" && info.Main.Version != "(devel)" {
		version = info.Main.Version
	}
	if commit == "unknown" {
		var rev string
		dirty := false
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if rev != "" {
			if len(rev) > 12 {
				rev = rev[:12]
			}
			if dirty {
				rev += "-dirty"
			}
			commit = rev
		}
	}
	return version, commit
}

// versionJSON is what `nexa version --json` prints: what a bug report or a
// deployment check needs to know about the binary, field by field, so no
// one has to parse the human line.
type versionJSON struct {
	Version  string `json:"version"`
	Commit   string `json:"commit"`
	Language string `json:"language"`
	Go       string `json:"go"`
	OS       string `json:"os"`
	Arch     string `json:"arch"`
}

func newVersionCmd(e *env) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version, the language path and the commit",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			v, commit := buildStamp()
			if asJSON {
				writeJSON(e.stdout, versionJSON{
					Version:  v,
					Commit:   commit,
					Language: LanguagePath,
					Go:       runtime.Version(),
					OS:       runtime.GOOS,
					Arch:     runtime.GOARCH,
				})
				return nil
			}
			fmt.Fprintf(e.stdout, "nexa %s\n", versionString())
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"version", "commit", "language", "go", "os", "arch"} as JSON`)
	return cmd
}
