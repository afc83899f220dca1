package main

import (
	"context"
	"errors"
	"net/url"
	"os"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/nexa-run/nexa/internal/store/postgres"
	"github.com/nexa-run/nexa/internal/store/postgres/pgtest"
)

// pgCondition is the story condition [postgres]: true when
// NEXA_TEST_POSTGRES names a server. Without one it is false, so a story
// can `[!postgres] skip` with its reason, except under CI, where it is an
// error that fails the story: in CI the PostgreSQL stories must run.
func pgCondition() (bool, error) {
	why, fatal := pgtest.Unavailable()
	if fatal {
		return false, errors.New(why)
	}
	return why == "", nil
}

// cmdPGStore: pgstore points the story at a PostgreSQL database of its own
// (a fresh schema on the server of NEXA_TEST_POSTGRES, dropped at the end):
// it sets $NEXA_STORE to its URL and $PGPW to its password, so the story
// can check the password is never printed.
func cmdPGStore(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: pgstore")
	}
	if why, _ := pgtest.Unavailable(); why != "" {
		ts.Fatalf("%s", why)
	}
	ctx, cancel := context.WithTimeout(context.Background(), procBound)
	defer cancel()
	u, drop, err := pgtest.NewSchema(ctx, os.Getenv(pgtest.EnvVar))
	if err != nil {
		ts.Fatalf("pgstore: %v", err)
	}
	ts.Defer(drop)
	pu, err := url.Parse(u)
	if err != nil {
		ts.Fatalf("pgstore: %v", err)
	}
	pw, ok := pu.User.Password()
	if !ok || len(pw) < 8 {
		ts.Fatalf("pgstore: the stories need a server URL with a password of 8 or more characters, to check it is never printed")
	}
	ts.Setenv("NEXA_STORE", u)
	ts.Setenv("PGPW", pw)
}

// cmdLeaseFree: leasefree RUN waits until no live lease holds RUN in the
// store of $NEXA_STORE (a killed executor's lease expiring on the database
// clock), failing after procBound.
func cmdLeaseFree(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: leasefree RUN")
	}
	ctx := context.Background()
	s, err := postgres.Open(ctx, ts.Getenv("NEXA_STORE"))
	if err != nil {
		ts.Fatalf("leasefree: %v", err)
	}
	defer s.Close()
	for deadline := time.Now().Add(procBound); ; {
		st, err := s.Load(ctx, args[0])
		if err != nil {
			ts.Fatalf("leasefree: %v", err)
		}
		if st.Holder == nil {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("run %s still held by %s after %s", args[0], st.Holder.Owner, procBound)
		}
		time.Sleep(20 * time.Millisecond) // polling the database clock, capped above
	}
}
