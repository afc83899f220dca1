package mcptool

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// filesystemServer finds the published @modelcontextprotocol/server-filesystem
// package: NEXA_TEST_MCP_FILESYSTEM (its dist/index.js, or an executable),
// then mcp-server-filesystem on PATH, then the global npm root. It returns
// the command words to start it, or "" and why not.
func filesystemServer(t *testing.T) ([]string, string) {
	t.Helper()
	if p := os.Getenv("NEXA_TEST_MCP_FILESYSTEM"); p != "" {
		if strings.HasSuffix(p, ".js") {
			node, err := exec.LookPath("node")
			if err != nil {
				return nil, "NEXA_TEST_MCP_FILESYSTEM names a .js file but node is not installed"
			}
			return []string{node, p}, ""
		}
		return []string{p}, ""
	}
	if p, err := exec.LookPath("mcp-server-filesystem"); err == nil {
		return []string{p}, ""
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, "node is not installed"
	}
	if npm, err := exec.LookPath("npm"); err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if out, err := exec.CommandContext(ctx, npm, "root", "-g").Output(); err == nil {
			entry := filepath.Join(strings.TrimSpace(string(out)), "@modelcontextprotocol", "server-filesystem", "dist", "index.js")
			if _, err := os.Stat(entry); err == nil {
				return []string{node, entry}, ""
			}
		}
	}
	return nil, "@modelcontextprotocol/server-filesystem is not installed"
}

// TestFilesystemServer runs the real, published reference server over
// stdio: tool listing, risk mapping of its annotations, and calls.
func TestFilesystemServer(t *testing.T) {
	words, why := filesystemServer(t)
	if words == nil {
		t.Skipf("%s; to run this test: npm install -g @modelcontextprotocol/server-filesystem (or set NEXA_TEST_MCP_FILESYSTEM to its dist/index.js)", why)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello from nexa\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	var quoted []string
	for _, w := range append(words, dir) {
		quoted = append(quoted, shellQuote(w))
	}
	opts, log := testOptions(t)
	opts.WorkDir = dir
	opts.ConnectTimeout = 30 * time.Second
	// Marked trusted: this test is about how its annotations map.
	s := connect(t, "stdio:trust=annotations "+strings.Join(quoted, " "), opts)
	name, version := s.Info()
	t.Logf("%s %s: %d tools, %s", name, version, len(s.Tools()), s.SchemaHash())

	// Risk from the server's own annotations, as it is trusted.
	for tool, want := range map[string]string{
		"read_text_file":   RiskLow,    // readOnlyHint: true
		"list_directory":   RiskLow,    // readOnlyHint: true
		"create_directory": RiskMedium, // destructiveHint: false
		"write_file":       RiskHigh,   // destructiveHint: true
		"move_file":        RiskHigh,
	} {
		ti, ok := s.Tool(tool)
		if !ok {
			t.Errorf("the server offers no %s (it offers %s)", tool, s.toolList())
			continue
		}
		if ti.Risk != want {
			t.Errorf("risk of %s = %s, want %s (annotations %+v)", tool, ti.Risk, want, ti.Annotations)
		}
		var schema map[string]any
		if err := json.Unmarshal(ti.InputSchema, &schema); err != nil || schema["type"] != "object" {
			t.Errorf("schema of %s = %s", tool, ti.InputSchema)
		}
	}
	if ti, _ := s.Tool("create_directory"); !ti.Idempotent {
		t.Error("create_directory: idempotentHint lost")
	}

	path, _ := json.Marshal(map[string]string{"path": filepath.Join(dir, "hello.txt")})
	out := mustCall(t, s, "read_text_file", string(path))
	if !out.Success || !strings.Contains(out.Output, "hello from nexa") {
		t.Errorf("read_text_file = %+v", out)
	}
	dirArg, _ := json.Marshal(map[string]string{"path": dir})
	out = mustCall(t, s, "list_directory", string(dirArg))
	if !out.Success || !strings.Contains(out.Output, "hello.txt") || !strings.Contains(out.Output, "sub") {
		t.Errorf("list_directory = %+v", out)
	}
	// Outside its allowed directory: an error result, a known outcome.
	outside, _ := json.Marshal(map[string]string{"path": "/etc/hostname"})
	out = mustCall(t, s, "read_text_file", string(outside))
	if out.Success {
		t.Errorf("read outside the allowed directory succeeded: %+v", out)
	}
	if err := s.Close(); err != nil {
		t.Errorf("close: %v (log: %s)", err, log.String())
	}
	if !processGone(s.child.pid, 2*time.Second) {
		t.Errorf("filesystem server %d survived Close", s.child.pid)
	}
}
