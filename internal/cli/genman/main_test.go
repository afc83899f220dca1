package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/nexa-run/nexa/internal/cli"
)

// Every command a user can run, and every help topic, gets a man page that
// carries its description and its flags.
func TestGenerateWritesAPagePerCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "man")
	if err := generate(dir); err != nil {
		t.Fatal(err)
	}
	var want []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.IsAvailableCommand() || c.IsAdditionalHelpTopicCommand() || !c.HasParent() {
			want = append(want, strings.ReplaceAll(c.CommandPath(), " ", "-")+".1")
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(cli.Command())
	for _, name := range []string{"nexa.1", "nexa-agent.1", "nexa-runs-show.1", "nexa-completion-bash.1", "nexa-exit-codes.1", "nexa-environment.1", "nexa-json.1"} {
		if !contains(want, name) {
			t.Errorf("command tree has no %s", name)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	for _, name := range want {
		if !contains(got, name) {
			t.Errorf("no man page %s; got %v", name, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d pages for %d commands: %v", len(got), len(want), got)
	}

	page, err := os.ReadFile(filepath.Join(dir, "nexa-agent.1"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{".TH \"NEXA\" \"1\"", "--resume", "waiting_approval"} {
		if !strings.Contains(string(page), s) {
			t.Errorf("nexa-agent.1 lacks %q", s)
		}
	}
	topic, err := os.ReadFile(filepath.Join(dir, "nexa-exit-codes.1"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(topic), "budget_exhausted") {
		t.Errorf("nexa-exit-codes.1 lacks the codes:\n%s", topic)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
