package docscheck

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// The deployment files of docs/deploy.md (deploy/compose.yaml and
// deploy/kubernetes/*.yaml) are copied by users as they are: each must
// parse, run only real nexa commands and flags, keep every secret out of
// the file, and give a worker more time to stop than its drain takes.

// readYAML parses every document of a YAML file into generic maps.
func readYAML(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var docs []map[string]any
	for {
		var m map[string]any
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if m != nil {
			docs = append(docs, m)
		}
	}
}

// at walks a path of map keys and list indexes ("spec.template.spec").
func at(v any, path string) any {
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// strs is a YAML list of strings.
func strs(v any) []string {
	l, _ := v.([]any)
	out := make([]string, 0, len(l))
	for _, x := range l {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

// flagValue is the value given to flag in args ("" when absent).
func flagValue(args []string, flag string) string {
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			return v
		}
	}
	return ""
}

// secretLike finds a value that looks written into the file rather than
// taken from the environment or a secret: a postgres URL with a literal
// password (a placeholder in capitals, such as PASSWORD, is not one), or
// a key or token given as a value.
var secretLike = regexp.MustCompile(`postgres://[^:@/\s]+:([^$@/{\s][^@/\s]*)@|sk-[A-Za-z0-9]{8,}|NEXA_SERVE_TOKEN:\s+[^$\s]`)

// findSecret is the first secret-looking value of a file, or "".
func findSecret(raw []byte) string {
	for _, m := range secretLike.FindAllSubmatch(raw, -1) {
		if len(m[1]) > 0 && strings.Trim(string(m[1]), "ABCDEFGHIJKLMNOPQRSTUVWXYZ_") == "" {
			continue
		}
		return string(m[0])
	}
	return ""
}

func TestFindSecret(t *testing.T) {
	for in, want := range map[string]bool{
		"postgres://nexa:hunter2@db/nexa":               true,
		"postgres://nexa:PASSWORD@HOST:5432/nexa":       false,
		"postgres://nexa:${POSTGRES_PASSWORD}@postgres": false,
		"OPENAI_API_KEY: sk-abcdefghijklmnop":           true,
		"NEXA_SERVE_TOKEN: s3cret":                      true,
		"NEXA_SERVE_TOKEN: ${NEXA_SERVE_TOKEN:?set it}": false,
	} {
		if got := findSecret([]byte(in)) != ""; got != want {
			t.Errorf("findSecret(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestComposeFile(t *testing.T) {
	path := filepath.Join("..", "..", "deploy", "compose.yaml")
	raw, _ := os.ReadFile(path)
	if m := findSecret(raw); m != "" {
		t.Errorf("%s holds a secret: %q", path, m)
	}
	docs := readYAML(t, path)
	if len(docs) != 1 {
		t.Fatalf("%s: %d documents", path, len(docs))
	}
	services, _ := docs[0]["services"].(map[string]any)
	for _, name := range []string{"postgres", "worker", "serve"} {
		if services[name] == nil {
			t.Errorf("%s: no service %s", path, name)
		}
	}
	worker := services["worker"]
	args := strs(at(worker, "command"))
	if len(args) == 0 || args[0] != "worker" {
		t.Fatalf("%s: the worker service runs %q, not nexa worker", path, args)
	}
	checkDrain(t, path, args, at(worker, "stop_grace_period"))
	if at(worker, "stop_signal") != "SIGTERM" {
		t.Errorf("%s: the worker must be stopped with SIGTERM (its drain signal)", path)
	}
	serve := strs(at(services["serve"], "command"))
	if len(serve) == 0 || serve[0] != "serve" {
		t.Errorf("%s: the serve service runs %q", path, serve)
	}
	if at(services["serve"], "environment.NEXA_SERVE_TOKEN") == nil {
		t.Errorf("%s: nexa serve listens beyond loopback and needs NEXA_SERVE_TOKEN", path)
	}
	submit := append(strs(at(services["submit"], "entrypoint"))[1:], "review.nx", "Reviewer", "task")
	for _, cmd := range [][]string{args, serve, submit} {
		if err := checkNexa(cmd); err != nil {
			t.Errorf("%s: nexa %s: %v", path, strings.Join(cmd, " "), err)
		}
	}
	if !slices.Contains(submit, "--detach") {
		t.Errorf("%s: submissions must be detached, for the workers", path)
	}
}

func TestKubernetesManifests(t *testing.T) {
	dir := filepath.Join("..", "..", "deploy", "kubernetes")
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if len(files) < 2 {
		t.Fatalf("%s: %d manifests", dir, len(files))
	}
	kinds := map[string]map[string]any{}
	for _, f := range files {
		raw, _ := os.ReadFile(f)
		if m := findSecret(raw); m != "" {
			t.Errorf("%s holds a secret: %q", f, m)
		}
		for _, d := range readYAML(t, f) {
			kind, _ := d["kind"].(string)
			name, _ := at(d, "metadata.name").(string)
			if kind == "" || name == "" || d["apiVersion"] == nil {
				t.Errorf("%s: a document without apiVersion, kind or name", f)
				continue
			}
			if kind == "Secret" {
				t.Errorf("%s: secrets are created with kubectl, never committed", f)
			}
			kinds[kind+"/"+name] = d
		}
	}
	worker := kinds["Deployment/nexa-worker"]
	serve := kinds["Deployment/nexa-serve"]
	if worker == nil || serve == nil || kinds["Service/nexa-serve"] == nil {
		t.Fatalf("%s: want Deployments nexa-worker and nexa-serve and Service nexa-serve; have %v", dir, slices.Sorted(mapsKeys(kinds)))
	}
	wc := container(t, worker, "worker")
	args := strs(wc["args"])
	if len(args) == 0 || args[0] != "worker" {
		t.Fatalf("nexa-worker runs %q", args)
	}
	grace, _ := at(worker, "spec.template.spec.terminationGracePeriodSeconds").(int)
	checkDrain(t, "nexa-worker", args, (time.Duration(grace) * time.Second).String())
	if at(wc, "lifecycle.preStop.exec.command") == nil {
		t.Error("nexa-worker: no preStop hook starting the drain")
	}
	if at(worker, "spec.template.spec.securityContext.runAsNonRoot") != true {
		t.Error("nexa-worker: must run as non-root")
	}
	sc := container(t, serve, "serve")
	sargs := strs(sc["args"])
	for _, cmd := range [][]string{args, sargs} {
		if err := checkNexa(cmd); err != nil {
			t.Errorf("nexa %s: %v", strings.Join(cmd, " "), err)
		}
	}
	for _, c := range []map[string]any{wc, sc} {
		env := map[string]any{}
		for _, e := range at(c, "env").([]any) {
			env[at(e, "name").(string)] = e
		}
		if at(env["NEXA_STORE"], "valueFrom.secretKeyRef") == nil {
			t.Errorf("container %s: NEXA_STORE must come from a secret", c["name"])
		}
	}
	if !slices.ContainsFunc(at(sc, "env").([]any), func(e any) bool {
		return at(e, "name") == "NEXA_SERVE_TOKEN" && at(e, "valueFrom.secretKeyRef") != nil
	}) {
		t.Error("nexa-serve: listens beyond loopback, so it needs NEXA_SERVE_TOKEN from a secret")
	}
}

// checkDrain checks that a worker is given longer to stop than its drain.
func checkDrain(t *testing.T, where string, args []string, grace any) {
	t.Helper()
	drain, err := time.ParseDuration(flagValue(args, "--drain-timeout"))
	if err != nil {
		t.Errorf("%s: the worker names no --drain-timeout: %v", where, err)
		return
	}
	g, _ := grace.(string)
	stop, err := time.ParseDuration(g)
	if err != nil || stop <= drain {
		t.Errorf("%s: the worker's grace period %v must exceed its --drain-timeout %v", where, grace, drain)
	}
}

// container is the named container of a Deployment.
func container(t *testing.T, dep map[string]any, name string) map[string]any {
	t.Helper()
	for _, c := range at(dep, "spec.template.spec.containers").([]any) {
		if m, _ := c.(map[string]any); m["name"] == name {
			return m
		}
	}
	t.Fatalf("no container %s", name)
	return nil
}

func mapsKeys(m map[string]map[string]any) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
