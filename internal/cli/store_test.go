package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A store that cannot be created because its directory is read-only gets a
// message that says so, not SQLite's "unable to open database file".
func TestReadOnlyStoreDirectorySaysSo(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes to read-only directories; run as an ordinary user")
	}
	dir := filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(dir, 0o700) })
	e := &env{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}, getenv: func(string) string { return "" }}
	_, err := openStore(e, filepath.Join(dir, "runs.sqlite3"), dir, true)
	if err == nil {
		t.Fatal("opening a store in a read-only directory succeeded")
	}
	se, ok := err.(*storeOpenError)
	if !ok || se.exit != ExitFailed || !strings.Contains(se.msg, "read-only") {
		t.Fatalf("error = %#v, want exit 1 and a message saying the directory is read-only", err)
	}
}
