package session

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func envWith(name, v string) Env {
	return Env{Getenv: func(k string) string {
		if k == name {
			return v
		}
		return ""
	}}
}

// TestTimeoutVariablesShareTheDurationGrammar: the timeout variables read
// the forms of --timeout (package duration).
func TestTimeoutVariablesShareTheDurationGrammar(t *testing.T) {
	forms := []struct {
		in   string
		want time.Duration
	}{
		{"900", 900 * time.Second},
		{"15m", 15 * time.Minute},
		{"2d", 48 * time.Hour},
		{"90 minutes", 90 * time.Minute},
	}
	for _, f := range forms {
		if d, err := mcpConnectTimeout(envWith("NEXA_MCP_CONNECT_TIMEOUT", f.in)); err != nil || d != f.want {
			t.Errorf("NEXA_MCP_CONNECT_TIMEOUT %q = %v, %v; want %v", f.in, d, err, f.want)
		}
		if to, err := providerTimeouts(envWith("NEXA_PROVIDER_TIMEOUT", f.in)); err != nil || to.Request != f.want {
			t.Errorf("NEXA_PROVIDER_TIMEOUT %q = %v, %v; want %v", f.in, to.Request, err, f.want)
		}
	}
	if to, err := providerTimeouts(envWith("NEXA_PROVIDER_TIMEOUT", "off")); err != nil || to.Request != -1 {
		t.Errorf("NEXA_PROVIDER_TIMEOUT off = %v, %v", to.Request, err)
	}
	if _, err := mcpConnectTimeout(envWith("NEXA_MCP_CONNECT_TIMEOUT", "soon")); err == nil {
		t.Error("NEXA_MCP_CONNECT_TIMEOUT soon was accepted")
	}
}

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
	_, err := OpenStore(Env{}, filepath.Join(dir, "runs.sqlite3"), dir, true)
	if err == nil {
		t.Fatal("opening a store in a read-only directory succeeded")
	}
	se, ok := err.(*StoreError)
	if !ok || se.Usage || !strings.Contains(se.Msg, "read-only") {
		t.Fatalf("error = %#v, want an operational error saying the directory is read-only", err)
	}
}
