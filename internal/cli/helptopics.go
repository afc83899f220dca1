package cli

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/nexa-run/nexa/internal/lang"
)

// Help topics: `nexa help exit-codes`, `nexa help environment` and `nexa
// help json` answer the questions a script writer has at the terminal
// without a browser. They are cobra's "additional help topics" (commands
// that only have help text), so they are listed under "Additional help
// topics" of `nexa --help` and get a man page. The text is a short form of
// docs/reference/cli.md and docs/reference/json.md; a test keeps the names
// they list in step with those pages.

// helpTopics are the help-only commands added to the root.
func helpTopics() []*cobra.Command {
	return []*cobra.Command{
		{
			Use:   "exit-codes",
			Short: "What each exit code of nexa means",
			Long:  exitCodesHelp,
		},
		{
			Use:   "environment",
			Short: "The environment variables nexa reads",
			Long:  environmentHelp,
		},
		{
			Use:   "json",
			Short: "The JSON objects nexa prints, and their stable error codes",
			Long:  jsonHelp,
		},
	}
}

// The tables are indented by four spaces: Markdown's preformatted blocks,
// so that the man pages keep their columns.

const exitCodesHelp = `Exit codes of nexa (docs/reference/cli.md#exit-codes).

    0    completed; for other commands, success
    1    failed: provider error, sandbox unavailable, MCP error, store
         error, internal error; for other commands, an operational error
         (store unreadable, read-only, ...)
    2    usage or input error: flags, compile error, unknown run or call,
         a resume check, a refused decision, an MCP server that requires
         an authorization nexa cannot give; nothing was written
    3    waiting_approval or waiting_input: the run waits for a person's
         decision, or for an answer to an MCP server's input request
    4    unknown_outcome
    5    timed_out
    6    budget_exhausted
    7    checkpoint_conflict: another process holds or changed the run;
         nothing was written (nexa agent, runs approve, runs resolve)
    130  interrupted by a signal; resumable

Codes 3 to 6 and 130 come from nexa agent: the status of the run. A
terminal run given to --resume exits with its status's code. The other
commands exit 0, 1 or 2, and runs approve, respond and resolve also 7.`

const environmentHelp = `Environment variables nexa reads (docs/reference/cli.md#environment).

    NEXA_STORE            run store: a SQLite path or a postgres:// URL
    NEXA_PROVIDER         openai, anthropic or script:PATH
    NEXA_MODEL            the model, optionally prefix/name
    NEXA_BASE_URL         endpoint of an OpenAI-compatible server
    NEXA_API_KEY          the provider's key
    PREFIX_BASE_URL       endpoint and key for a model named prefix/name
    PREFIX_API_KEY
    OPENAI_BASE_URL       the providers' own endpoints and keys
    OPENAI_API_KEY
    ANTHROPIC_BASE_URL
    ANTHROPIC_API_KEY
    NEXA_PROVIDER_TIMEOUT bound on a whole provider reply (default 10m)
    NEXA_PROVIDER_IDLE_TIMEOUT
                          bound on a stream's silence (default 5m); both
                          take a duration, 0 or off
    NEXA_MCP_CONNECT_TIMEOUT
                          bound on starting an MCP server and listing its
                          tools (default 60s)
    NEXA_POLICY           policy file, as --policy
    NEXA_PRICES           prices file, as --prices
    NEXA_PYTHON           Python interpreter for tools (default python3)
    NEXA_BWRAP            bubblewrap binary for sandboxed tools (default
                          bwrap on PATH)
    NEXA_PATH             colon-separated include directories
    NEXA_SECRETS          an extra secrets file
    NEXA_USER             who command-line decisions and resolutions are
                          recorded as (default: the account)
    NEXA_SERVE_TOKEN      nexa serve's API token
    NEXA_NOTIFY_SECRET    nexa serve's webhook signing secret
    OTEL_EXPORTER_OTLP_ENDPOINT
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
                          send traces over OTLP/HTTP to this collector;
                          unset, traces are off (docs/observability.md)
    NO_COLOR              no colour and no spinner on stderr: plain
                          timestamped progress lines
    TERM                  dumb: as NO_COLOR

Tools also receive NEXA_RUN_ID, NEXA_CALL_ID and NEXA_IDEMPOTENCY_KEY.`

