// Package pgtest gives tests a PostgreSQL database of their own. The server
// is named by NEXA_TEST_POSTGRES (a postgres:// URL, such as the one
// scripts/pg-test-cluster.sh prints). Without it a test is skipped, saying
// why, except in CI (CI set): there a missing server fails the test, so the
// PostgreSQL tests can never pass in CI by not running.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
)

// EnvVar names the server URL the tests use.
const EnvVar = "NEXA_TEST_POSTGRES"

// ServerURL returns NEXA_TEST_POSTGRES, or skips t (fails it under CI)
// when it is unset.
func ServerURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(EnvVar)
	if u == "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not set, but CI is: the PostgreSQL store must be tested in CI (scripts/pg-test-cluster.sh run …)", EnvVar)
		}
		t.Skipf("PostgreSQL store not tested: set %s to a server URL (scripts/pg-test-cluster.sh run go test … starts a throwaway one)", EnvVar)
	}
	return u
}

// Unavailable says why PostgreSQL tests cannot run ("" when they can) and
// whether that is a failure (under CI): for callers that are not a
// testing.TB, such as a testscript command.
func Unavailable() (reason string, fatal bool) {
	if os.Getenv(EnvVar) != "" {
		return "", false
	}
	if os.Getenv("CI") != "" {
		return EnvVar + " is not set, but CI is: the PostgreSQL store must be tested in CI", true
	}
	return "PostgreSQL store not tested: set " + EnvVar + " to a server URL (scripts/pg-test-cluster.sh run … starts a throwaway one)", false
}

// FreshURL makes a new, empty schema on the server and returns a URL whose
// connections use it (search_path), so every test has a database of its
// own; the schema is dropped when the test ends.
func FreshURL(t testing.TB) string {
	t.Helper()
	u, cleanup, err := NewSchema(context.Background(), ServerURL(t))
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(cleanup)
	return u
}

// NewSchema creates a schema with a random name on the server at base and
// returns base with search_path set to it, and a function that drops it.
func NewSchema(ctx context.Context, base string) (string, func(), error) {
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "nexa_test_" + hex.EncodeToString(b[:])
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return "", nil, err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+name); err != nil {
		return "", nil, err
	}
	pu, err := url.Parse(base)
	if err != nil {
		return "", nil, err
	}
	q := pu.Query()
	q.Set("search_path", name)
	pu.RawQuery = q.Encode()
	drop := func() {
		c, err := pgx.Connect(context.Background(), base)
		if err != nil {
			return
		}
		defer c.Close(context.Background())
		_, _ = c.Exec(context.Background(), "DROP SCHEMA "+name+" CASCADE")
	}
	return pu.String(), drop, nil
}
