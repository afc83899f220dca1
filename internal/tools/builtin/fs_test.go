package builtin

import (
	"encoding/json"
	"github.com/nexa-run/nexa/internal/tool"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nexa-run/nexa/internal/ir"
)

// fsSetup returns a working directory and, beside it, an outside directory
// holding a secret file, plus links planted inside the working directory.
func fsSetup(t *testing.T) (wd, outside string) {
	t.Helper()
	base := t.TempDir()
	wd = filepath.Join(base, "work")
	outside = filepath.Join(base, "outside")
	for _, d := range []string{wd, outside, filepath.Join(wd, "sub", "deep")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(outside, "secret.txt"), "TOP SECRET")
	write(t, filepath.Join(wd, "hello.txt"), "hello world\n")
	write(t, filepath.Join(wd, "sub", "deep", "n.txt"), "nested")
	links := map[string]string{
		"leak":       filepath.Join(outside, "secret.txt"), // file link out
		"outdir":     outside,                              // directory link out
		"rel_leak":   "../outside/secret.txt",              // relative link out
		"inner":      "hello.txt",                          // relative link in
		"abs_inner":  filepath.Join(wd, "hello.txt"),       // absolute link in
		"dangling":   filepath.Join(outside, "nope.txt"),   // would create outside
		"sub/up":     "..",                                 // link to the root itself
		"sub/upfile": "../hello.txt",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(wd, name)); err != nil {
			t.Fatal(err)
		}
	}
	return wd, outside
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestFileReadConfinement(t *testing.T) {
	wd, outside := fsSetup(t)
	ro := runOpts{workDir: wd}
	refused := []string{
		"../outside/secret.txt",
		"/etc/passwd",
		filepath.Join(outside, "secret.txt"),
		"sub/../../outside/secret.txt",
		"leak",
		"rel_leak",
		"outdir/secret.txt",
		"sub/up/../outside/secret.txt",
		"dangling",
	}
	for _, p := range refused {
		out := mustRun(t, ro, "file_read", map[string]any{"path": p}, false)
		if strings.Contains(out, "TOP SECRET") {
			t.Fatalf("%s leaked the secret: %q", p, out)
		}
		if !strings.Contains(out, "outside the working directory") && !strings.Contains(out, "does not exist") {
			t.Errorf("%s: unclear refusal %q", p, out)
		}
	}
	// Links that stay inside work, relative or absolute.
	for _, p := range []string{"hello.txt", "./hello.txt", "inner", "abs_inner", "sub/upfile", "sub/up/hello.txt", filepath.Join(wd, "hello.txt"), "sub/deep/../../hello.txt"} {
		if got := mustRun(t, ro, "file_read", map[string]any{"path": p}, true); got != "hello world\n" {
			t.Errorf("%s: %q", p, got)
		}
	}
}

func TestWorkDirBehindSymlink(t *testing.T) {
	wd, _ := fsSetup(t)
	alias := filepath.Join(t.TempDir(), "alias")
	if err := os.Symlink(wd, alias); err != nil {
		t.Fatal(err)
	}
	ro := runOpts{workDir: alias}
	for _, p := range []string{"hello.txt", filepath.Join(alias, "hello.txt"), filepath.Join(wd, "hello.txt")} {
		if got := mustRun(t, ro, "file_read", map[string]any{"path": p}, true); got != "hello world\n" {
			t.Errorf("%s: %q", p, got)
		}
	}
	mustRun(t, ro, "file_read", map[string]any{"path": "leak"}, false)
}

func TestFileReadLimits(t *testing.T) {
	wd, _ := fsSetup(t)
	ro := runOpts{workDir: wd}
	write(t, filepath.Join(wd, "big.txt"), strings.Repeat("0123456789", 10))
	got := mustRun(t, ro, "file_read", map[string]any{"path": "big.txt", "max_bytes": 25}, true)
	if !strings.HasPrefix(got, "0123456789012345678901234\n[file_read:") || !strings.Contains(got, "offset 25") {
		t.Fatalf("%q", got)
	}
	got = mustRun(t, ro, "file_read", map[string]any{"path": "big.txt", "offset": 95}, true)
	if got != "56789" {
		t.Fatalf("%q", got)
	}
	mustRun(t, ro, "file_read", map[string]any{"path": "big.txt", "offset": 100}, false)
	// A cut inside a multi-byte character drops the partial character.
	write(t, filepath.Join(wd, "utf.txt"), "ééé")
	got = mustRun(t, ro, "file_read", map[string]any{"path": "utf.txt", "max_bytes": 3}, true)
	if !strings.HasPrefix(got, "é\n[file_read") {
		t.Fatalf("%q", got)
	}
	if err := os.WriteFile(filepath.Join(wd, "bin"), []byte{0, 1, 2, 0xff}, 0o644); err != nil {
		t.Fatal(err)
	}
	if out := mustRun(t, ro, "file_read", map[string]any{"path": "bin"}, false); !strings.Contains(out, "not a UTF-8 text file") {
		t.Fatal(out)
	}
	if out := mustRun(t, ro, "file_read", map[string]any{"path": "sub"}, false); !strings.Contains(out, "is a directory") {
		t.Fatal(out)
	}
	if out := mustRun(t, ro, "file_read", map[string]any{"path": "missing.txt"}, false); !strings.Contains(out, "missing.txt does not exist") {
		t.Fatal(out)
	}
	if out := mustRun(t, ro, "file_read", map[string]any{"path": "hello.txt/x"}, false); !strings.Contains(out, "not a directory") {
		t.Fatal(out)
	}
}

