package storetest_test

import (
	"context"
	"testing"

	"github.com/nexa-run/nexa/internal/state"
	"github.com/nexa-run/nexa/internal/store/postgres"
	"github.com/nexa-run/nexa/internal/store/postgres/pgtest"
	"github.com/nexa-run/nexa/internal/store/sqlite"
	"github.com/nexa-run/nexa/internal/store/storetest"
)

// backends are the stores the contract runs against, as one table: every
// behaviour of storetest runs on each, each test on a fresh database
// (a new SQLite file, a new PostgreSQL schema), each handle a separate
// connection as separate processes would have.
var backends = []struct {
	name string
	new  storetest.NewStore
}{
	{"sqlite", func(t *testing.T) func() state.Store {
		path := sqlite.DefaultPath(t.TempDir())
		return func() state.Store {
			s, err := sqlite.Open(context.Background(), path)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			return s
		}
	}},
	{"postgres", func(t *testing.T) func() state.Store {
		u := pgtest.FreshURL(t)
		return func() state.Store {
			s, err := postgres.Open(context.Background(), u)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			return s
		}
	}},
}

// TestContract runs the store contract on every backend.
func TestContract(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { storetest.Run(t, b.new) })
	}
}
