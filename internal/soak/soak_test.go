package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nexa-run/nexa/internal/state"
)

// TestCheckCatchesWhatTheSoakLooksFor: the soak's check of a completed run
// against its marks passes a consistent run and reports each kind of
// broken one — a call executed twice, an executed call without its mark,
// a denied call that ran, a call resolved "not executed" that ran, and a
// decision no decider won. A soak whose checker saw nothing would prove
// nothing.
func TestCheckCatchesWhatTheSoakLooksFor(t *testing.T) {
	yes, no := true, false
	entry := func(call, outcome string, decision *bool) state.JournalEntry {
		return state.JournalEntry{CallID: call, Stage: state.StageCompleted, Outcome: outcome, Decision: decision}
	}
	for _, c := range []struct {
		name     string
		marks    map[string]int
		journal  []state.JournalEntry
		decided  map[string]bool
		resolved map[string]bool
		want     string // "" when the run is consistent
	}{
		{name: "consistent", marks: map[string]int{"m1": 1, "g1": 1},
			journal: []state.JournalEntry{entry("m1", "executed", nil), entry("g1", "executed", &yes)},
			decided: map[string]bool{"g1": true}},
		{name: "denied, not run", marks: map[string]int{"m1": 1},
			journal: []state.JournalEntry{entry("m1", "executed", nil), entry("g1", "denied", &no)},
			decided: map[string]bool{"g1": false}},
		{name: "resolved from its mark", marks: map[string]int{"g1": 1},
			journal:  []state.JournalEntry{entry("m1", "resolved", nil), entry("g1", "executed", &yes)},
			decided:  map[string]bool{"g1": true},
			resolved: map[string]bool{"m1": false}},
		{name: "twice", marks: map[string]int{"m1": 2, "g1": 1},
			journal: []state.JournalEntry{entry("m1", "executed", nil), entry("g1", "executed", &yes)},
			decided: map[string]bool{"g1": true}, want: "run r call m1 (executed): 2 marks, want 1"},
		{name: "executed without a mark", marks: map[string]int{"g1": 1},
			journal: []state.JournalEntry{entry("m1", "executed", nil), entry("g1", "executed", &yes)},
			decided: map[string]bool{"g1": true}, want: "0 marks, want 1"},
		{name: "denied but ran", marks: map[string]int{"m1": 1, "g1": 1},
			journal: []state.JournalEntry{entry("m1", "executed", nil), entry("g1", "denied", &no)},
			decided: map[string]bool{"g1": false}, want: "run r call g1 (denied): 1 marks, want 0"},
		{name: "resolved not executed, but ran", marks: map[string]int{"m1": 1, "g1": 1},
			journal:  []state.JournalEntry{entry("m1", "resolved", nil), entry("g1", "executed", &yes)},
			decided:  map[string]bool{"g1": true},
			resolved: map[string]bool{"m1": false}, want: "run r call m1 (resolved): 1 marks, want 0"},
		{name: "a decision no decider won", marks: map[string]int{"m1": 1, "g1": 1},
			journal: []state.JournalEntry{entry("m1", "executed", nil), entry("g1", "executed", &yes)},
			want:    "decision true recorded, but the winning decider said"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &soak{rep: &report{}, marks: t.TempDir()}
			for call, n := range c.marks {
				if err := os.WriteFile(filepath.Join(s.marks, "r."+call), []byte(strings.Repeat("executed\n", n)), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			tr := &tracked{id: "r", agent: "Gated", decided: c.decided, resolved: c.resolved}
			if tr.decided == nil {
				tr.decided = map[string]bool{}
			}
			if tr.resolved == nil {
				tr.resolved = map[string]bool{}
			}
			s.check(tr, &state.RunState{ID: "r", Status: state.StatusCompleted, Journal: c.journal})
			got := strings.Join(s.rep.violations, "\n")
			switch {
			case c.want == "" && got != "":
				t.Errorf("a consistent run reported: %s", got)
			case c.want != "" && !strings.Contains(got, c.want):
				t.Errorf("violations %q, want one saying %q", got, c.want)
			}
		})
	}
}
