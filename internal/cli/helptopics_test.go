package cli

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"
)

// docTable returns the first-column cells of the table under the heading
// of a reference page, split into the backquoted names they hold.
func docTable(t *testing.T, page, heading string) []string {
	t.Helper()
	b, err := os.ReadFile("../../docs/reference/" + page)
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("%s has no %q", page, heading)
	}
	if i := strings.Index(section, "\n#"); i >= 0 {
		section = section[:i]
	}
	quoted := regexp.MustCompile("`([^`]+)`")
	var names []string
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 || strings.HasPrefix(strings.TrimSpace(cells[1]), "---") {
			continue
		}
		first := strings.TrimSpace(cells[1])
		if m := quoted.FindAllStringSubmatch(first, -1); m != nil {
			for _, q := range m {
				names = append(names, q[1])
			}
		} else if first != "code" && first != "variable" {
			names = append(names, first)
		}
	}
	if len(names) == 0 {
		t.Fatalf("no table under %q of %s", heading, page)
	}
	return names
}

// The help topics name everything the reference pages list, so that `nexa
// help …` never leaves out a variable, an exit code or an error code.
func TestHelpTopicsFollowTheReference(t *testing.T) {
	for _, tc := range []struct {
		page, heading, text string
	}{
		{"cli.md", "## Environment", environmentHelp},
		{"cli.md", "## Exit codes", exitCodesHelp},
		{"json.md", "## Error codes", jsonHelp},
	} {
		for _, name := range docTable(t, tc.page, tc.heading) {
			if !regexp.MustCompile(`(^|[^A-Za-z0-9_])` + regexp.QuoteMeta(name) + `($|[^A-Za-z0-9_])`).MatchString(tc.text) {
				t.Errorf("%s %s lists %s; the help topic does not", tc.page, tc.heading, name)
			}
		}
	}
	// And the other way: no variable the reference does not document.
	documented := strings.Join(docTable(t, "cli.md", "## Environment"), " ")
	for _, v := range regexp.MustCompile(`\bNEXA_[A-Z_]+`).FindAllString(environmentHelp, -1) {
		if v == "NEXA_RUN_ID" || v == "NEXA_CALL_ID" || v == "NEXA_IDEMPOTENCY_KEY" {
			continue // what tools receive, under the table
		}
		if !strings.Contains(documented, v) {
			t.Errorf("nexa help environment lists %s; docs/reference/cli.md does not", v)
		}
	}
}

// `nexa help TOPIC` prints the topic on stdout and exits 0; the topics are
// listed in `nexa --help`.
func TestHelpTopicsPrint(t *testing.T) {
	for topic, want := range map[string]string{
		"exit-codes":  "130  interrupted by a signal",
		"environment": "NEXA_STORE",
		"json":        "checkpoint_conflict  7",
	} {
		var out, errb bytes.Buffer
		if code := Main([]string{"help", topic}, strings.NewReader(""), &out, &errb); code != 0 {
			t.Fatalf("nexa help %s: exit %d: %s", topic, code, errb.String())
		}
		if !strings.Contains(out.String(), want) {
			t.Errorf("nexa help %s lacks %q:\n%s", topic, want, out.String())
		}
	}
	var out bytes.Buffer
	Main([]string{"--help"}, strings.NewReader(""), &out, &out)
	if !strings.Contains(out.String(), "Additional help topics:") || !strings.Contains(out.String(), "exit-codes") {
		t.Errorf("nexa --help does not list the topics:\n%s", out.String())
	}
}
