package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"

	"github.com/chromedp/chromedp"
	"github.com/rogpeppe/go-internal/testscript"
)

// chromiumPath finds a headless-capable Chromium: Debian's chromium
// package, which .ci/run installs.
func chromiumPath() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// chromiumCondition is the [chromium] condition of the stories: true when
// a Chromium is installed. Under CI (CI set) a missing Chromium is an
// error, not a skip: the browser stories must run there.
func chromiumCondition() (bool, error) {
	if chromiumPath() != "" {
		return true, nil
	}
	if os.Getenv("CI") != "" {
		return false, errors.New("no chromium binary in PATH under CI: .ci/run installs Debian's chromium package")
	}
	return false, nil
}

// cmdBrowserApprove: browser-approve BASEURL RUN CALL REASON does what a
// person does in the inbox of nexa serve, in a real headless Chromium:
// open the inbox, follow the link to the run, read the pending call, type
// the reason, press Approve and wait for the confirmation. It prints the
// inbox, the pending call and the confirmation on stdout, one per line
// group, for the story to check.
func cmdBrowserApprove(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 4 {
		ts.Fatalf("usage: browser-approve BASEURL RUN CALL REASON")
	}
	base, run, call, reason := args[0], args[1], args[2], args[3]
	exe := chromiumPath()
	if exe == "" {
		ts.Fatalf("no chromium binary in PATH")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox,
		chromedp.Flag("disable-dev-shm-usage", true))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, procBound)
	defer cancel()
	must := func(what string, err error) {
		if err != nil {
			ts.Fatalf("browser: %s: %v", what, err)
		}
	}
	text := func(sel string) string {
		v, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		must("read "+sel, err)
		return v
	}
	// The server may still be starting: the http command of the story has
	// waited for it before this runs.
	_, err := chromedp.RunResponse(ctx, chromedp.Navigate(base+"/"))
	must("open the inbox", err)
	inbox := text("main")
	_, err = chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(`a[href="/runs/`+run+`"]`)))
	must("open the run", err)
	must("see the call", chromedp.Do(ctx, chromedp.WaitVisible(chromedp.ID("approve-"+call))))
	pending := text("#call-" + call)
	must("type the reason", chromedp.Do(ctx, chromedp.SendKeys(chromedp.ID("reason-"+call), reason)))
	_, err = chromedp.RunResponse(ctx, chromedp.Click(chromedp.ID("approve-"+call)))
	must("approve", err)
	must("see the confirmation", chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`[role=status]`))))
	flash := text(`[role=status]`)
	for _, s := range []string{"== inbox", inbox, "== pending", pending, "== confirmation", flash} {
		ts.Stdout().Write([]byte(strings.TrimSpace(s) + "\n"))
	}
}
