package docscheck

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	cmd  string // upper-cased: FROM, RUN, USER, …
	args string
}

// stage is a build stage: its name and instructions.
type stage struct {
	name  string
	from  string
	instr []instruction
}

// parseDockerfile reads the stages of a Dockerfile: enough syntax for a
// check of what each stage does (comments, continuations, FROM … AS).
func parseDockerfile(t *testing.T, text string) []stage {
	t.Helper()
	var stages []stage
	var logical strings.Builder
	flush := func() {
		line := strings.TrimSpace(logical.String())
		logical.Reset()
		if line == "" {
			return
		}
		cmd, args, _ := strings.Cut(line, " ")
		in := instruction{cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)}
		switch {
		case in.cmd == "FROM":
			f := strings.Fields(in.args)
			s := stage{from: f[0]}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				s.name = f[2]
			}
			stages = append(stages, s)
		case len(stages) == 0:
			if in.cmd != "ARG" {
				t.Errorf("Dockerfile: %s before the first FROM", in.cmd)
			}
		default:
			stages[len(stages)-1].instr = append(stages[len(stages)-1].instr, in)
		}
	}
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "#") {
			continue
		}
		if s, ok := strings.CutSuffix(strings.TrimRight(l, " \t"), "\\"); ok {
			logical.WriteString(s + " ")
			continue
		}
		logical.WriteString(l)
		flush()
	}
	flush()
	return stages
}

// TestDockerfile checks the promises docs/ci.md makes about the images: a
// static, stamped build; a default target with the binary alone and a
// `tools` target with python3 and bubblewrap, both running as a user that
// is not root; and a build that downloads nothing but Go modules and
// Debian packages.
func TestDockerfile(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	stages := parseDockerfile(t, string(b))
	byName := map[string]stage{}
	for _, s := range stages {
		byName[s.name] = s
	}
	if len(stages) == 0 || stages[len(stages)-1].name != "nexa" {
		t.Fatalf("Dockerfile: the last stage (the default target) must be `nexa`, the image without Python")
	}
	all := func(s stage, cmd string) string {
		var parts []string
		for _, in := range s.instr {
			if in.cmd == cmd {
				parts = append(parts, in.args)
			}
		}
		return strings.Join(parts, "\n")
	}

	build, ok := byName["build"]
	if !ok {
		t.Fatal("Dockerfile: no `build` stage")
	}
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "internal/cli.Version=${VERSION}", "internal/cli.Commit=${COMMIT}", "./cmd/nexa"} {
		if !strings.Contains(all(build, "RUN"), want) {
			t.Errorf("Dockerfile: the build stage does not build with %s", want)
		}
	}

	for _, name := range []string{"nexa", "tools"} {
		s, ok := byName[name]
		if !ok {
			t.Errorf("Dockerfile: no `%s` stage", name)
			continue
		}
		user := all(s, "USER")
		if user == "" && s.from != "" {
			user = all(byName[s.from], "USER")
		}
		if user == "" || regexp.MustCompile(`^(0|root)(:|$)`).MatchString(user) {
			t.Errorf("Dockerfile: stage %s runs as %q, not as an unprivileged user", name, user)
		}
		if !strings.Contains(all(s, "ENTRYPOINT"), `"nexa"`) {
			t.Errorf("Dockerfile: stage %s has no nexa entrypoint", name)
		}
		if !strings.Contains(all(s, "COPY")+all(byName[s.from], "COPY"), "--from=build") {
			t.Errorf("Dockerfile: stage %s does not take the binary from the build stage", name)
		}
	}
	tools := all(byName["tools"], "RUN")
	for _, pkg := range []string{"python3", "bubblewrap"} {
		if !regexp.MustCompile(`apt-get install [^&]*\b` + pkg + `\b`).MatchString(tools) {
			t.Errorf("Dockerfile: the tools stage does not install %s", pkg)
		}
	}
	if strings.Contains(all(byName["nexa"], "RUN")+all(byName["base"], "RUN"), "python") {
		t.Errorf("Dockerfile: the default image must not have Python")
	}

	// Go modules and Debian packages only.
	fetch := regexp.MustCompile(`\b(curl|wget|pip3?|npm|go install|go get)\b|https?://`)
	for _, s := range stages {
		for _, in := range s.instr {
			if (in.cmd == "RUN" || in.cmd == "ADD") && fetch.MatchString(in.args) {
				t.Errorf("Dockerfile: stage %s downloads outside Go modules and Debian packages: %s %s", s.name, in.cmd, in.args)
			}
		}
	}

	// The docs name both targets.
	doc, err := os.ReadFile(filepath.Join(root, "docs", "ci.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"docker build -t nexa .", "docker build --target tools -t nexa:tools ."} {
		if !strings.Contains(string(doc), want) {
			t.Errorf("docs/ci.md does not show `%s`", want)
		}
	}
}
