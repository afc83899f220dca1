package main

import (
	"os"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/nexa-run/nexa/internal/cli"
)

// TestMain lets the test binary act as the nexa command inside scripts.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"nexa": func() { os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) },
	})
}

// TestScripts runs the end-to-end stories in testdata/scripts.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "../../testdata/scripts",
		RequireExplicitExec: false,
		Setup: func(e *testscript.Env) error {
			e.Setenv("NO_COLOR", "1")
			e.Setenv("HOME", e.WorkDir)
			return nil
		},
	})
}
