// Command soak is nexa's soak test: `make soak` runs a long round, and
// .ci/run a short one. Against a throwaway PostgreSQL cluster it starts
// itself (scripts/pg-test-cluster.sh), it keeps N `nexa worker` processes
// busy with M runs submitted with `nexa agent … --detach`, and meanwhile, at
// random but from a printed seed, it
//
//   - kills a worker with kill -9 and starts it again,
//   - crashes PostgreSQL (pg_ctl stop -m immediate) and starts it again,
//   - races the decision of every call that needs one: several `nexa runs
//     approve` processes at once, approving or denying,
//   - prunes completed runs (`nexa runs prune`) while the others run,
//
// and resolves every call a crash cut off (`nexa runs resolve`) as an
// operator would: from the tool's own side effect. Each tool call appends
// one line to a mark file named after its run and call, so the marks, not
// the journal, say what executed. At the end the workers are drained and
// the soak checks that no call executed twice, that every executed call
// has exactly one mark and every denied or not-executed one none, that no
// run was lost or left stuck, and that no lease is held. It prints one
// summary line of figures (docs/guarantees.md quotes it) and exits 1 on any
// violation, keeping its directory for the post-mortem.
//
// It is a program rather than a test because it kills processes and a
// database for as long as it is asked to, takes its size and seed from
// flags, and must never be started by `go test ./...`. The nexa binary it
// drives must be a test build (-tags nexatest): the workers take a one
// second lease (NEXA_TEST_LEASE_TTL), so a killed worker's runs are rescued
// within the round.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"
)

// config is what the flags set.
type config struct {
	nexa        string
	cluster     string
	seed        int64
	runs        int
	workers     int
	concurrency int
	deciders    int
	chaos       time.Duration
	timeout     time.Duration
	keep        bool
}

func main() {
	var c config
	flag.StringVar(&c.nexa, "nexa", "", "the nexa binary to drive, built with -tags nexatest (required)")
	flag.StringVar(&c.cluster, "cluster", "scripts/pg-test-cluster.sh", "the throwaway PostgreSQL cluster script")
	flag.Int64Var(&c.seed, "seed", 0, "seed of the random choices (0: from the clock; printed either way)")
	flag.IntVar(&c.runs, "runs", 60, "runs to submit and drain")
	flag.IntVar(&c.workers, "workers", 3, "nexa worker processes")
	flag.IntVar(&c.concurrency, "concurrency", 4, "runs each worker drives at once")
	flag.IntVar(&c.deciders, "deciders", 3, "nexa runs approve processes racing each decision")
	flag.DurationVar(&c.chaos, "chaos", time.Second, "mean pause between two disruptions (kills, crashes, prunes)")
	flag.DurationVar(&c.timeout, "timeout", 10*time.Minute, "hang guard: runs not stopped by then are reported stuck")
	flag.BoolVar(&c.keep, "keep", false, "keep the soak's directory even when every check passes")
	flag.Parse()
	if flag.NArg() > 0 || c.nexa == "" || c.runs < 1 || c.workers < 1 || c.concurrency < 1 || c.deciders < 1 || c.chaos <= 0 || c.timeout <= 0 {
		fmt.Fprintln(os.Stderr, "usage: soak -nexa PATH [-runs M] [-workers N] [-seed S] [-chaos D] [-timeout D] (see -h)")
		os.Exit(2)
	}
	if c.seed == 0 {
		c.seed = time.Now().UnixNano()
	}
	for _, p := range []*string{&c.nexa, &c.cluster} {
		abs, err := filepath.Abs(*p)
		if err != nil {
			fmt.Fprintf(os.Stderr, "soak: %v\n", err)
			os.Exit(2)
		}
		*p = abs
	}
	if out, err := exec.Command(c.nexa, "version").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "soak: %s does not run: %v\n%s", c.nexa, err, out)
		os.Exit(2)
	}
	fmt.Printf("soak: seed %d (repeat with -seed %d), %d runs, %d workers\n", c.seed, c.seed, c.runs, c.workers)
	rep, err := run(context.Background(), c)
	if rep != nil {
		fmt.Println(rep.line())
		whys := slices.Sorted(maps.Keys(rep.driveWhy))
		for _, why := range whys {
			fmt.Printf("  a drive ended with an error %d times: %s\n", rep.driveWhy[why], why)
		}
		for _, v := range rep.violations {
			fmt.Println("VIOLATION:", v)
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "soak: %v\n", err)
	}
	if err != nil || rep == nil || len(rep.violations) > 0 {
		if errors.Is(err, errUsage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}
