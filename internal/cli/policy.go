package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/nexa-run/nexa/internal/policy"
)

// maxExplainArgs bounds ARGS_JSON read from a file or standard input.
const maxExplainArgs = 1 << 20

func newPolicyCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Check a policy file and explain which rule decides a tool call",
		Long: `A policy is a TOML file of rules that allow, deny or ask a person about tool
calls, named with --policy or NEXA_POLICY (see docs/policy.md).

  nexa policy check FILE                    validate it
  nexa policy explain FILE TOOL ARGS_JSON   which rule decides a call, and why`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return c.Help() },
	}
	cmd.AddCommand(newPolicyCheckCmd(e), newPolicyExplainCmd(e))
	return cmd
}

func newPolicyCheckCmd(e *env) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "check FILE",
		Short: "Validate a policy file and report every error",
		Long: `Read FILE as a policy and report every error with file:line: an unknown key
anywhere, a missing or duplicate rule name, an unknown decision, a deny rule
without a reason, a bad glob, regular expression or JSON Pointer, a range
whose min is above its max, a file over 1 MiB.

Exit status: 0 when the policy is valid, 2 when it is not (or cannot be read).`,
		Example: `  nexa policy check policy.toml
  nexa policy check --json policy.toml | jq .hash`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			p, err := policy.Load(args[0])
			if err != nil {
				return policyFailure(e, asJSON, err)
			}
			if asJSON {
				writeJSON(e.stdout, map[string]any{
					"file": args[0], "hash": p.Hash(), "rules": p.Rules(), "allow_critical": p.AllowCritical(),
				})
				return nil
			}
			fmt.Fprintf(e.stdout, "%s: %s, ok\n", args[0], diagPlural(p.Rules(), "rule"))
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"file", "hash", "rules", "allow_critical"} as JSON`)
	return cmd
}

// maxPolicyErrors is how many errors of one policy file are shown: a
// hostile file cannot flood the terminal or a CI log.
const maxPolicyErrors = 50

// policyFailure reports a policy that cannot be used: every error on
// standard error, and with --json an error object on standard output.
func policyFailure(e *env, asJSON bool, err error) error {
	var es policy.Errors
	if !errors.As(err, &es) {
		es = policy.Errors{{Msg: err.Error()}}
	}
	more := 0
	if len(es) > maxPolicyErrors {
		es, more = es[:maxPolicyErrors], len(es)-maxPolicyErrors
	}
	for _, pe := range es {
		fmt.Fprintln(e.stderr, pe.Error())
	}
	if more > 0 {
		fmt.Fprintf(e.stderr, "… and %d more errors\n", more)
	}
	if asJSON {
		list := make([]map[string]any, len(es))
		for i, pe := range es {
			list[i] = map[string]any{"file": pe.File, "line": pe.Line, "message": pe.Msg}
		}
		writeJSON(e.stdout, map[string]any{"error": map[string]any{
			"code": "policy_error", "message": es.Error(), "errors": list,
		}})
	}
	return exitWith(ExitUsage)
}

// usageFailure is an input error of explain: a message, and with --json
// the error object too.
func usageFailure(e *env, asJSON bool, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if asJSON {
		writeJSON(e.stdout, map[string]any{"error": map[string]any{"code": "usage_error", "message": msg}})
	}
	return &exitError{code: ExitUsage, msg: msg, jsonDone: true}
}

func newPolicyExplainCmd(e *env) *cobra.Command {
	var (
		asJSON bool
		risk   string
	)
	cmd := &cobra.Command{
		Use:   "explain FILE TOOL ARGS_JSON",
		Short: "Say which rule of a policy decides a tool call, and why",
		Long: `Decide one tool call by the policy in FILE, as a run would, and say which
rule decides it (its name, decision and reason, and the conditions that
matched), or that no rule matches and the tool's own setting applies.

ARGS_JSON is the call's arguments, a JSON object: written out, @PATH to read
a file, or - to read standard input (at most 1 MiB either way).

