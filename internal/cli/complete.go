package cli

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nexa-run/nexa/internal/compile"
	"github.com/nexa-run/nexa/internal/engine"
	"github.com/nexa-run/nexa/internal/lang"
	"github.com/nexa-run/nexa/internal/session"
	"github.com/nexa-run/nexa/internal/state"
)

// Dynamic shell completion (bash, zsh, fish through `nexa completion`).
// Run ids and call ids are 30-character ULIDs nobody types by hand, so the
// shell offers them from the store, each with what it is as description.
//
// A completion runs on every TAB: it never creates a store (it opens only
// one that exists), reads little (a page of the newest runs, a run's
// header and its open calls), gives up after completionTimeout, and prints
// nothing of its own, so a failure simply offers nothing.

// completionRunLimit is how many of the newest runs a completion offers:
// the ones a person is working on, and few enough to read in milliseconds
// from a large store.
const completionRunLimit = 100

// completionTimeout bounds a completion's use of the store: an unreachable
// PostgreSQL server must not freeze the shell (opening one may otherwise
// take up to a minute).
const completionTimeout = 3 * time.Second

// statusHelp describes each run status for `--status <TAB>`, in the order
// of a run's life.
var statusHelp = []string{
	string(state.StatusQueued) + "\tsubmitted for a worker, not started",
	string(state.StatusRunning) + "\ta process is driving it",
	string(state.StatusWaitingApproval) + "\ta tool call waits for a decision",
	string(state.StatusWaitingInput) + "\ta tool call waits for an answer to its MCP server's input request",
	string(state.StatusUnknownOutcome) + "\ta call started but its result was never saved",
	string(state.StatusInterrupted) + "\tstopped by a signal; resumable",
	string(state.StatusFailed) + "\tstopped by an error",
	string(state.StatusCompleted) + "\tfinished with an answer",
	string(state.StatusTimedOut) + "\tpassed its deadline",
	string(state.StatusBudgetExhausted) + "\tused up a budget",
}

// providerHelp describes each --provider value; script: is completed
// further with a path.
var providerHelp = []string{
	"openai\tOpenAI or an OpenAI-compatible server (--base-url)",
	"anthropic\tAnthropic's Messages API",
	"script:\ta scripted model read from a JSON file: script:PATH",
}