const jsonHelp = `The JSON nexa prints (docs/reference/json.md). Field names and error
codes are stable; messages are for people and may change.

nexa agent prints exactly one object on stdout, whatever happened: run_id
(null when no run was created), status, agent, revision, source_hash,
output, pending_calls, pending_inputs, unknown_calls, denied_calls,
usage, deadline, error, warnings and, while the run can continue, resume:
the exact commands that approve, deny, answer, resolve or resume it.
pending_inputs are the calls whose MCP server asked for input: per call,
its requests, each a form (its JSON Schema) or a URL and its domain.

nexa runs show --json prints the whole run; runs approve --json, runs
respond --json and runs resolve --json print it after the change. runs list --json prints
{"runs": [...], "next": CURSOR or null}.

Every --json command that fails prints {"error": {"code", "message"}} on
stdout, with the exit code of the failure. The error codes, with that
exit code:

    usage_error          2    bad arguments or flags, an unreadable FILE,
                              no model or key, a limit exceeded
    compile_error        2    the program has errors
    policy_error         2    the policy file is unreadable or invalid
    run_not_found        2    no such run
    no_store             2    a command that only reads found no store
    task_with_resume     2    a task was given with --resume
    agent_changed        2    a resume check failed: the agent, source,
    source_changed            policy, provider, budgets, tools or
    policy_changed            working directory differ from the run's
    provider_changed
    budgets_changed
    tools_changed
    workdir_changed
    not_waiting          2    a decision for a run not waiting for one
    not_pending          2    a decision for a call that is not pending,
                              an answer for one that waits for no input
    unknown_call         2    a decision for a call the run does not have
    not_started          2    a resolution for a call that is not started
    invalid_edit         2    edited arguments fail the checks
    invalid_response     2    an answer does not fit the input request (a
                              form's schema, done for a URL); nothing
                              was written
    tool_name_clash      2    two tools of an agent share a name
    export_invalid       2    runs import and export refusals
    run_exists
    export_too_large
    checkpoint_conflict  7    another process holds or changed the run
    deadline_exceeded    5    the run is timed_out
    budget_exhausted     6    the run is budget_exhausted
    unknown_outcome      4    the run stopped with an unknown outcome
    interrupted          130  stopped by a signal
    provider_error       1    a model request failed for good
    sandbox_unavailable  1    a sandboxed tool has no working backend
    mcp_error            1    an MCP server could not be started or listed
    mcp_auth_required    2    an HTTP MCP server wants an authorization nexa
                              cannot give in a run (no or refused client
                              credentials); nothing was written
    output_invalid       1    the answer does not match the protocol
    not_found            -    nexa serve's API only: HTTP 404 and 405
    method_not_allowed
    store_error          1    the store cannot be read or written
    internal_error       1    a bug; the run is as last saved`

// Command is the whole nexa command tree as a user sees it, with the
// completion command and the help topics, for tools that document it (the
// man pages of `make man`). Running it is what Main is for.
func Command() *cobra.Command {
	e := &env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard, getenv: os.Getenv, environ: os.Environ}
	root := newRootCmd(e)
	root.InitDefaultCompletionCmd()
	return root
}

// newHelpCmd is `nexa help [COMMAND|TOPIC]`. Cobra's own help command
// answers a name it does not know with the root's help and exit 0; this
// one refuses it as a usage error (exit 2) with the nearest names, so a
// script or a person with a typo is told so.
func newHelpCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "help [command|topic]",
		Short: "Help about any command or topic",
		Long:  "Help prints the help of any command or topic: nexa help runs approve, nexa help exit-codes.",
		ValidArgsFunction: func(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			parent, _, err := c.Root().Find(args)
			if err != nil || parent == nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var names []string
			for _, sub := range parent.Commands() {
				if !sub.Hidden && sub.Name() != "help" && strings.HasPrefix(sub.Name(), toComplete) {
					names = append(names, sub.Name()+"\t"+sub.Short)
				}
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(c *cobra.Command, args []string) error {
			target, rest, err := c.Root().Find(args)
			if err != nil || target == nil || len(rest) > 0 {
				msg := fmt.Sprintf("unknown help topic %q", strings.Join(args, " "))
				if target != nil && len(rest) > 0 {
					var names []string
					for _, sub := range target.Commands() {
						if !sub.Hidden {
							names = append(names, sub.Name())
						}
					}
					if near := lang.Closest(rest[0], names); near != "" {
						msg += "; did you mean " + near + "?"
					}
				}
				return usageErrorf("%s (see 'nexa help')", msg)
			}
			target.InitDefaultHelpFlag()
			target.InitDefaultVersionFlag()
			return target.Help()
		},
	}
}
