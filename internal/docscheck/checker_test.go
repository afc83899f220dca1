package docscheck

import (
	"reflect"
	"testing"
)

// The shell reader finds the nexa commands a recipe runs, with their
// arguments, wherever they stand in a line.
func TestNexaCommands(t *testing.T) {
	script := `code=0
nexa agent review.nx Reviewer "Review it" --quiet > result.json || code=$?
for call in $(nexa runs show "$RUN" --json | jq -r '.pending_calls[].call_id'); do nexa runs approve "$RUN" "$call" --approved=true; done
NEXA_USER=me nexa agent review.nx Reviewer \
  --resume "${RUN_ID}" 2>/dev/null
echo nexa version  # not run: an argument of echo
if true; then nexa runs list --json; fi
`
	want := [][]string{
		{"agent", "review.nx", "Reviewer", "Review it", "--quiet"},
		{"runs", "show", "X", "--json"},
		{"runs", "approve", "X", "X", "--approved=true"},
		{"agent", "review.nx", "Reviewer", "--resume", "X"},
		{"runs", "list", "--json"},
	}
	if got := nexaCommands(script); !reflect.DeepEqual(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// The command check accepts the real commands and flags and refuses the
// mistakes a renamed flag or a typo would leave in a recipe.
func TestCheckNexa(t *testing.T) {
	for _, ok := range [][]string{
		{"agent", "f.nx", "A", "--resume", "X", "--approve", "X", "--quiet"},
		{"runs", "approve", "X", "X", "--approved=true", "--json"},
		{"runs", "show", "X", "--json"},
		{"version", "--json"},
	} {
		if err := checkNexa(ok); err != nil {
			t.Errorf("nexa %q: %v", ok, err)
		}
	}
	for _, bad := range [][]string{
		{"runs", "lst"},                        // no such subcommand
		{"runs"},                               // a parent, not a command
		{"agent", "f.nx", "A", "--resum", "X"}, // misspelt flag
		{"runs", "approve", "X", "X", "--approve=1"}, // agent's flag on runs approve
		{"agent", "f.nx", "A", "--resume"},           // flag without its value
		{"serve-it"},                                 // no such command
	} {
		err := checkNexa(bad)
		if err == nil {
			t.Errorf("nexa %q passed the check", bad)
			continue
		}
		t.Logf("nexa %q: %v", bad, err)
	}
}
