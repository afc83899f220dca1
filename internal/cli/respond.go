package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/nexa-run/nexa/internal/engine"
	"github.com/nexa-run/nexa/internal/resumecmd"
	"github.com/nexa-run/nexa/internal/session"
)

// respondSep joins the call id and the answer of one --respond in the
// flag's value: --respond takes two words (CALL_ID ANSWER), which the
// flag parser cannot, so pairRespondArgs joins them before it runs. A NUL
// never comes from a command line, so it cannot be part of either word.
const respondSep = "\x00"

// pairRespondArgs joins each --respond CALL_ID ANSWER of a command line
// into one flag value (CALL_ID NUL ANSWER), up to a "--" that ends the
// flags. A --respond without both words is left as it is, and the command
// refuses it (readResponse).
func pairRespondArgs(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return append(out, args[i:]...)
		case a == "--respond" && i+2 < len(args):
			out = append(out, a, args[i+1]+respondSep+args[i+2])
			i += 2
		case strings.HasPrefix(a, "--respond=") && i+1 < len(args):
			out = append(out, a+respondSep+args[i+1])
			i++
		default:
			out = append(out, a)
		}
	}
	return out
}

// maxResponseBytes bounds an answer read from a file, as nexa serve bounds
// a request body.
const maxResponseBytes = 1 << 20

// readResponse reads one --respond value (CALL_ID NUL ANSWER): the answer
// as given, or the content of @FILE (@- standard input).
func readResponse(e *env, v string) (engine.Response, error) {
	call, answer, ok := strings.Cut(v, respondSep)
	if !ok || call == "" || strings.HasPrefix(call, "-") {
		return engine.Response{}, fmt.Errorf("--respond takes a call id and its answer: --respond CALL_ID JSON|@FILE|done|decline (got %q)", strings.ReplaceAll(v, respondSep, " "))
	}
	b, err := readAnswer(e, "--respond "+call, answer)
	if err != nil {
		return engine.Response{}, err
	}
	return engine.Response{CallID: call, Answer: string(b)}, nil
}

// readAnswer reads an answer given as text or @FILE (@-: standard input),
// at most maxResponseBytes.
func readAnswer(e *env, what, v string) ([]byte, error) {
	if !strings.HasPrefix(v, "@") {
		return []byte(v), nil
	}
	name := v[1:]
	var r io.Reader
	if name == "-" {
		r = e.stdin
	} else {
		f, err := os.Open(name)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %v", what, v, err)
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, maxResponseBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s %s: %v", what, v, err)
	}
	if len(b) > maxResponseBytes {
		return nil, fmt.Errorf("%s %s is over %d bytes; an answer is at most 1 MiB", what, v, maxResponseBytes)
	}
	return b, nil
}

// newRunsRespondCmd is nexa runs respond: an answer to a call's input
// request recorded without continuing the run, as runs approve records a
// decision.
func newRunsRespondCmd(e *env, open storeOpener, hints hintFlagger) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "respond RUN_ID CALL_ID JSON|@FILE|done|decline|cancel",
		Short: "Answer a call's input request without resuming the run",
		Long: `Answer the input request of a call whose MCP server asked for input
(the run is waiting_input), without resuming the run.

The answer is the form's content as JSON (or @FILE, @- for standard input),
checked against the form's schema before anything is recorded; done once a
URL request was completed in a browser (nexa never opens it); or decline or
cancel. When the call asks for several things, the JSON is an object keyed
by request, each value a form's content or one of those words. The journal
keeps the answer, who gave it (NEXA_USER, else the account) and when. The
next resume sends the call again with it; a worker run continues at once
when nothing else waits for a person.`,
		Example: `  nexa runs respond run_01J… call_1 '{"name": "Ada"}'
  nexa runs respond run_01J… call_1 @answer.json
  nexa runs respond run_01J… call_2 done`,
		Args: cobra.ExactArgs(3),
		RunE: func(c *cobra.Command, args []string) error {
			b, err := readAnswer(e, "answer", args[2])
			if err != nil {
				return usageErrorf("%v", err)
			}
			s, err := open()
			if err != nil {
				return err
			}
			defer s.Close()
			if err := checkRunID(args[0]); err != nil {
				return err
			}
			// The answer is kept as the inbox keeps one: without the values
			// of the secrets this process knows (secret-named environment
			// variables, the store's password, NEXA_SECRETS).
			redact, err := session.ServeRedactor(sessionEnv(e), flagString(c, "store"))
			if err != nil {
				return usageErrorf("%v", err)
			}
			r := engine.Response{CallID: args[1], Answer: string(b), By: decider(e)}
			st, err := engine.Respond(context.Background(), s, args[0], 0, []engine.Response{r}, redact, testClock()())
			if err := runsWriteError(s, args[0], err); err != nil {
				return err
			}
			if asJSON {
				writeJSON(e.stdout, showView(st, hints(st), nil))
			} else {
				fmt.Fprintf(e.stdout, "call %s of run %s answered (revision %d)\n", args[1], args[0], st.Revision)
			}
			fmt.Fprintf(e.stderr, "continue with: %s\n", resumecmd.Base(st, "", hints(st)))
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the run as runs show --json does, after the answer")
	return cmd
}
