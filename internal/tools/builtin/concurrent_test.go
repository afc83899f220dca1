package builtin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexa-run/nexa/internal/tool"
)

// lockedLog is one log shared by calls running at once, as the runtime's
// tool log is (its writes are serialized by the runtime).
type lockedLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// One Executor serves calls running at once, as the calls of one reply do
// under --max-parallel-tools: files, shell commands, HTTP requests (the
// server answers only once all of them arrived, so they overlap) and pure
// tools each get their own answer. Run under -race.
func TestCallsRunningAtOnce(t *testing.T) {
	const n = 6
	arrived := make(chan struct{})
	var (
		mu    sync.Mutex
		count int
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		count++
		if count == n {
			close(arrived)
		}
		mu.Unlock()
		select {
		case <-arrived:
			fmt.Fprintf(w, "got %s", r.URL.Path)
		case <-time.After(time.Minute): // only a guard against a hang
			http.Error(w, "the other requests never came", http.StatusGatewayTimeout)
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	ex := New(allowServer(t, srv.URL))
	log := &lockedLog{}
	run := func(i int, name string, args map[string]any) tool.Outcome {
		raw, err := json.Marshal(args)
		if err != nil {
			t.Error(err)
			return tool.Outcome{}
		}
		decl := toolFor(t, name)
		timeout := time.Duration(decl.Timeout) * time.Second
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		out, err := ex.Execute(ctx, tool.Invocation{RunID: "run1", CallID: fmt.Sprintf("call%d-%s", i, name), Tool: decl, Arguments: raw,
			WorkDir: dir, Timeout: timeout, Log: log})
		if err != nil || !out.Success {
			t.Errorf("call %d of %s: %+v, %v", i, name, out, err)
		}
		return out
	}
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			run(i, "file_write", map[string]any{"path": fmt.Sprintf("f-%d.txt", i), "content": fmt.Sprintf("content %d\n", i)})
			out := run(i, "shell_exec", map[string]any{"command": fmt.Sprintf("cat f-%d.txt; echo line-%d", i, i)})
			var res struct{ Stdout string }
			if err := json.Unmarshal([]byte(out.Output), &res); err != nil || res.Stdout != fmt.Sprintf("content %d\nline-%d\n", i, i) {
				t.Errorf("shell_exec %d: %q", i, out.Output)
			}
			if got := run(i, "file_read", map[string]any{"path": fmt.Sprintf("f-%d.txt", i)}).Output; got != fmt.Sprintf("content %d\n", i) {
				t.Errorf("file_read %d: %q", i, got)
			}
			if got := run(i, "math_calc", map[string]any{"expression": fmt.Sprintf("%d * 7", i)}).Output; got != fmt.Sprint(i*7) {
				t.Errorf("math_calc %d: %q", i, got)
			}
			sum := sha256.Sum256([]byte(fmt.Sprint("t-", i)))
			if got := run(i, "hash_sha256", map[string]any{"text": fmt.Sprint("t-", i), "encoding": "hex"}).Output; got != hex.EncodeToString(sum[:]) {
				t.Errorf("hash_sha256 %d: %q", i, got)
			}
		}()
		go func() {
			defer wg.Done()
			out := run(i, "http_get", map[string]any{"url": fmt.Sprintf("%s/path-%d", srv.URL, i), "timeout": 60})
			var res httpOut
			if err := json.Unmarshal([]byte(out.Output), &res); err != nil || res.Status != 200 || res.Body != fmt.Sprintf("got /path-%d", i) {
				t.Errorf("http_get %d: %q", i, out.Output)
			}
		}()
	}
	wg.Wait()
	// What each command printed reached the shared log.
	for i := 0; i < n; i++ {
		if want := fmt.Sprintf("line-%d\n", i); !strings.Contains(log.String(), want) {
			t.Errorf("the log lacks %q: %q", want, log.String())
		}
	}
}
