package serve

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/nexa-run/nexa/internal/engine"
	"github.com/nexa-run/nexa/internal/state"
)

// chromium finds a Chromium binary. Without one the browser test is
// skipped with the reason, except under CI (CI set), where it must run.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no chromium binary in PATH under CI: .ci/run installs Debian's chromium package")
	}
	t.Skip("no chromium binary in PATH (install Debian's chromium package to run the browser test)")
	return ""
}

// completer stands in for `nexa agent --resume` in this test of the
// page's own behaviour (who decided, the reason, the conflict rules); the
// serve_browser story drives the real binary end to end — browser
// approval, then a real resume that executes the call once.
type completer struct {
	s    state.Store
	done chan struct{}
}

func (c completer) Resume(ctx context.Context, run *state.RunState) error {
	defer close(c.done)
	st, err := c.s.Load(ctx, run.ID)
	if err != nil {
		return err
	}
	st.Status = state.StatusCompleted
	st.Output = json.RawMessage(`"The review was recorded."`)
	return c.s.Save(ctx, st, state.Delta{})
}

// TestBrowserApprove drives a real headless Chromium through the inbox as
// a person would: open the inbox, open the waiting run, see the pending
// call with its arguments and risk, approve it, and see the run move on.
// With NEXA_SCREENSHOTS=DIR it also saves the screenshots of docs/serve.md.
func TestBrowserApprove(t *testing.T) {
	exe := chromium(t)
	s := newStore(t)
	// call_2 was denied from the command line; call_1 is left to decide.
	if _, err := engine.Decide(context.Background(), s, runID, []engine.Decision{{CallID: "call_2", Approve: false, Reason: "duplicate"}}); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	ts := newServer(t, s, Options{User: "dana", Execute: completer{s: s, done: done}, StoreName: ".nexa/runs.sqlite3"})

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox,
		chromedp.WindowSize(1000, 760), chromedp.Flag("disable-dev-shm-usage", true))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 90*time.Second)
	defer cancel()

	shots := os.Getenv("NEXA_SCREENSHOTS")
	shot := func(name string) {
		t.Helper()
		if shots == "" {
			return
		}
		png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatalf("screenshot: %v", err)
		}
		if err := os.WriteFile(filepath.Join(shots, name), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("browser: %v", err)
		}
	}
	text := func(sel chromedp.CSS) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Text(sel))
		must(err)
		return v
	}

	must(chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/")))
	inbox := text("main")
	shot("serve-inbox.png")
	click := func(sel chromedp.Action[chromedp.Void]) {
		t.Helper()
		// Wait for the page the click loads, not just for the click.
		_, err := chromedp.RunResponse(ctx, sel)
		must(err)
	}
	click(chromedp.Click(chromedp.CSS(`a[href="/runs/` + runID + `"]`)))
	must(chromedp.Do(ctx, chromedp.WaitVisible(chromedp.ID("approve-call_1"))))
	pending := text("#call-call_1")
	shot("serve-run.png")
	must(chromedp.Do(ctx, chromedp.SendKeys(chromedp.ID("reason-call_1"), "checked the diff")))
	click(chromedp.Click(chromedp.ID("approve-call_1")))
	must(chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`[role=status]`))))
	flash := text(`[role=status]`)
	if !strings.Contains(inbox, "waiting_approval") || !strings.Contains(inbox, runID) {
		t.Fatalf("inbox shows:\n%s", inbox)
	}
	for _, want := range []string{"record_review", "high", "Record reviewed text", `"content": "LGTM [REDACTED]"`} {
		if !strings.Contains(pending, want) {
			t.Fatalf("pending call lacks %q:\n%s", want, pending)
		}
	}
	if !strings.Contains(flash, "call call_1 approved by dana") {
		t.Fatalf("after approving: %q", flash)
	}
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("the server did not continue the run")
	}
	_, err := chromedp.RunResponse(ctx, chromedp.Reload())
	must(err)
	status, journal := text("#status"), text("#journal")
	if status != "completed" {
		t.Fatalf("status after approval: %q", status)
	}
	if !strings.Contains(journal, "approved by dana at 2026-12-01T09:30:00Z (checked the diff)") || !strings.Contains(journal, "(duplicate)") {
		t.Fatalf("journal:\n%s", journal)
	}
}
