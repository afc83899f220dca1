// Package resumecmd writes the exact commands that continue a run (the
// "resume" object of nexa agent, runs show --json and the nexa serve API),
// so that a person or a script never has to assemble them, and every
// front end shows the same ones.
package resumecmd

import (
	"fmt"
	"strings"

	"github.com/nexa-run/nexa/internal/engine"
	"github.com/nexa-run/nexa/internal/shellquote"
	"github.com/nexa-run/nexa/internal/state"
)

// Commands are the exact commands that continue a run, so a person or
// script never has to assemble them.
func Commands(st *state.RunState, file, flags string, pending []engine.PendingCall, unknown []engine.UnknownCall) map[string]string {
	if !Resumable(st) {
		return nil
	}
	base := Base(st, file, flags)
	cmds := map[string]string{}
	switch st.Status {
	case state.StatusWaitingApproval:
		var approve, deny strings.Builder
		approve.WriteString(base)
		deny.WriteString(base)
		for _, p := range pending {
			approve.WriteString(" --approve " + p.CallID)
			deny.WriteString(" --deny " + p.CallID)
		}
		cmds["approve"] = approve.String()
		cmds["deny"] = deny.String()
	case state.StatusWaitingInput:
		var respond strings.Builder
		respond.WriteString(base)
		for _, in := range engine.PendingInputs(st) {
			respond.WriteString(" --respond " + in.CallID + " " + answerHint(in))
		}
		cmds["respond"] = respond.String()
		if len(pending) > 0 {
			// Other calls of the reply wait for decisions: given on
			// the same resume.
			var approve, deny strings.Builder
			approve.WriteString(cmds["respond"])
			deny.WriteString(cmds["respond"])
			for _, p := range pending {
				approve.WriteString(" --approve " + p.CallID)
				deny.WriteString(" --deny " + p.CallID)
			}
			cmds["approve"] = approve.String()
			cmds["deny"] = deny.String()
		}
	case state.StatusUnknownOutcome:
		for i, u := range unknown {
			key := "resolve"
			if i > 0 {
				key = fmt.Sprintf("resolve_%d", i+1)
			}
			cmds[key] = fmt.Sprintf("nexa runs resolve %s %s --output '…' --success=true|false%s", st.ID, u.CallID, StoreFlagOnly(flags))
		}
		cmds["resume"] = base
	default:
		cmds["resume"] = base
	}
	return cmds
}

// answerHint is the answer a command shows for a call waiting for input:
// done when every request is a URL the person visits, else a form's JSON
// to fill in.
func answerHint(in engine.PendingInput) string {
	for _, r := range in.Requests {
		if r.Mode != state.InputURL {
			return "'{…}'"
		}
	}
	return "done"
}

// Resumable reports whether resuming st could do anything: not for a
// terminal run, and not for a final answer that failed validation (a resume
// would validate the same saved answer again).
func Resumable(st *state.RunState) bool {
	if st.Status.Terminal() {
		return false
	}
	return st.Error == nil || st.Error.Code != engine.CodeOutputInvalid
}

// StoreFlagOnly keeps the --store part of resume flags, the only one that
// nexa runs commands take.
func StoreFlagOnly(flags string) string {
	if i := strings.Index(flags, " --store "); i >= 0 {
		rest := flags[i+len(" --store "):]
		if j := strings.Index(rest, " --"); j >= 0 {
			rest = rest[:j]
		}
		return " --store " + rest
	}
	return ""
}

// Base is the command that continues st: the short form `nexa agent
// --resume RUN` (with only the --store of flags) for a run that recorded
// its provider choice, since nexa agent takes the rest from the run; else
// the long form with FILE (the run's when empty), AGENT and flags.
func Base(st *state.RunState, file, flags string) string {
	if st.Config.Choice != nil {
		return "nexa agent --resume " + st.ID + StoreFlagOnly(flags)
	}
	if file == "" {
		file = st.Config.SourceFile
	}
	return fmt.Sprintf("nexa agent %s %s --resume %s%s", shellquote.Quote(file), shellquote.Quote(st.Config.Agent), st.ID, flags)
}

// Flags are the flags the commands of st repeat, shell-quoted, each after
// a space: the hint flags the run recorded (state.Config.HintFlags; for a
// run that recorded none, fallback), then --store when the showing command
// was given one.
func Flags(st *state.RunState, fallback []string, storeFlag string) string {
	flags := st.Config.HintFlags()
	if len(flags) == 0 {
		flags = fallback
	}
	var b strings.Builder
	for _, f := range flags {
		b.WriteString(" " + shellquote.Quote(f))
	}
	if storeFlag != "" {
		b.WriteString(" --store " + shellquote.Quote(storeFlag))
	}
	return b.String()
}
