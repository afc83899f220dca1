package cli

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/nexa-run/nexa/internal/engine"
)

// respondSep joins the call id and the answer of one --respond in the
// flag's value: --respond takes two words (CALL_ID ANSWER), which the
// flag parser cannot, so pairRespondArgs joins them before it runs. A NUL
// never comes from a command line, so it cannot be part of either word.
const respondSep = "\x00"

// pairRespondArgs joins each --respond CALL_ID ANSWER of a command line
// into one flag value (CALL_ID NUL ANSWER), up to a "--" that ends the
// flags. A --respond without both words is left as it is, and the command
// refuses it (readResponse).
func pairRespondArgs(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return append(out, args[i:]...)
		case a == "--respond" && i+2 < len(args):
			out = append(out, a, args[i+1]+respondSep+args[i+2])
			i += 2
		case strings.HasPrefix(a, "--respond=") && i+1 < len(args):
			out = append(out, a+respondSep+args[i+1])
			i++
		default:
			out = append(out, a)
		}
	}
	return out
}

// maxResponseBytes bounds an answer read from a file, as nexa serve bounds
// a request body.
const maxResponseBytes = 1 << 20

// readResponse reads one --respond value (CALL_ID NUL ANSWER): the answer
// as given, or the content of @FILE (@- standard input).
func readResponse(e *env, v string) (engine.Response, error) {
	call, answer, ok := strings.Cut(v, respondSep)
	if !ok || call == "" || strings.HasPrefix(call, "-") {
		return engine.Response{}, fmt.Errorf("--respond takes a call id and its answer: --respond CALL_ID JSON|@FILE|done|decline (got %q)", strings.ReplaceAll(v, respondSep, " "))
	}
	b, err := readAnswer(e, "--respond "+call, answer)
	if err != nil {
		return engine.Response{}, err
	}
	return engine.Response{CallID: call, Answer: string(b)}, nil
}

// readAnswer reads an answer given as text or @FILE (@-: standard input),
// at most maxResponseBytes.
func readAnswer(e *env, what, v string) ([]byte, error) {
	if !strings.HasPrefix(v, "@") {
		return []byte(v), nil
	}
	name := v[1:]
	var r io.Reader
	if name == "-" {
		r = e.stdin
	} else {
		f, err := os.Open(name)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %v", what, v, err)
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, maxResponseBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s %s: %v", what, v, err)
	}
	if len(b) > maxResponseBytes {
		return nil, fmt.Errorf("%s %s is over %d bytes; an answer is at most 1 MiB", what, v, maxResponseBytes)
	}
	return b, nil
}