func TestFileReadFIFODoesNotHang(t *testing.T) {
	wd, _ := fsSetup(t)
	if err := syscall.Mkfifo(filepath.Join(wd, "fifo"), 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	start := time.Now()
	out := mustRun(t, runOpts{workDir: wd}, "file_read", map[string]any{"path": "fifo"}, false)
	if !strings.Contains(out, "not a regular file") || time.Since(start) > 2*time.Second {
		t.Fatalf("%q after %v", out, time.Since(start))
	}
	mustRun(t, runOpts{workDir: wd}, "file_write", map[string]any{"path": "fifo", "content": "x"}, false)
}

func TestFileWriteConfinement(t *testing.T) {
	wd, outside := fsSetup(t)
	ro := runOpts{workDir: wd}
	for _, p := range []string{"../evil.txt", filepath.Join(outside, "evil.txt"), "/tmp/evil.txt", "outdir/evil.txt", "outdir/new/evil.txt", "leak", "dangling", "rel_leak"} {
		mustRun(t, ro, "file_write", map[string]any{"path": p, "content": "pwned"}, false)
		mustRun(t, ro, "file_append", map[string]any{"path": p, "content": "pwned"}, false)
	}
	if got := read(t, filepath.Join(outside, "secret.txt")); got != "TOP SECRET" {
		t.Fatalf("outside file changed: %q", got)
	}
	entries, _ := os.ReadDir(outside)
	if len(entries) != 1 {
		t.Fatalf("files created outside: %v", entries)
	}
	if _, err := os.Stat("/tmp/evil.txt"); err == nil {
		t.Fatal("/tmp/evil.txt created")
	}
	// The working directory itself and the run store are refused.
	mustRun(t, ro, "file_write", map[string]any{"path": ".", "content": "x"}, false)
	if out := mustRun(t, ro, "file_write", map[string]any{"path": ".nexa/runs.sqlite3", "content": "x"}, false); !strings.Contains(out, "run store") {
		t.Fatal(out)
	}
}

func TestFileWriteAppendNested(t *testing.T) {
	wd, _ := fsSetup(t)
	ro := runOpts{workDir: wd}
	got := mustRun(t, ro, "file_write", map[string]any{"path": "a/b/c/new.txt", "content": "one\n"}, true)
	if got != "created a/b/c/new.txt (4 bytes)" {
		t.Fatal(got)
	}
	got = mustRun(t, ro, "file_write", map[string]any{"path": "a/b/c/new.txt", "content": "two\n"}, true)
	if !strings.HasPrefix(got, "overwrote") || read(t, filepath.Join(wd, "a/b/c/new.txt")) != "two\n" {
		t.Fatal(got)
	}
	got = mustRun(t, ro, "file_append", map[string]any{"path": "a/b/c/new.txt", "content": "three\n"}, true)
	if got != "appended 6 bytes to a/b/c/new.txt (now 10 bytes)" || read(t, filepath.Join(wd, "a/b/c/new.txt")) != "two\nthree\n" {
		t.Fatal(got)
	}
	mustRun(t, ro, "file_append", map[string]any{"path": "x/log.txt", "content": "l1"}, true)
	if read(t, filepath.Join(wd, "x/log.txt")) != "l1" {
		t.Fatal("append did not create")
	}
	// Writing through a link that stays inside changes its target.
	mustRun(t, ro, "file_write", map[string]any{"path": "inner", "content": "via link"}, true)
	if read(t, filepath.Join(wd, "hello.txt")) != "via link" {
		t.Fatal("link target not written")
	}
	// Absolute path inside the working directory.
	mustRun(t, ro, "file_write", map[string]any{"path": filepath.Join(wd, "abs.txt"), "content": "abs"}, true)
	if read(t, filepath.Join(wd, "abs.txt")) != "abs" {
		t.Fatal("absolute write")
	}
	// Writing over a directory fails clearly.
	if out := mustRun(t, ro, "file_write", map[string]any{"path": "sub", "content": "x"}, false); !strings.Contains(out, "directory") {
		t.Fatal(out)
	}
	// A file in the way of a parent directory.
	mustRun(t, ro, "file_write", map[string]any{"path": "hello.txt/child", "content": "x"}, false)
}

func TestFileEdit(t *testing.T) {
	wd, _ := fsSetup(t)
	ro := runOpts{workDir: wd}
	p := filepath.Join(wd, "code.go")
	write(t, p, "a := 1\nb := 1\nc := 2\n")
	got := mustRun(t, ro, "file_edit", map[string]any{"path": "code.go", "old_text": "c := 2", "new_text": "c := 3"}, true)
	if got != "replaced 1 occurrence(s) in code.go" || read(t, p) != "a := 1\nb := 1\nc := 3\n" {
		t.Fatalf("%q %q", got, read(t, p))
	}
	out := mustRun(t, ro, "file_edit", map[string]any{"path": "code.go", "old_text": ":= 1", "new_text": ":= 9"}, false)
	if !strings.Contains(out, "occurs 2 times") || read(t, p) != "a := 1\nb := 1\nc := 3\n" {
		t.Fatalf("ambiguous edit: %q", out)
	}
	got = mustRun(t, ro, "file_edit", map[string]any{"path": "code.go", "old_text": ":= 1", "new_text": ":= 9", "replace_all": true}, true)
	if got != "replaced 2 occurrence(s) in code.go" || read(t, p) != "a := 9\nb := 9\nc := 3\n" {
		t.Fatal(got)
	}
	out = mustRun(t, ro, "file_edit", map[string]any{"path": "code.go", "old_text": "zzz", "new_text": "y"}, false)
	if !strings.Contains(out, "not found") {
		t.Fatal(out)
	}
	// Shrinking truncates the rest of the file.
	mustRun(t, ro, "file_edit", map[string]any{"path": "code.go", "old_text": "a := 9\nb := 9\n", "new_text": ""}, true)
	if read(t, p) != "c := 3\n" {
		t.Fatalf("%q", read(t, p))
	}
	mustRun(t, ro, "file_edit", map[string]any{"path": "missing.go", "old_text": "a", "new_text": "b"}, false)
	mustRun(t, ro, "file_edit", map[string]any{"path": "leak", "old_text": "TOP", "new_text": "NO"}, false)
	mustRun(t, ro, "file_edit", map[string]any{"path": "sub", "old_text": "TOP", "new_text": "NO"}, false)
	// Permissions survive an edit.
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	mustRun(t, ro, "file_edit", map[string]any{"path": "code.go", "old_text": "3", "new_text": "4"}, true)
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}
}

