package docscheck

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
)

// fakeGo stands in for the go command in `make dist`: instead of compiling
// it writes, into the -o file, the environment and arguments it was given.
// The real recipe then runs over four platforms in milliseconds.
const fakeGo = `#!/bin/sh
out=
prev=
for a in "$@"; do
	if [ "$prev" = "-o" ]; then out=$a; fi
	prev=$a
done
printf 'GOOS=%s\nGOARCH=%s\nCGO_ENABLED=%s\n' "$GOOS" "$GOARCH" "$CGO_ENABLED" > "$out"
for a in "$@"; do printf 'arg=%s\n' "$a" >> "$out"; done
`

// makeDist runs the Makefile's dist target with extra variables.
func makeDist(t *testing.T, vars ...string) string {
	t.Helper()
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	cmd := exec.Command("make", append([]string{"-s", "dist"}, vars...)...)
	cmd.Dir = root
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("make dist %s: %v\n%s", strings.Join(vars, " "), err, out.String())
	}
	return out.String()
}

// sums reads SHA256SUMS and checks each line against the file it names;
// it returns the names, sorted.
func sums(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		sum, name, ok := strings.Cut(l, "  ")
		if !ok {
			t.Fatalf("SHA256SUMS: line %q is not `HASH  NAME`", l)
		}
		bin, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("SHA256SUMS names %s: %v", name, err)
		}
		if h := sha256.Sum256(bin); hex.EncodeToString(h[:]) != sum {
			t.Errorf("SHA256SUMS: the sum of %s is wrong", name)
		}
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// `make dist` builds one binary for each of linux and darwin on amd64 and
// arm64, static (no cgo), without the builder's paths, stamped with the
// version and commit, and lists their checksums; files of an earlier
// `make dist` are removed, nothing else in the directory is.
func TestMakeDistPlatforms(t *testing.T) {
	tmp := t.TempDir()
	gobin := filepath.Join(tmp, "go")
	if err := os.WriteFile(gobin, []byte(fakeGo), 0o755); err != nil {
		t.Fatal(err)
	}
	dist := filepath.Join(tmp, "out")
	if err := os.MkdirAll(dist, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"nexa-linux-386", "SHA256SUMS", "notes.txt"} {
		if err := os.WriteFile(filepath.Join(dist, f), []byte("old"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	makeDist(t, "GO="+gobin, "DIST="+dist, "VERSION=v9.8.7", "COMMIT=abc1234")

	want := []string{"nexa-darwin-amd64", "nexa-darwin-arm64", "nexa-linux-amd64", "nexa-linux-arm64"}
	if got := sums(t, dist); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("SHA256SUMS lists %v, want %v", got, want)
	}
	if _, err := os.Stat(filepath.Join(dist, "nexa-linux-386")); !os.IsNotExist(err) {
		t.Errorf("a binary of an earlier make dist was left in the directory")
	}
	if _, err := os.Stat(filepath.Join(dist, "notes.txt")); err != nil {
		t.Errorf("make dist removed a file it did not write: %v", err)
	}
	for _, name := range want {
		b, err := os.ReadFile(filepath.Join(dist, name))
		if err != nil {
			t.Fatal(err)
		}
		got := string(b)
		osArch := strings.Split(strings.TrimPrefix(name, "nexa-"), "-")
		for _, line := range []string{
			"GOOS=" + osArch[0], "GOARCH=" + osArch[1], "CGO_ENABLED=0",
			"arg=build", "arg=-trimpath", "arg=./cmd/nexa",
		} {
			if !strings.Contains(got, line+"\n") {
				t.Errorf("%s: built without %s:\n%s", name, line, got)
			}
		}
		for _, stamp := range []string{"internal/cli.Version=v9.8.7", "internal/cli.Commit=abc1234"} {
			if !strings.Contains(got, stamp) {
				t.Errorf("%s: not stamped with %s:\n%s", name, stamp, got)
			}
		}
	}
}

// One real cross-build through the same recipe, for this machine's
// platform: the binary runs, `nexa version --json` shows the stamp, and on
// Linux it is static (no program interpreter) and holds no path of the
// checkout. Skipped with -short: it compiles nexa.
func TestMakeDistRealBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles nexa")
	}
	dist := t.TempDir()
	makeDist(t, "DIST="+dist, "PLATFORMS="+runtime.GOOS+"/"+runtime.GOARCH, "VERSION=v9.8.7", "COMMIT=abc1234")
	name := "nexa-" + runtime.GOOS + "-" + runtime.GOARCH
	if got := sums(t, dist); len(got) != 1 || got[0] != name {
		t.Fatalf("SHA256SUMS lists %v, want [%s]", got, name)
	}
	bin := filepath.Join(dist, name)
	out, err := exec.Command(bin, "version", "--json").Output()
	if err != nil {
		t.Fatalf("%s version --json: %v", name, err)
	}
	var v map[string]string
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("version --json printed %q: %v", out, err)
	}
	if v["version"] != "v9.8.7" || v["commit"] != "abc1234" || v["os"] != runtime.GOOS || v["arch"] != runtime.GOARCH {
		t.Errorf("version --json = %v", v)
	}
	if runtime.GOOS != "linux" {
		return
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s is dynamically linked (it has a program interpreter)", name)
		}
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(data, []byte(abs+"/internal")) {
		t.Errorf("%s holds the checkout's path %s: built without -trimpath", name, abs)
	}
}
