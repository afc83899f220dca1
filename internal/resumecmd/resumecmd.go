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
	if file == "" {
		file = st.Config.SourceFile
	}
	base := fmt.Sprintf("nexa agent %s %s --resume %s%s", shellquote.Quote(file), shellquote.Quote(st.Config.Agent), st.ID, flags)
	if st.Config.Choice != nil {
		// The run recorded what nexa agent needs to continue it: the
		// short form, with only the store when this command named one.
		base = "nexa agent --resume " + st.ID + StoreFlagOnly(flags)
	}
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
