package cli

import "github.com/spf13/cobra"

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

const exitCodesHelp = `Exit codes of nexa (docs/reference/cli.md#exit-codes).

  code  nexa agent                            other commands
  0     completed                             success
  1     failed: provider error, sandbox       operational error (store
        unavailable, MCP error, store error,  unreadable, read-only, ...)
        internal error
  2     usage or input error: flags, compile  usage or input error
        error, unknown run or call, a resume
        check, a refused decision; nothing
        was written
  3     waiting_approval                      -
  4     unknown_outcome                       -
  5     timed_out                             -
  6     budget_exhausted                      -
  7     checkpoint_conflict: another process  the same, for runs approve and
        holds or changed the run; nothing     runs resolve
        was written
  130   interrupted by a signal; resumable    -

A terminal run given to --resume exits with its status's code. nexa runs,
validate and inspect use 0, 1, 2 (and 7 for approve and resolve).`

const environmentHelp = `Environment variables nexa reads (docs/reference/cli.md#environment).

  NEXA_STORE                  run store: a SQLite path or a postgres:// URL
  NEXA_PROVIDER               openai, anthropic or script:PATH
  NEXA_MODEL, NEXA_BASE_URL,  model, endpoint and key of the provider
  NEXA_API_KEY
  PREFIX_BASE_URL,            endpoint and key for a model named
  PREFIX_API_KEY              prefix/name, resolved the same way
  OPENAI_BASE_URL, OPENAI_API_KEY, ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY
                              the providers' own endpoints and keys
  NEXA_PROVIDER_TIMEOUT       bound on a whole provider reply (default 10m)
  NEXA_PROVIDER_IDLE_TIMEOUT  bound on a stream's silence (default 5m);
                              both take a duration, 0 or off
  NEXA_MCP_CONNECT_TIMEOUT    bound on starting an MCP server and listing
                              its tools (default 60s)
  NEXA_POLICY                 policy file, as --policy
  NEXA_PYTHON                 Python interpreter for tools (default python3)
  NEXA_BWRAP                  bubblewrap binary for sandboxed tools
                              (default bwrap on PATH)
  NEXA_PATH                   colon-separated include directories
  NEXA_SECRETS                an extra secrets file
  NEXA_USER                   who command-line decisions and resolutions are
                              recorded as (default: the account)
  NEXA_SERVE_TOKEN            nexa serve's API token
  NEXA_NOTIFY_SECRET          nexa serve's webhook signing secret
  NO_COLOR                    no colour and no spinner on stderr: plain
                              timestamped progress lines
  TERM                        dumb: as NO_COLOR

Tools also receive NEXA_RUN_ID, NEXA_CALL_ID and NEXA_IDEMPOTENCY_KEY.`

const jsonHelp = `The JSON nexa prints (docs/reference/json.md). Field names and error codes
are stable; messages are for people and may change.

nexa agent prints exactly one object on stdout, whatever happened: run_id
(null when no run was created), status, agent, revision, source_hash,
output, pending_calls, unknown_calls, denied_calls, usage, deadline, error,
warnings and, while the run can continue, resume: the exact commands that
approve, deny, resolve or resume it.

nexa runs show --json prints the whole run; runs approve --json and runs
resolve --json print it after the change. runs list --json prints
{"runs": [...], "next": CURSOR or null}.

Every --json command that fails prints {"error": {"code", "message"}} on
stdout, with the exit code of the failure.

Error codes (exit code in brackets):
  usage_error [2]          bad arguments or flags, unreadable FILE, no model
                           or key, a limit exceeded
  compile_error [2]        the program has errors
  policy_error [2]         the policy file cannot be read or is invalid
  run_not_found [2]        no such run
  no_store [2]             a command that only reads found no store
  task_with_resume [2]     a task was given with --resume
  agent_changed, source_changed, policy_changed, provider_changed,
  budgets_changed, tools_changed, workdir_changed [2]
                           a resume check failed
  not_waiting [2]          a decision for a run not waiting for approval
  not_pending [2]          a decision for a call that is not pending
  unknown_call [2]         a decision for a call the run does not have
  not_started [2]          a resolution for a call that is not started
  invalid_edit [2]         edited arguments fail the checks
  tool_name_clash [2]      two tools of an agent share a name
  export_invalid, run_exists, export_too_large [2]
                           runs import and export refusals
  checkpoint_conflict [7]  another process holds or changed the run
  deadline_exceeded [5]    the run is timed_out
  budget_exhausted [6]     the run is budget_exhausted
  unknown_outcome [4]      the run stopped with an unknown outcome
  interrupted [130]        stopped by a signal
  provider_error [1]       a model request failed for good
  sandbox_unavailable [1]  a sandboxed tool has no working backend
  mcp_error [1]            an MCP server could not be started or listed
  output_invalid [1]       the final answer does not match the protocol
  not_found, method_not_allowed
                           nexa serve's API only: HTTP 404 and 405
  store_error [1]          the store cannot be read or written
  internal_error [1]       a bug; the run is as last saved`
