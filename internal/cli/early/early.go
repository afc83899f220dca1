// Package early starts the slowest part of a resume, reading its run from
// the store, while the process is still initialising its packages.
//
// A resume of a long run spends most of its own time reading the run
// (every provider request carries the whole conversation), and a fresh
// nexa process spends about 20 ms initialising the packages it links, on
// one core, before main runs. This package is initialised as soon as the
// store's packages are: when the command line reads as `nexa agent …
// --resume RUN` with a SQLite store that exists, its init opens the store
// (store.OnlyIfCurrent: nothing is created, written or migrated) and
// starts reading the run on another goroutine, while the remaining
// packages initialise and the command then compiles its program.
//
// The command line is read here before cobra parses it, so what it finds
// is a guess: the command takes the store and the read (Take) only when
// they are the store and the run it resolved itself, and otherwise opens
// its store as it would have. The runtime checks the read against the
// run's revision once it holds the run's lease, as it does for any read
// ahead (runtime.Preload).
package early

import (
	"context"
	"os"
	"strings"
	"sync/atomic"

	"github.com/nexa-run/nexa/internal/lategc"
	"github.com/nexa-run/nexa/internal/runtime/state"
	"github.com/nexa-run/nexa/internal/store"
	"github.com/nexa-run/nexa/internal/store/pgstore"
)

// ahead is a store opened, and a run being read from it, before main.
type ahead struct {
	path, runID string

	opened  chan struct{} // closed once st and openErr are set
	st      *store.SQLite
	openErr error

	read    chan struct{} // closed once run and readErr are set
	run     *state.RunState
	readErr error
}

// pending is the read this process started, until a command takes it.
var pending atomic.Pointer[ahead]

func init() {
	if a := start(os.Args[1:], os.Getenv, os.Getwd); a != nil {
		pending.Store(a)
	}
}

// start opens the store and starts the read that args (a command line
// without the program's name) would resume, if it is a resume of a
// SQLite store; nil if not.
func start(args []string, getenv func(string) string, getwd func() (string, error)) *ahead {
	runID, name, ok := guess(args)
	if !ok {
		return nil
	}
	if name == "" {
		name = getenv("NEXA_STORE")
	}
	if pgstore.IsURL(name) {
		return nil
	}
	wd, err := getwd()
	if err != nil {
		return nil
	}
	a := &ahead{path: store.Locate(name, wd), runID: runID, opened: make(chan struct{}), read: make(chan struct{})}
	if _, err := os.Stat(a.path); err != nil {
		return nil // a resume never creates a store; the command reports it
	}
	// The read's allocations come before main's own call; the first
	// call decides (lategc.Start).
	lategc.Start(lategc.Default)
	go a.open()
	return a
}

// open opens the store, then reads the run as a drive does.
func (a *ahead) open() {
	defer close(a.read)
	a.st, a.openErr = store.Open(context.Background(), a.path, store.OnlyIfCurrent())
	close(a.opened)
	if a.openErr != nil {
		return
	}
	a.run, a.readErr = a.st.LoadForDrive(context.Background(), a.runID)
}

// guess reads args as `agent … --resume RUN [--store NAME] …` would be
// parsed: the run to resume and the store's name as given ("" when there
// is no --store), or ok false for any other command line. Every flag of
// nexa agent but --no-stream, --quiet (-q) and --help (-h) takes a value,
// as the next argument unless it is joined with "=".
func guess(args []string) (runID, storeName string, ok bool) {
	if len(args) == 0 || args[0] != "agent" {
		return "", "", false
	}
	for i := 1; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			break
		}
		if !strings.HasPrefix(arg, "--") {
			continue // an argument, or a short flag (-q, -h) that takes none
		}
		name, value, joined := strings.Cut(arg[2:], "=")
		if !joined {
			switch name {
			case "no-stream", "quiet", "help":
				continue
			}
			if i+1 == len(args) {
				break
			}
			i++
			value = args[i]
		}
		switch name {
		case "resume":
			runID = value
		case "store":
			storeName = value
		}
	}
	return runID, storeName, runID != ""
}

// Take gives a resume of run runID from the SQLite store at path the store
// opened for it before main and a function that waits for the run's read
// and gives its result (what the store's LoadForDrive gave). It gives nil
// when nothing was started for that store and run, or the store could not
// be opened without changing it; the command then opens its store itself.
// It waits for the open, not the read, and gives the store once: from then
// on the caller closes it, after the read has ended.
func Take(path, runID string) (*store.SQLite, func() (*state.RunState, error)) {
	a := pending.Swap(nil)
	if a == nil {
		return nil, nil
	}
	if a.path != path || a.runID != runID {
		go a.close()
		return nil, nil
	}
	<-a.opened
	if a.openErr != nil {
		return nil, nil
	}
	return a.st, func() (*state.RunState, error) {
		<-a.read
		return a.run, a.readErr
	}
}

// close closes a store nobody took, once its read has ended.
func (a *ahead) close() {
	<-a.read
	if a.st != nil {
		a.st.Close()
	}
}
