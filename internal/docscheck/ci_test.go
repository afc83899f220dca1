package docscheck

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/nexa-run/nexa/internal/cli"
)

// root is the repository, from this package's directory.
const root = "../.."

// fence is one fenced block of a Markdown file.
type fence struct {
	lang string
	line int // of the opening fence, 1-based
	body string
}

// fences returns the fenced code blocks of a Markdown document.
func fences(doc string) []fence {
	var out []fence
	var cur *fence
	var body strings.Builder
	for i, l := range strings.Split(doc, "\n") {
		t := strings.TrimSpace(l)
		switch {
		case cur == nil && strings.HasPrefix(t, "```"):
			cur = &fence{lang: strings.TrimSpace(strings.TrimPrefix(t, "```")), line: i + 1}
			body.Reset()
		case cur != nil && t == "```":
			cur.body = body.String()
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			body.WriteString(l)
			body.WriteByte('\n')
		}
	}
	return out
}

// scripts returns the shell a CI file runs: GitHub's `run` strings and
// GitLab's `script`/`before_script`/`after_script` lists, wherever they are.
func scripts(n *yaml.Node) []string {
	var out []string
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, c := range n.Content {
			out = append(out, scripts(c)...)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i].Value, n.Content[i+1]
			switch {
			case k == "run" && v.Kind == yaml.ScalarNode:
				out = append(out, v.Value)
			case (k == "script" || k == "before_script" || k == "after_script") && v.Kind == yaml.SequenceNode:
				for _, s := range v.Content {
					out = append(out, s.Value)
				}
			default:
				out = append(out, scripts(v)...)
			}
		}
	}
	return out
}

// commandWord is a word of a command path in a usage line.
var commandWord = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

// checkNexa runs `nexa --help ARGS` in process: cobra parses every flag
// (an unknown one, or a missing value, is a usage error) and prints the
// help of the command the words name. The words before the first flag
// must name a command that has no subcommands, else a typo like
// `runs lst` would pass as the help of `runs`.
func checkNexa(args []string) error {
	var stdout, stderr bytes.Buffer
	// --help goes first: last, it would be taken as the value of a flag
	// the recipe left without one, and the command would run.
	code := cli.Main(append([]string{"--help=true"}, args...), strings.NewReader(""), &stdout, &stderr)
	if code != 0 {
		return fmt.Errorf("exit %d: %s", code, strings.TrimSpace(stderr.String()))
	}
	help := stdout.String()
	if strings.Contains(help, "Available Commands:") {
		return fmt.Errorf("names no runnable command (the help of a parent command came back)")
	}
	_, usage, ok := strings.Cut(help, "Usage:\n")
	if !ok {
		return fmt.Errorf("no usage in the help: %q", help)
	}
	path := []string{}
	for _, w := range strings.Fields(strings.SplitN(usage, "\n", 2)[0])[1:] {
		if !commandWord.MatchString(w) {
			break
		}
		path = append(path, w)
	}
	if len(path) == 0 || len(args) < len(path) || strings.Join(args[:len(path)], " ") != strings.Join(path, " ") {
		return fmt.Errorf("is not the command `nexa %s` its help describes", strings.Join(path, " "))
	}
	return nil
}

