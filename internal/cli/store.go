package cli

import (
	"errors"
	"fmt"
	"os"

	"github.com/nexa-run/nexa/internal/engine"
	"github.com/nexa-run/nexa/internal/session"
)

// openStoreForCommand opens the run store for a command that reports
// failures only as an exit code and a message (runs, serve): the working
// directory is the one the process runs in.
func openStoreForCommand(e *env, flag string, create bool) (session.Store, error) {
	wd, err := os.Getwd()
	if err != nil {
		return nil, &exitError{code: ExitFailed, msg: fmt.Sprintf("working directory: %v", err)}
	}
	s, err := session.OpenStore(sessionEnv(e), flag, wd, create)
	if err != nil {
		var se *session.StoreError
		if errors.As(err, &se) && se.Usage {
			return nil, &exitError{code: ExitUsage, msg: se.Msg, errCode: se.Code}
		}
		return nil, &exitError{code: ExitFailed, msg: err.Error(), errCode: engine.CodeStoreError}
	}
	return s, nil
}

// storeName is --store, else NEXA_STORE, as given.
func storeName(e *env, flag string) string { return session.StoreName(sessionEnv(e), flag) }
