package store

import (
	"context"
	"testing"

	"github.com/nexa-run/nexa/internal/runtime/state"
	"github.com/nexa-run/nexa/internal/store/storetest"
)

// TestContract runs the store contract on SQLite, each handle a separate
// *SQLite on one file, as separate processes would have.
func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) func() state.Store {
		path := DefaultPath(t.TempDir())
		return func() state.Store {
			s, err := Open(context.Background(), path)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			return s
		}
	})
}