--risk is the tool's risk_level (default low, as for a tool that sets none):
rules that name a risk level match on it, and an allow rule is capped to ask
for a critical tool unless the policy sets allow_critical = true.

Exit status: 0 when the call was explained, 2 when the policy is invalid or
ARGS_JSON is not one JSON object.`,
		Example: `  nexa policy explain policy.toml deploy '{"env": "staging"}'
  nexa policy explain policy.toml drop_table '{}' --risk critical
  echo '{"env": "production"}' | nexa policy explain --json policy.toml deploy -`,
		Args: cobra.ExactArgs(3),
		RunE: func(c *cobra.Command, args []string) error {
			file, tool, rawArgs := args[0], args[1], args[2]
			if !slices.Contains(policy.Risks(), risk) {
				return usageFailure(e, asJSON, "--risk must be one of %s, not %q", strings.Join(policy.Risks(), ", "), risk)
			}
			p, err := policy.Load(file)
			if err != nil {
				return policyFailure(e, asJSON, err)
			}
			data, err := readExplainArgs(e, rawArgs)
			if err != nil {
				return usageFailure(e, asJSON, "%v", err)
			}
			if err := policy.CheckArgs(data); err != nil {
				return usageFailure(e, asJSON, "ARGS_JSON: %v", err)
			}
			v := p.Decide(policy.Call{Tool: tool, Risk: risk, Args: data})
			if asJSON {
				out := map[string]any{
					"file": file, "hash": p.Hash(), "tool": tool, "risk": risk,
					"matched": v.Decision != "", "rule": nil, "decision": nil, "reason": nil,
					"capped": v.Capped, "why": v.Why,
				}
				if v.Decision != "" {
					out["rule"], out["decision"], out["reason"] = v.Rule, string(v.Decision), v.Reason
				}
				writeJSON(e.stdout, out)
				return nil
			}
			if v.Decision == "" {
				fmt.Fprintf(e.stdout, "no rule matches: %s keeps its own setting (its requires_approval and risk_level)\n", tool)
				return nil
			}
			fmt.Fprintf(e.stdout, "rule %s decides: %s\n", v.Rule, v.Decision)
			if v.Capped {
				fmt.Fprintf(e.stdout, "capped: the rule allows, but %s is critical and the policy does not set allow_critical = true, so a person decides\n", tool)
			}
			if v.Reason != "" {
				fmt.Fprintf(e.stdout, "reason: %s\n", v.Reason)
			}
			fmt.Fprintf(e.stdout, "why: %s\n", v.Why)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"matched", "rule", "decision", "reason", "capped", "why", ...} as JSON`)
	cmd.Flags().StringVar(&risk, "risk", "low", "the tool's risk_level: low, medium, high or critical")
	return cmd
}

// readExplainArgs reads ARGS_JSON: the text itself, @PATH or - (stdin),
// at most maxExplainArgs bytes.
func readExplainArgs(e *env, arg string) ([]byte, error) {
	var (
		r    io.Reader
		from string
	)
	switch {
	case arg == "-":
		r, from = e.stdin, "standard input"
	case strings.HasPrefix(arg, "@"):
		f, err := os.Open(arg[1:])
		if err != nil {
			var pe *os.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return nil, fmt.Errorf("cannot read ARGS_JSON file %s: %v", arg[1:], err)
		}
		defer f.Close()
		r, from = f, arg[1:]
	default:
		return []byte(arg), nil
	}
	data, err := io.ReadAll(io.LimitReader(r, maxExplainArgs+1))
	if err != nil {
		return nil, fmt.Errorf("cannot read ARGS_JSON from %s: %v", from, err)
	}
	if len(data) > maxExplainArgs {
		return nil, fmt.Errorf("ARGS_JSON from %s is larger than %d bytes (1 MiB)", from, maxExplainArgs)
	}
	return data, nil
}
