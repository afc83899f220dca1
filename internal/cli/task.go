package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"
)

// maxTaskBytes bounds a task read from standard input or from @FILE
// (docs/reference/cli.md#size-limits): a task is a prompt, and a larger one
// is almost always a mistake such as a device or the wrong file.
const maxTaskBytes = 1 << 20

// isTerminalReader reports whether r is a terminal, so that nexa does not
// wait for a person to type a task they were never asked for.
func isTerminalReader(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && isTerminal(f)
}

// readTask gives the task of a new run from the arguments after FILE AGENT:
// the text itself, "-" for standard input, "@FILE" for a file's contents,
// or, with no task argument and standard input not a terminal, standard
// input. given is false when there is no task at all (standard input is a
// terminal). The text is returned as given, trailing newline included;
// errors are usage errors for the caller to report.
func readTask(e *env, args []string) (task string, given bool, err error) {
	if len(args) == 0 {
		if e.stdin == nil || isTerminalReader(e.stdin) {
			return "", false, nil
		}
		t, err := readTaskFrom(e.stdin, "standard input")
		return t, true, err
	}
	a := args[0]
	switch {
	case a == "-":
		if e.stdin == nil {
			return "", true, fmt.Errorf("the task is '-' (standard input), but there is no standard input")
		}
		t, err := readTaskFrom(e.stdin, "standard input")
		return t, true, err
	case strings.HasPrefix(a, "@"):
		name := a[1:]
		if name == "" {
			return "", true, fmt.Errorf("the task '@' names no file: give @FILE, or '-' for standard input")
		}
		fi, err := os.Stat(name)
		if err != nil {
			return "", true, fmt.Errorf("task %s: cannot read %s: %v (a task that starts with @ names a file; pipe such a task on standard input)", a, name, unwrapPathError(err))
		}
		if fi.IsDir() {
			return "", true, fmt.Errorf("task %s: %s is a directory, not a file", a, name)
		}
		fh, err := os.Open(name)
		if err != nil {
			return "", true, fmt.Errorf("task %s: cannot read %s: %v", a, name, unwrapPathError(err))
		}
		defer fh.Close()
		t, err := readTaskFrom(fh, name)
		return t, true, err
	}
	return a, true, checkTaskText(a, "the task")
}

// readTaskFrom reads at most maxTaskBytes of a task from r, named what in
// errors.
func readTaskFrom(r io.Reader, what string) (string, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxTaskBytes+1))
	if err != nil {
		return "", fmt.Errorf("reading the task from %s: %v", what, err)
	}
	if len(b) > maxTaskBytes {
		return "", fmt.Errorf("the task in %s is over %d MiB, the limit for a task", what, maxTaskBytes>>20)
	}
	t := string(b)
	return t, checkTaskText(t, "the task in "+what)
}

// checkTaskText refuses text a model could not be given: it must be UTF-8,
// and not only white space.
func checkTaskText(t, what string) error {
	if !utf8.ValidString(t) {
		return fmt.Errorf("%s is not UTF-8 text", what)
	}
	if strings.TrimSpace(t) == "" {
		return fmt.Errorf("the task text is empty")
	}
	return nil
}

// unwrapPathError drops the operation and path of an *os.PathError, which
// the message around it already names.
func unwrapPathError(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}