// TestCIRecipes parses every YAML block of docs/ci.md and checks that each
// nexa command the recipes run exists with the flags they give it, and that
// the recipes show what the page promises: a GitHub workflow whose second
// job waits on a protected environment, on PostgreSQL and on an SQLite
// store passed as an artifact, and a GitLab manual job.
func TestCIRecipes(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(root, "docs", "ci.md"))
	if err != nil {
		t.Fatal(err)
	}
	var (
		yamls                          int
		checked                        int
		githubGated, pgStore, sqliteAr bool
		gitlabManual                   bool
	)
	for _, f := range fences(string(doc)) {
		var shells []string
		switch f.lang {
		case "yaml", "yml":
			yamls++
			var n yaml.Node
			if err := yaml.Unmarshal([]byte(f.body), &n); err != nil {
				t.Errorf("docs/ci.md:%d: YAML does not parse: %v", f.line, err)
				continue
			}
			var m map[string]any
			if err := n.Decode(&m); err != nil {
				t.Errorf("docs/ci.md:%d: %v", f.line, err)
				continue
			}
			shells = scripts(&n)
			if len(shells) == 0 {
				t.Errorf("docs/ci.md:%d: a recipe that runs nothing", f.line)
			}
			if jobs, ok := m["jobs"].(map[string]any); ok {
				gated := github(t, f.line, jobs)
				githubGated = githubGated || gated
				store := fmt.Sprint(m["env"].(map[string]any)["NEXA_STORE"])
				pgStore = pgStore || gated && strings.HasPrefix(store, "postgres://")
				sqliteAr = sqliteAr || gated && strings.HasSuffix(store, ".sqlite3") && strings.Contains(f.body, "upload-artifact") && strings.Contains(f.body, "download-artifact")
			} else {
				gitlabManual = gitlabManual || gitlab(t, f.line, m)
			}
		case "sh", "bash", "console":
			shells = []string{f.body}
		}
		for _, s := range shells {
			for _, args := range nexaCommands(s) {
				checked++
				if err := checkNexa(args); err != nil {
					t.Errorf("docs/ci.md:%d: `nexa %s` %v", f.line, strings.Join(args, " "), err)
				}
			}
		}
	}
	if yamls < 3 || checked < 10 {
		t.Errorf("docs/ci.md: %d YAML blocks and %d nexa commands checked; the recipes went missing", yamls, checked)
	}
	for what, ok := range map[string]bool{
		"a GitHub workflow whose second job waits on a protected environment": githubGated,
		"that workflow on a PostgreSQL store":                                 pgStore,
		"that workflow with an SQLite store passed as an artifact":            sqliteAr,
		"a GitLab manual job on a protected environment":                      gitlabManual,
	} {
		if !ok {
			t.Errorf("docs/ci.md has no %s", what)
		}
	}
}

// github checks one GitHub Actions workflow: a job that runs the agent and
// treats exit 3 as success, and a job that needs it, waits on an
// environment, approves and resumes. It reports whether the workflow has
// that shape.
func github(t *testing.T, line int, jobs map[string]any) bool {
	t.Helper()
	for name, j := range jobs {
		job, _ := j.(map[string]any)
		if job["runs-on"] == nil {
			t.Errorf("docs/ci.md:%d: job %s has no runs-on", line, name)
		}
		if _, ok := job["steps"].([]any); !ok {
			t.Errorf("docs/ci.md:%d: job %s has no steps", line, name)
		}
		env, _ := job["environment"].(string)
		need, _ := job["needs"].(string)
		if env == "" || need == "" {
			continue
		}
		first, ok := jobs[need].(map[string]any)
		if !ok {
			t.Errorf("docs/ci.md:%d: job %s needs %s, which is no job", line, name, need)
			continue
		}
		runs, resumes := jobText(first), jobText(job)
		if !strings.Contains(runs, "nexa agent") || !regexp.MustCompile(`\b3\)|!= 3`).MatchString(runs) {
			t.Errorf("docs/ci.md:%d: job %s does not run the agent and stop at exit 3", line, need)
		}
		if !strings.Contains(resumes, "nexa runs approve") || !strings.Contains(resumes, "--resume") {
			t.Errorf("docs/ci.md:%d: job %s does not approve and resume", line, name)
		}
		return true
	}
	return false
}

// gitlab checks a GitLab CI file: a manual job, gated by an environment
// and blocking the pipeline, that approves and resumes.
func gitlab(t *testing.T, line int, m map[string]any) bool {
	t.Helper()
	for name, j := range m {
		job, ok := j.(map[string]any)
		if !ok || job["when"] != "manual" {
			continue
		}
		if job["allow_failure"] != false {
			t.Errorf("docs/ci.md:%d: manual job %s does not block the pipeline (allow_failure: false)", line, name)
		}
		if job["environment"] == nil {
			t.Errorf("docs/ci.md:%d: manual job %s has no protected environment", line, name)
		}
		if s := jobText(job); !strings.Contains(s, "nexa runs approve") || !strings.Contains(s, "--resume") {
			t.Errorf("docs/ci.md:%d: manual job %s does not approve and resume", line, name)
		}
		return true
	}
	return false
}

// jobText is the shell a job runs, as one text.
func jobText(job map[string]any) string {
	var n yaml.Node
	_ = n.Encode(job)
	return strings.Join(scripts(&n), "\n")
}
