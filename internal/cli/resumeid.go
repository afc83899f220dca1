package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/nexa-run/nexa/internal/engine"
	"github.com/nexa-run/nexa/internal/session"
	"github.com/nexa-run/nexa/internal/state"
)

// needsStoredChoice reports whether a resume must take its provider from
// the run: no provider flag and no NEXA_PROVIDER names one.
func needsStoredChoice(e *env, c *cobra.Command) bool {
	return !c.Flags().Changed("provider") && e.getenv("NEXA_PROVIDER") == ""
}

// fromStoredRun completes a resume's command line from the run it names
// (docs/reference/cli.md#nexa-agent): `last` becomes the newest run that
// waits for a person or has unknown outcomes; FILE and AGENT, when left
// out, are the run's; a provider choice left out is the run's recorded one
// (--provider, --model, --base-url, --no-stream) and so is its policy. What
// the command gives must be what the run has: the refusal names what
// differs (exit 2). It returns the positional arguments to use.
func fromStoredRun(e *env, c *cobra.Command, f *agentFlags, args []string) ([]string, error) {
	if len(args) == 1 || len(args) > 2 {
		return nil, &engine.Error{Code: engine.CodeUsage, Refusal: true, Message: fmt.Sprintf(
			"--resume takes FILE AGENT, or no arguments at all (the run knows them); got %d argument(s)", len(args))}
	}
	wd, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("working directory: %w", err)
	}
	st, err := session.OpenStore(sessionEnv(e), f.store, wd, false)
	if err != nil {
		msg := err.Error()
		return nil, &engine.Error{Code: engine.CodeRunNotFound, Refusal: true, Message: fmt.Sprintf("no run %s: %s", f.resume, msg)}
	}
	defer st.Close()
	ctx := context.Background()
	if f.resume == "last" {
		id, err := lastWaitingRun(ctx, st)
		if err != nil {
			return nil, err
		}
		f.resume = id
	}
	if !engine.ValidRunID(f.resume) {
		return nil, &engine.Error{Code: engine.CodeRunNotFound, Refusal: true, Message: fmt.Sprintf("%q is not a run id (run ids look like run_01JD7…, or say last)", f.resume)}
	}
	run, err := engine.Header(ctx, st, f.resume)
	if err != nil {
		if re, ok := engine.AsError(err); ok && re.Code == engine.CodeRunNotFound {
			re.Message = fmt.Sprintf("no run %s in the store %s", f.resume, st.Path())
		}
		return nil, err
	}
	cfg := run.Config
	if len(args) == 2 {
		if !samePath(wd, args[0], cfg.SourceFile) {
			return nil, &engine.Error{Code: engine.CodeSourceChanged, Refusal: true, Message: fmt.Sprintf(
				"run %s was started from %s, not %s; resume it with nexa agent --resume %s", run.ID, cfg.SourceFile, args[0], run.ID)}
		}
	} else {
		args = []string{cfg.SourceFile, cfg.Agent}
	}
	if ch := cfg.Choice; ch != nil {
		for _, fl := range []struct {
			name        string
			given, have *string
		}{{"provider", &f.provider, &ch.Provider}, {"model", &f.model, &ch.Model}, {"base-url", &f.baseURL, &ch.BaseURL}} {
			switch {
			case !c.Flags().Changed(fl.name):
				*fl.given = *fl.have
			case *fl.given != *fl.have:
				have := *fl.have
				if have == "" {
					have = "none (resolved from the environment)"
				}
				return nil, &engine.Error{Code: engine.CodeProviderChanged, Refusal: true, Message: fmt.Sprintf(
					"run %s was started with --%s %s; this resume gives %s (omit the flag to keep the run's)", run.ID, fl.name, have, *fl.given)}
			}
		}
		if !c.Flags().Changed("no-stream") {
			f.noStream = ch.NoStream
		}
	}
	if cfg.Policy != nil && f.policy == "" && e.getenv("NEXA_POLICY") == "" {
		f.policy = cfg.Policy.Path
	}
	return args, nil
}

// lastWaitingRun is the newest run of the store that waits for a person or
// has calls whose outcome is unknown.
func lastWaitingRun(ctx context.Context, st state.Store) (string, error) {
	var best *state.Summary
	for _, status := range []state.Status{state.StatusWaitingApproval, state.StatusWaitingInput, state.StatusUnknownOutcome} {
		page, err := engine.ListRuns(ctx, st, state.Filter{Status: status, Limit: 1}, "")
		if err != nil {
			return "", err
		}
		if len(page.Runs) == 1 && (best == nil || state.CursorOf(page.Runs[0]).NewerThan(state.CursorOf(*best))) {
			r := page.Runs[0]
			best = &r
		}
	}
	if best == nil {
		return "", &engine.Error{Code: engine.CodeRunNotFound, Refusal: true, Message: "--resume last: no run of the store waits for a person or has unknown outcomes"}
	}
	return best.ID, nil
}

// samePath reports whether two paths name the same file, relative paths
// taken from wd.
func samePath(wd, a, b string) bool {
	abs := func(p string) string {
		if !filepath.IsAbs(p) {
			p = filepath.Join(wd, p)
		}
		return filepath.Clean(p)
	}
	return abs(a) == abs(b)
}
