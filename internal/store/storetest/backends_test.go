package storetest_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

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
	{"sqlite", func(t *testing.T) (func() state.Store, storetest.Clock) {
		path := sqlite.DefaultPath(t.TempDir())
		// Every handle reads the one clock the suite moves. It starts
		// after the fixed instants the suite's runs are created at.
		clock := storetest.NewManualClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
		return func() state.Store {
			s, err := sqlite.Open(context.Background(), path, sqlite.WithClock(clock.Now))
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			return s
		}, clock
	}},
	{"postgres", func(t *testing.T) (func() state.Store, storetest.Clock) {
		u := pgtest.FreshURL(t)
		return func() state.Store {
			s, err := postgres.Open(context.Background(), u)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			return s
		}, pgClock{t: t, url: u}
	}},
}

// pgClock is the PostgreSQL store's clock, the database's now(). A test
// cannot move that clock, so Advance ages every stored lease and wake-up
// by d instead, which is the same to them (a lease is held while its
// expiry is after now(), a waiting run wakes once its wake_at is not).
type pgClock struct {
	t   *testing.T
	url string
}

// exec runs one statement of the clock on a connection of its own.
func (c pgClock) exec(f func(ctx context.Context, conn *pgx.Conn) error) {
	c.t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, c.url)
	if err != nil {
		c.t.Fatalf("the database clock: %v", err)
	}
	defer conn.Close(ctx)
	if err := f(ctx, conn); err != nil {
		c.t.Fatalf("the database clock: %v", err)
	}
}

func (c pgClock) Now() time.Time {
	c.t.Helper()
	var now time.Time
	c.exec(func(ctx context.Context, conn *pgx.Conn) error {
		return conn.QueryRow(ctx, `SELECT now()`).Scan(&now)
	})
	return now
}

func (c pgClock) Advance(d time.Duration) {
	c.t.Helper()
	c.exec(func(ctx context.Context, conn *pgx.Conn) error {
		_, err := conn.Exec(ctx, `UPDATE nexa_runs SET lease_expires = lease_expires - $1::bigint * interval '1 microsecond',
			wake_at = wake_at - $1::bigint * interval '1 microsecond'
			WHERE lease_expires IS NOT NULL OR wake_at IS NOT NULL`, d.Microseconds())
		return err
	})
}

// TestContract runs the store contract on every backend.
func TestContract(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { storetest.Run(t, b.new) })
	}
}