// addCompletions hooks the dynamic completions onto the commands of root
// that exist, by name, so that the commands' own files need not know about
// completion. A hook a command already has is kept.
func addCompletions(e *env, root *cobra.Command) {
	runIDs := func(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		return withPrefix(completeRunIDs(e, c, args), toComplete), cobra.ShellCompDirectiveNoFileComp
	}
	oneRun := func(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return runIDs(c, args, toComplete)
	}
	// runThenCall completes RUN_ID, then the calls of that run open to
	// the command (pending ones to approve, started ones to resolve).
	runThenCall := func(open func(*state.JournalEntry) bool) cobra.CompletionFunc {
		return func(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			switch len(args) {
			case 0:
				return runIDs(c, args, toComplete)
			case 1:
				return withPrefix(completeCallIDs(e, c, args[0], open, nil), toComplete), cobra.ShellCompDirectiveNoFileComp
			}
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
	}
	setArgs := func(c *cobra.Command, f cobra.CompletionFunc) {
		if c != nil && c.ValidArgsFunction == nil {
			c.ValidArgsFunction = f
		}
	}
	setArgs(findCommand(root, "runs", "show"), oneRun)
	setArgs(findCommand(root, "runs", "watch"), oneRun)
	setArgs(findCommand(root, "runs", "export"), runIDs)
	setArgs(findCommand(root, "runs", "approve"), runThenCall(pendingCall))
	setArgs(findCommand(root, "runs", "resolve"), runThenCall(startedCall))
	setArgs(findCommand(root, "runs", "respond"), runThenCall(awaitingInput))

	if agent := findCommand(root, "agent"); agent != nil {
		setArgs(agent, func(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			switch len(args) {
			case 0:
				return []string{"nx"}, cobra.ShellCompDirectiveFilterFileExt
			case 1:
				return withPrefix(completeAgents(e, args[0]), toComplete), cobra.ShellCompDirectiveNoFileComp
			}
			return nil, cobra.ShellCompDirectiveNoFileComp
		})
		setFlag(agent, "resume", func(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			offered := append([]string{completionItem("last", "the newest run waiting for a person or with unknown outcomes")}, completeRunIDs(e, c, args)...)
			return withPrefix(offered, toComplete), cobra.ShellCompDirectiveNoFileComp
		})
		// resumed is the run --resume names ("last" looked up), or "".
		resumed := func(c *cobra.Command) string {
			if resume := flagString(c, "resume"); resume != "last" {
				return resume
			}
			return completeLastRun(e, c)
		}
		calls := func(c *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			resume := resumed(c)
			if resume == "" {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			// A call already named by --approve or --deny is not
			// offered again.
			var given []string
			for _, name := range []string{"approve", "deny"} {
				if v, err := c.Flags().GetStringArray(name); err == nil {
					given = append(given, v...)
				}
			}
			return withPrefix(completeCallIDs(e, c, resume, pendingCall, given), toComplete), cobra.ShellCompDirectiveNoFileComp
		}
		setFlag(agent, "approve", calls)
		setFlag(agent, "deny", calls)
		setFlag(agent, "respond", func(c *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			resume := resumed(c)
			if resume == "" {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return withPrefix(completeCallIDs(e, c, resume, awaitingInput, nil), toComplete), cobra.ShellCompDirectiveNoFileComp
		})
	}

	// Every --status and --provider flag, wherever it is, takes the same
	// values.
	walkCommands(root, func(c *cobra.Command) {
		if c.LocalNonPersistentFlags().Lookup("status") != nil {
			setFlag(c, "status", fixedValues(statusHelp))
		}
		if c.LocalNonPersistentFlags().Lookup("provider") != nil {
			setFlag(c, "provider", completeProvider)
		}
	})
}

// findCommand is the command at path under root, or nil.
func findCommand(root *cobra.Command, path ...string) *cobra.Command {
	c := root
	for _, name := range path {
		var next *cobra.Command
		for _, sub := range c.Commands() {
			if sub.Name() == name {
				next = sub
				break
			}
		}
		if next == nil {
			return nil
		}
		c = next
	}
	return c
}

// walkCommands calls fn on c and every command under it.
func walkCommands(c *cobra.Command, fn func(*cobra.Command)) {
	fn(c)
	for _, sub := range c.Commands() {
		walkCommands(sub, fn)
	}
}

// setFlag registers f for the flag name of c, unless the flag is missing or
// already has a completion.
func setFlag(c *cobra.Command, name string, f cobra.CompletionFunc) {
	if c.Flags().Lookup(name) == nil {
		return
	}
	if _, ok := c.GetFlagCompletionFunc(name); ok {
		return
	}
	_ = c.RegisterFlagCompletionFunc(name, f) // fails only for a missing or registered flag, checked above
}

// flagString is the value of flag name of c (its own or inherited), or "".
func flagString(c *cobra.Command, name string) string {
	if f := c.Flag(name); f != nil {
		return f.Value.String()
	}
	return ""
}

// fixedValues completes one of a fixed list of "value\tdescription".
func fixedValues(values []string) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		return withPrefix(values, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// completeProvider offers the provider kinds, and after "script:" the
// files and directories of the path being typed.
func completeProvider(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	path, ok := strings.CutPrefix(toComplete, "script:")
	if !ok {
		return withPrefix(providerHelp, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
	matches, err := filepath.Glob(globEscape(path) + "*")
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, m := range matches {
		if fi, err := os.Stat(m); err == nil && fi.IsDir() {
			m += string(filepath.Separator)
		}
		out = append(out, "script:"+m)
	}
	// A directory is completed further, so no space after a candidate.
	return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
}

// globEscape quotes the pattern characters of a typed path.
func globEscape(p string) string {
	var b strings.Builder
	for _, r := range p {
		if strings.ContainsRune(`*?[\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// withCompletionStore returns what fn finds in the existing store c names
// (--store, else NEXA_STORE, else the default), within completionTimeout.
// A missing or unreadable store, or one too slow to answer, is no
// completion.
func withCompletionStore(e *env, c *cobra.Command, fn func(context.Context, session.Store) []string) []string {
	wd, err := os.Getwd()
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), completionTimeout)
	defer cancel()
	found := make(chan []string, 1)
	go func() {
		s, err := session.OpenStore(sessionEnv(e), flagString(c, "store"), wd, false)
		if err != nil {
			found <- nil
			return
		}
		defer s.Close()
		found <- fn(ctx, s)
	}()
	select {
	case out := <-found:
		return out
	case <-ctx.Done():
		// The goroutine is left behind: the completion process exits
		// right after printing nothing.
		return nil
	}
}

// completeRunIDs offers the newest runs of the store, newest first, each
// described by its status and agent; ids already among args are left out
// (runs export takes several).
func completeRunIDs(e *env, c *cobra.Command, args []string) []string {
	return withCompletionStore(e, c, func(ctx context.Context, s session.Store) []string {
		runs, err := s.List(ctx, state.Filter{Limit: completionRunLimit})
		if err != nil {
			return nil
		}
		out := make([]string, 0, len(runs))
		for _, r := range runs {
			if slices.Contains(args, r.ID) {
				continue
			}
			out = append(out, completionItem(r.ID, string(r.Status)+", "+r.Agent))
		}
		return out
	})
}

// completeLastRun is the run `--resume last` names, or "" when there is
// none (or no store), so that its calls can be completed too.
func completeLastRun(e *env, c *cobra.Command) string {
	found := withCompletionStore(e, c, func(ctx context.Context, s session.Store) []string {
		if id, err := lastWaitingRun(ctx, s); err == nil {
			return []string{id}
		}
		return nil
	})
	if len(found) == 0 {
		return ""
	}
	return found[0]
}

// pendingCall is a call waiting for a decision (--approve, --deny,
// runs approve); one whose wait has run out is not offered.
func pendingCall(j *state.JournalEntry) bool {
	return j.Pending() && !j.Expired(time.Now())
}

// awaitingInput is a call whose MCP server waits for a person's answer
// (runs respond, --respond).
func awaitingInput(j *state.JournalEntry) bool { return j.AwaitingInput() }

// startedCall is a call whose outcome is unknown (runs resolve).
func startedCall(j *state.JournalEntry) bool { return j.Stage == state.StageStarted }

// completeCallIDs offers the calls of run runID that open accepts, in the
// journal's order, each described by its tool (and risk level); ids in
// given are left out. Only the run's header and its open calls are read.
func completeCallIDs(e *env, c *cobra.Command, runID string, open func(*state.JournalEntry) bool, given []string) []string {
	if !engine.ValidRunID(runID) {
		return nil
	}
	return withCompletionStore(e, c, func(ctx context.Context, s session.Store) []string {
		// A tail of one keeps every entry that is not completed.
		run, _, err := engine.ShowTail(ctx, s, runID, 1)
		if err != nil {
			return nil
		}
		var out []string
		for i := range run.Journal {
			j := &run.Journal[i]
			if !open(j) || slices.Contains(given, j.CallID) {
				continue
			}
			desc := j.Tool
			if j.Risk != "" {
				desc += ", risk " + j.Risk
			}
			out = append(out, completionItem(j.CallID, desc))
		}
		return out
	})
}

// completeAgents offers the agents FILE declares, as `nexa agent FILE`
// would find them. A file that does not compile still offers the agents
// its source declares, so a program being edited can be completed.
func completeAgents(e *env, file string) []string {
	if prog, diags := compile.Compile(file, compile.Options{NexaPath: e.getenv("NEXA_PATH")}); prog != nil && !diags.HasErrors() {
		out := make([]string, 0, len(prog.Agents))
		for _, a := range prog.Agents {
			desc := a.Role
			if desc == "" && a.Model != "" {
				desc = "model " + a.Model
			}
			out = append(out, completionItem(a.Name, desc))
		}
		return out
	}
	src, err := readSmallFile(file)
	if err != nil {
		return nil
	}
	f, _ := lang.Parse(file, src)
	if f == nil {
		return nil
	}
	var out []string
	for _, d := range f.Decls {
		if a, ok := d.(*lang.Agent); ok && a.Name != nil {
			out = append(out, a.Name.Name)
		}
	}
	return out
}

// completionMaxSource is the largest program a completion parses, the
// compiler's own limit on a source file.
const completionMaxSource = 4 << 20

// readSmallFile reads a regular file of at most completionMaxSource bytes.
func readSmallFile(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > completionMaxSource {
		return nil, os.ErrInvalid
	}
	return os.ReadFile(path)
}

// withPrefix keeps the candidates ("value\tdescription") whose value
// starts with what is typed: not every shell filters them.
func withPrefix(items []string, typed string) []string {
	if typed == "" {
		return items
	}
	var out []string
	for _, it := range items {
		if v, _, _ := strings.Cut(it, "\t"); strings.HasPrefix(v, typed) {
			out = append(out, it)
		}
	}
	return out
}

// completionItem is a candidate with its description, if any; a tab or a
// newline in the description would break the shell's protocol.
func completionItem(value, desc string) string {
	desc = strings.Join(strings.Fields(desc), " ")
	if desc == "" {
		return value
	}
	return value + "\t" + desc
}