func TestFileDelete(t *testing.T) {
	wd, outside := fsSetup(t)
	ro := runOpts{workDir: wd}
	// A link is removed itself; its outside target stays.
	if got := mustRun(t, ro, "file_delete", map[string]any{"path": "leak"}, true); got != "deleted leak" {
		t.Fatal(got)
	}
	if read(t, filepath.Join(outside, "secret.txt")) != "TOP SECRET" {
		t.Fatal("target deleted")
	}
	mustRun(t, ro, "file_delete", map[string]any{"path": "outdir"}, true)
	if _, err := os.Stat(outside); err != nil {
		t.Fatal("outside dir removed")
	}
	for _, p := range []string{"../outside/secret.txt", filepath.Join(outside, "secret.txt"), ".", wd, "sub/..", ".nexa", "missing"} {
		mustRun(t, ro, "file_delete", map[string]any{"path": p, "recursive": true}, false)
	}
	out := mustRun(t, ro, "file_delete", map[string]any{"path": "sub"}, false)
	if !strings.Contains(out, "is a directory; set recursive") {
		t.Fatal(out)
	}
	mustRun(t, ro, "file_delete", map[string]any{"path": "sub", "recursive": true}, true)
	if _, err := os.Lstat(filepath.Join(wd, "sub")); err == nil {
		t.Fatal("sub still there")
	}
	mustRun(t, ro, "file_delete", map[string]any{"path": "hello.txt"}, true)
	if _, err := os.Lstat(filepath.Join(wd, "hello.txt")); err == nil {
		t.Fatal("hello.txt still there")
	}
	// A directory link whose target is outside is never recursed into.
	if err := os.Symlink(outside, filepath.Join(wd, "outdir2")); err != nil {
		t.Fatal(err)
	}
	mustRun(t, ro, "file_delete", map[string]any{"path": "outdir2", "recursive": true}, true)
	if read(t, filepath.Join(outside, "secret.txt")) != "TOP SECRET" {
		t.Fatal("recursed through a link")
	}
}

