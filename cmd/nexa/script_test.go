package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/nexa-run/nexa/internal/proctree"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"unicode/utf8"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/nexa-run/nexa/internal/cli"
	"github.com/nexa-run/nexa/internal/procenv"
)

// TestMain lets the test binary act as the nexa command inside scripts (and
// in PATH for commands the scripts start through a shell).
func TestMain(m *testing.M) {
	proctree.RunIfSupervisor() // the nexa commands' tools are supervised by this binary
	testscript.Main(m, map[string]func(){
		"nexa": func() {
			_ = procenv.HideSecrets() // as main does, first
			os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
		},
		"nexa-notes-server": notesServer,
		"nexa-tasks-server": tasksServer,
	})
}

// TestScripts runs the end-to-end stories in testdata/scripts.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "../../testdata/scripts",
		Setup: func(e *testscript.Env) error {
			e.Setenv("NO_COLOR", "1")
			e.Setenv("HOME", e.WorkDir)
			return nil
		},
		Condition: func(cond string) (bool, error) {
			switch cond {
			case "postgres":
				return pgCondition()
			case "chromium":
				return chromiumCondition()
			case "testknobs":
				return testKnobsCondition()
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"capture":         cmdCapture,
			"jsonis":          cmdJSONIs,
			"jsonlines":       cmdJSONLines,
			"exits":           cmdExits,
			"fakemodel":       cmdFakeModel,
			"fakerequest":     cmdFakeRequest,
			"sameprefix":      cmdSamePrefix,
			"httpsink":        cmdHTTPSink,
			"httpredirect":    cmdHTTPRedirect,
			"notes-http":      cmdNotesHTTP,
			"mcp-oauth-http":  cmdMCPOAuthHTTP,
			"waitfile":        cmdWaitFile,
			"pidsdead":        cmdPidsDead,
			"marked":          cmdMarked,
			"freeport":        cmdFreePort,
			"http":            cmdHTTP,
			"promtext":        cmdPromText,
			"otlpsink":        cmdOTLPSink,
			"pgstore":         cmdPGStore,
			"leasefree":       cmdLeaseFree,
			"browser-approve": cmdBrowserApprove,
		},
	})
}

// lookupJSON follows a dotted path (keys and list indexes) into the JSON
// the previous command printed on stdout, which must be JSON that strict
// parsers accept: Go's decoder lets bytes that are not UTF-8 through.
func lookupJSON(ts *testscript.TestScript, path string) (any, bool) {
	var v any
	out := ts.ReadFile("stdout")
	if !utf8.ValidString(out) {
		ts.Fatalf("stdout is not valid UTF-8, so not valid JSON")
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		ts.Fatalf("stdout is not one JSON value: %v", err)
	}
	return walkJSON(v, path)
}

func render(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// cmdCapture: capture VAR PATH sets $VAR to the value at PATH of stdout's
// JSON, so a script can use a run id it did not choose.
func cmdCapture(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: capture VAR PATH")
	}
	v, ok := lookupJSON(ts, args[1])
	if !ok {
		ts.Fatalf("stdout JSON has no %s", args[1])
	}
	ts.Setenv(args[0], render(v))
}

// cmdJSONIs: jsonis PATH VALUE checks the value at PATH of stdout's JSON
// (strings compare as text, anything else as compact JSON); "! jsonis PATH"
// checks PATH is absent.
func cmdJSONIs(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		if len(args) != 1 {
			ts.Fatalf("usage: ! jsonis PATH")
		}
		if v, ok := lookupJSON(ts, args[0]); ok {
			ts.Fatalf("stdout JSON has %s = %s, want it absent", args[0], render(v))
		}
		return
	}
	if len(args) != 2 {
		ts.Fatalf("usage: jsonis PATH VALUE")
	}
	v, ok := lookupJSON(ts, args[0])
	if !ok {
		ts.Fatalf("stdout JSON has no %s", args[0])
	}
	if got := render(v); got != args[1] {
		ts.Fatalf("%s = %s, want %s", args[0], got, args[1])
	}
}

// cmdExits: exits N PROGRAM ARGS... runs a program and checks its exit code,
// since exit codes are part of nexa's contract.
func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exits CODE PROGRAM [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exits: bad code %q", args[0])
	}
	err = ts.Exec(args[1], args[2:]...)
	got := 0
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("exits: %v", err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited with %d, want %d", args[1], got, want)
	}
}