func TestFileListAndExists(t *testing.T) {
	wd, _ := fsSetup(t)
	ro := runOpts{workDir: wd}
	var res struct {
		Entries []struct {
			Path string `json:"path"`
			Type string `json:"type"`
			Size *int64 `json:"size"`
		} `json:"entries"`
		Truncated bool `json:"truncated"`
	}
	decode := func(s string) {
		res.Entries, res.Truncated = nil, false
		if err := json.Unmarshal([]byte(s), &res); err != nil {
			t.Fatalf("%v: %s", err, s)
		}
	}
	decode(mustRun(t, ro, "file_list", map[string]any{}, true))
	types := map[string]string{}
	for _, e := range res.Entries {
		types[e.Path] = e.Type
	}
	if types["hello.txt"] != "file" || types["sub"] != "directory" || types["leak"] != "symlink" || types["outdir"] != "symlink" || len(types) != 8 {
		t.Fatalf("%v", types)
	}
	decode(mustRun(t, ro, "file_list", map[string]any{"path": "sub", "recursive": true}, true))
	var paths []string
	for _, e := range res.Entries {
		paths = append(paths, e.Path)
	}
	if strings.Join(paths, ",") != "sub/deep,sub/deep/n.txt,sub/up,sub/upfile" {
		t.Fatalf("%v", paths)
	}
	decode(mustRun(t, ro, "file_list", map[string]any{"recursive": true, "pattern": "*.txt"}, true))
	if len(res.Entries) != 2 || res.Entries[1].Path != "sub/deep/n.txt" || *res.Entries[1].Size != 6 {
		t.Fatalf("%+v", res.Entries)
	}
	decode(mustRun(t, ro, "file_list", map[string]any{"recursive": true, "limit": 3}, true))
	if len(res.Entries) != 3 || !res.Truncated {
		t.Fatalf("%+v", res)
	}
	for _, p := range []string{"outdir", "..", "/", "sub/up/../outdir"} {
		mustRun(t, ro, "file_list", map[string]any{"path": p}, false)
	}
	mustRun(t, ro, "file_list", map[string]any{"path": "hello.txt"}, false)
	mustRun(t, ro, "file_list", map[string]any{"pattern": "[", "path": "."}, false)

	exists := func(p string) map[string]any {
		var m map[string]any
		if err := json.Unmarshal([]byte(mustRun(t, ro, "file_exists", map[string]any{"path": p}, true)), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	if m := exists("hello.txt"); m["exists"] != true || m["type"] != "file" || m["size"] != 12.0 {
		t.Fatal(m)
	}
	if m := exists("nope/x"); m["exists"] != false {
		t.Fatal(m)
	}
	if m := exists("leak"); m["exists"] != true || m["type"] != "symlink" {
		t.Fatal(m)
	}
	mustRun(t, ro, "file_exists", map[string]any{"path": "outdir/secret.txt"}, false)
	mustRun(t, ro, "file_exists", map[string]any{"path": "/etc/passwd"}, false)
}

// TestRootCatchesSwappedLink covers the race the resolve check alone would
// miss: a directory replaced by a link to the outside after the check.
func TestRootCatchesSwappedLink(t *testing.T) {
	wd, outside := fsSetup(t)
	j, err := openJail(wd, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	write(t, filepath.Join(wd, "sub", "f.txt"), "inside")
	rel, err := j.resolve("sub/secret.txt", true)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(wd, "sub")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(wd, "sub")); err != nil {
		t.Fatal(err)
	}
	if f, _, err := j.openRegular(rel, os.O_RDONLY); err == nil {
		f.Close()
		t.Fatal("opened a file outside through a swapped link")
	}
	if f, _, err := j.openRegular(rel, os.O_WRONLY|os.O_CREATE); err == nil {
		f.Close()
		t.Fatal("wrote outside through a swapped link")
	}
	if read(t, filepath.Join(outside, "secret.txt")) != "TOP SECRET" {
		t.Fatal("changed")
	}
}

// TestFileToolsKeepOutOfNexaFiles: .nexa and the protected paths (a store
// named anywhere in the working directory, its siblings, a secrets file)
// are neither read, listed nor changed, also through a link, and a call
// on them is refused before it would wait for approval.
func TestFileToolsKeepOutOfNexaFiles(t *testing.T) {
	wd, _ := fsSetup(t)
	for name, content := range map[string]string{
		".nexa/runs.sqlite3": "store", ".nexa/logs/run_1.log": "log of another run",
		"mystore.db": "live store", "mystore.db-wal": "wal", "conf/secrets.nxs": "API_KEY = x",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(wd, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(wd, name), content)
	}
	if err := os.Symlink("mystore.db", filepath.Join(wd, "store_link")); err != nil {
		t.Fatal(err)
	}
	prot := []string{filepath.Join(wd, "mystore.db"), filepath.Join(wd, "mystore.db-wal"), filepath.Join(wd, "mystore.db-journal"), filepath.Join(wd, "conf", "secrets.nxs")}
	ro := runOpts{workDir: wd, opts: Options{Protected: prot}}
	e := New(Options{Protected: prot})
	refused := []struct {
		tool string
		args map[string]any
	}{
		{"file_read", map[string]any{"path": ".nexa/logs/run_1.log"}},
		{"file_read", map[string]any{"path": "mystore.db"}},
		{"file_read", map[string]any{"path": "store_link"}},
		{"file_read", map[string]any{"path": filepath.Join(wd, "conf/secrets.nxs")}},
		{"file_list", map[string]any{"path": ".nexa/logs"}},
		{"file_exists", map[string]any{"path": "mystore.db-wal"}},
		{"file_write", map[string]any{"path": "mystore.db", "content": "x"}},
		{"file_write", map[string]any{"path": "store_link", "content": "x"}},
		{"file_write", map[string]any{"path": "mystore.db-journal", "content": "x"}},
		{"file_append", map[string]any{"path": "conf/secrets.nxs", "content": "x"}},
		{"file_edit", map[string]any{"path": "mystore.db", "old_text": "live", "new_text": "dead"}},
		{"file_delete", map[string]any{"path": "mystore.db"}},
		{"file_delete", map[string]any{"path": ".nexa", "recursive": true}},
	}
	for _, c := range refused {
		out := mustRun(t, ro, c.tool, c.args, false)
		if !strings.Contains(out, "nexa's own") {
			t.Errorf("%s %v: %s", c.tool, c.args, out)
		}
		raw, _ := json.Marshal(c.args)
		if err := e.Precheck(tool.Invocation{Tool: &ir.Tool{Name: c.tool}, Arguments: raw, WorkDir: wd}); err == nil || !strings.Contains(err.Error(), "nexa's own") {
			t.Errorf("Precheck(%s %v) = %v, want a refusal before approval", c.tool, c.args, err)
		}
	}
	for name, want := range map[string]string{".nexa/runs.sqlite3": "store", "mystore.db": "live store", "mystore.db-wal": "wal", "conf/secrets.nxs": "API_KEY = x"} {
		if got := read(t, filepath.Join(wd, name)); got != want {
			t.Errorf("%s changed: %q", name, got)
		}
	}
	if _, err := os.Lstat(filepath.Join(wd, "mystore.db-journal")); err == nil {
		t.Error("mystore.db-journal was created")
	}
	// Listings leave them out; ordinary files stay reachable.
	list := mustRun(t, ro, "file_list", map[string]any{"path": ".", "recursive": true, "limit": 1000}, true)
	for _, hidden := range []string{".nexa", "mystore.db", "secrets.nxs", "run_1.log"} {
		if strings.Contains(list, hidden) {
			t.Errorf("listing shows %s: %s", hidden, list)
		}
	}
	if !strings.Contains(list, "hello.txt") || !strings.Contains(list, "store_link") {
		t.Errorf("listing lost ordinary entries: %s", list)
	}
	mustRun(t, ro, "file_write", map[string]any{"path": "conf/other.txt", "content": "x"}, true)
	for _, c := range []struct {
		tool string
		args map[string]any
	}{{"file_read", map[string]any{"path": "hello.txt"}}, {"file_write", map[string]any{"path": "new.txt", "content": "x"}}, {"file_delete", map[string]any{"path": "store_link"}}, {"shell_exec", map[string]any{"command": "cat mystore.db"}}} {
		raw, _ := json.Marshal(c.args)
		if err := e.Precheck(tool.Invocation{Tool: &ir.Tool{Name: c.tool}, Arguments: raw, WorkDir: wd}); err != nil {
			t.Errorf("Precheck(%s %v) = %v, want none", c.tool, c.args, err)
		}
	}
}
