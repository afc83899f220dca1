package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nexa-run/nexa/internal/engine"
	"github.com/nexa-run/nexa/internal/state"
	"github.com/nexa-run/nexa/internal/store/postgres"
)

var errUsage = errors.New("usage error")

// The program every run is of. Both tools append one line to the mark
// file of their run and call, then take a little time, so that a kill
// lands now before the mark, now after it. MARKS is replaced by the
// absolute directory of the marks: the workers run in directories of
// their own, and the program must be the same bytes (the same hash) in
// each.
const program = `@tool("Mark this call as executed")
fn mark(n: int): string {
    python! """
import os, time
p = os.path.join(MARKS, os.environ["NEXA_RUN_ID"] + "." + os.environ["NEXA_CALL_ID"])
with open(p, "a") as f:
    f.write("executed\n")
time.sleep(0.02)
return "marked"
"""
}

@tool("Mark this call, once a person allowed it", requires_approval: true, risk_level: "high")
fn gated(n: int): string {
    python! """
import os, time
p = os.path.join(MARKS, os.environ["NEXA_RUN_ID"] + "." + os.environ["NEXA_CALL_ID"])
with open(p, "a") as f:
    f.write("executed\n")
time.sleep(0.02)
return "marked"
"""
}

agent Marker uses mark {
    prompt: "Mark three times."
}

agent Gated uses mark, gated {
    prompt: "Mark, then ask before marking again."
}
`

// scripts are the scripted model of each agent, and calls the calls each
// run of it makes.
var (
	scripts = map[string]string{
		"Marker": `{"turns": [
  {"tool_calls": [{"id": "m1", "name": "mark", "arguments": {"n": 1}}]},
  {"tool_calls": [{"id": "m2", "name": "mark", "arguments": {"n": 2}}]},
  {"tool_calls": [{"id": "m3", "name": "mark", "arguments": {"n": 3}}]},
  {"content": "Marked three times."}]}`,
		"Gated": `{"turns": [
  {"tool_calls": [{"id": "m1", "name": "mark", "arguments": {"n": 1}}]},
  {"tool_calls": [{"id": "g1", "name": "gated", "arguments": {"n": 2}}]},
  {"content": "Done."}]}`,
	}
	calls = map[string][]string{"Marker": {"m1", "m2", "m3"}, "Gated": {"m1", "g1"}}
)

// report is what the soak counted; line prints it.
type report struct {
	cfg        config
	began      time.Time
	elapsed    time.Duration
	submitted  int
	completed  int
	pruned     int
	workerKill int
	pgCrash    int
	prunes     int
	races      int
	raceLost   int // deciders refused because another won
	approved   int
	denied     int
	resolved   int
	executions int
	twice      int
	lost       int
	stuck      int
	held       int
	selfExits  int
	driveErrs  int
	driveWhy   map[string]int // why drives ended with an error, and how often
	violations []string
}

func (r *report) violate(format string, args ...any) {
	r.violations = append(r.violations, fmt.Sprintf(format, args...))
}

func (r *report) line() string {
	return fmt.Sprintf("soak %s: seed %d, %d workers, %s: %d runs submitted, %d completed (%d of them pruned under load); "+
		"%d kill -9 of a worker, %d PostgreSQL crashes (pg_ctl stop -m immediate), %d prunes, "+
		"%d decision races of %d deciders (%d approved, %d denied, %d losers refused), %d unknown outcomes resolved from the marks; "+
		"%d tool executions, %d twice, %d runs lost, %d stuck, %d leases held at the end, %d workers exited by themselves, %d drives ended by an error; %.2f runs/s",
		r.began.UTC().Format("2006-01-02 15:04 MST"), r.cfg.seed, r.cfg.workers, r.elapsed.Round(time.Second),
		r.submitted, r.completed, r.pruned, r.workerKill, r.pgCrash, r.prunes,
		r.races, r.cfg.deciders, r.approved, r.denied, r.raceLost, r.resolved,
		r.executions, r.twice, r.lost, r.stuck, r.held, r.selfExits, r.driveErrs,
		float64(r.completed)/r.elapsed.Seconds())
}

// tracked is one submitted run as the soak knows it.
type tracked struct {
	id, agent string
	decided   map[string]bool // call → the decision that won its race
	resolved  map[string]bool // call → the outcome the operator recorded
	want      map[string]int  // call → the marks it must leave (set when checked)
	checked   bool
	pruned    bool
}

// soak is one round's state.
type soak struct {
	cfg     config
	rep     *report
	rng     *rand.Rand
	dir     string
	marks   string
	pgDir   string
	url     string
	store   *postgres.Store
	workers []*worker
	runs    map[string]*tracked
	order   []string
}

// worker is one nexa worker process.
type worker struct {
	n      int
	dir    string
	cmd    *exec.Cmd
	done   chan struct{}
	killed bool
}

func run(ctx context.Context, cfg config) (*report, error) {
	s := &soak{cfg: cfg, rep: &report{cfg: cfg, began: time.Now()}, rng: rand.New(rand.NewPCG(uint64(cfg.seed), 27)),
		runs: map[string]*tracked{}}
	dir, err := os.MkdirTemp("", "nexa-soak.")
	if err != nil {
		return nil, err
	}
	s.dir = dir
	ok := false
	defer func() {
		if ok && !cfg.keep {
			_ = os.RemoveAll(dir)
		} else {
			fmt.Printf("soak: its directory (worker logs, marks) is kept: %s\n", dir)
		}
	}()
	if err := s.setup(ctx); err != nil {
		return nil, err
	}
	defer s.stopCluster()
	for i := range cfg.workers {
		if err := s.startWorker(i); err != nil {
			return nil, err
		}
	}
	defer s.killWorkers()
	err = s.loop(ctx)
	s.drain()
	s.final(ctx)
	if s.rep.workerKill == 0 || s.rep.pgCrash == 0 || s.rep.prunes == 0 || s.rep.races == 0 {
		s.violate("the round ended before it had killed a worker, crashed the database, pruned and raced a decision: it proves nothing (give it more -runs)")
	}
	s.rep.elapsed = time.Since(s.rep.began)
	ok = err == nil && len(s.rep.violations) == 0
	return s.rep, err
}

// setup starts the cluster and writes the directories: one per worker,
// one the runs are submitted from, one the decisions are made from.
func (s *soak) setup(ctx context.Context) error {
	out, err := exec.Command(s.cfg.cluster, "start").Output()
	if err != nil {
		return fmt.Errorf("start the PostgreSQL cluster: %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 {
		return fmt.Errorf("start the PostgreSQL cluster: want two lines, got %q", out)
	}
	s.pgDir, s.url = lines[0], lines[1]
	s.marks = filepath.Join(s.dir, "marks")
	src := strings.ReplaceAll(program, "MARKS", fmt.Sprintf("%q", s.marks))
	dirs := []string{"submit", "decide"}
	for i := range s.cfg.workers {
		dirs = append(dirs, fmt.Sprintf("w%d", i))
	}
	if err := os.Mkdir(s.marks, 0o700); err != nil {
		return err
	}
	for _, d := range dirs {
		d = filepath.Join(s.dir, d)
		if err := os.Mkdir(d, 0o700); err != nil {
			return err
		}
		files := map[string]string{"soak.nx": src}
		for agent, body := range scripts {
			files[agent+".json"] = body
		}
		for name, body := range files {
			if err := os.WriteFile(filepath.Join(d, name), []byte(body), 0o600); err != nil {
				return err
			}
		}
	}
	s.store, err = postgres.Open(ctx, s.url)
	if err != nil {
		return fmt.Errorf("open the store: %w", err)
	}
	return nil
}

func (s *soak) stopCluster() {
	if s.store != nil {
		_ = s.store.Close()
	}
	_ = exec.Command(s.cfg.cluster, "stop", s.pgDir).Run()
}

// env is the environment of every nexa process of the soak.
func (s *soak) env(extra ...string) []string {
	return append(os.Environ(), append([]string{"NEXA_STORE=" + s.url, "NO_COLOR=1"}, extra...)...)
}

func (s *soak) startWorker(i int) error {
	w := &worker{n: i, dir: filepath.Join(s.dir, fmt.Sprintf("w%d", i)), done: make(chan struct{})}
	logf, err := os.OpenFile(filepath.Join(w.dir, "worker.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	w.cmd = exec.Command(s.cfg.nexa, "worker", "--poll-interval", "250ms", "--concurrency", fmt.Sprint(s.cfg.concurrency), "--drain-timeout", "20s")
	w.cmd.Dir = w.dir
	w.cmd.Env = s.env("NEXA_TEST_LEASE_TTL=1s")
	w.cmd.Stderr = logf
	if err := w.cmd.Start(); err != nil {
		return fmt.Errorf("start worker %d: %w", i, err)
	}
	go func() {
		_ = w.cmd.Wait()
		close(w.done)
	}()
	if i < len(s.workers) {
		s.workers[i] = w
	} else {
		s.workers = append(s.workers, w)
	}
	return nil
}

func (s *soak) killWorkers() {
	for _, w := range s.workers {
		select {
		case <-w.done:
		default:
			_ = w.cmd.Process.Kill()
			<-w.done
		}
	}
}

// nexa runs one nexa command in dir and returns its exit code and output.
func (s *soak) nexa(dir string, env []string, args ...string) (int, string, string) {
	cmd := exec.Command(s.cfg.nexa, args...)
	cmd.Dir = filepath.Join(s.dir, dir)
	cmd.Env = s.env(env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String(), errb.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String(), errb.String()
	}
	return -1, out.String(), err.Error()
}

// loop submits the runs, disrupts, decides and resolves until every run
// completed or the hang guard passed.
func (s *soak) loop(ctx context.Context) error {
	deadline := time.Now().Add(s.cfg.timeout)
	// The first three disruptions are one of each kind, in a seeded
	// order, so even a short round has them all.
	kinds := []string{"kill", "crash", "prune"}
	s.rng.Shuffle(len(kinds), func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })
	next := time.Now().Add(s.pause())
	for {
		s.watchWorkers()
		if err := s.submit(); err != nil {
			return err
		}
		sums, err := s.list(ctx)
		if err == nil {
			s.tend(ctx, sums)
		}
		// A round ends once every run is done and each kind of
		// disruption happened at least once, however fast the machine.
		if s.rep.submitted == s.cfg.runs && s.finished() == s.cfg.runs && len(kinds) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			stuck := map[state.Status]int{}
			for _, sum := range sums {
				if t := s.runs[sum.ID]; t != nil && !t.checked {
					stuck[sum.Status]++
					s.rep.stuck++
				}
			}
			s.violate("%d runs not completed after %s: %v", s.cfg.runs-s.finished(), s.cfg.timeout, stuck)
			return nil
		}
		if time.Now().After(next) {
			kind := ""
			if len(kinds) > 0 {
				kind, kinds = kinds[0], kinds[1:]
			} else {
				kind = []string{"kill", "kill", "crash", "prune"}[s.rng.IntN(4)]
			}
			if err := s.disrupt(ctx, kind); err != nil {
				return err
			}
			next = time.Now().Add(s.pause())
		}
		time.Sleep(100 * time.Millisecond) // the pace of the operator's loop, not a wait for anything
	}
}

func (s *soak) violate(format string, args ...any) { s.rep.violate(format, args...) }

// pause is a seeded random time until the next disruption.
func (s *soak) pause() time.Duration {
	return time.Duration(float64(s.cfg.chaos) * (0.5 + s.rng.Float64()))
}

func (s *soak) finished() int {
	n := 0
	for _, t := range s.runs {
		if t.checked {
			n++
		}
	}
	return n
}

// watchWorkers restarts a worker that exited without being killed, and
// reports it: a worker must ride out a database crash.
func (s *soak) watchWorkers() {
	for i, w := range s.workers {
		select {
		case <-w.done:
			if !w.killed {
				s.rep.selfExits++
				s.violate("worker %d exited by itself (%v); its log: %s", i, w.cmd.ProcessState, filepath.Join(w.dir, "worker.log"))
			}
			if err := s.startWorker(i); err != nil {
				s.violate("restart worker %d: %v", i, err)
			}
		default:
		}
	}
}

// submit keeps enough runs queued to keep every worker busy.
func (s *soak) submit() error {
	backlog := 2 * s.cfg.workers * s.cfg.concurrency
	for n := 0; n < 10 && s.rep.submitted < s.cfg.runs && s.rep.submitted-s.finished() < backlog; n++ {
		i := s.rep.submitted
		agent := "Marker"
		if i%3 == 2 {
			agent = "Gated"
		}
		code, out, errs := s.nexa("submit", nil, "agent", "soak.nx", agent, fmt.Sprintf("soak task %d", i), "--provider", "script:"+agent+".json", "--detach", "-q")
		var res struct {
			RunID  string `json:"run_id"`
			Status string `json:"status"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &res) != nil || res.Status != "queued" {
			return fmt.Errorf("submit run %d: exit %d\n%s%s", i, code, out, errs)
		}
		s.runs[res.RunID] = &tracked{id: res.RunID, agent: agent, decided: map[string]bool{}, resolved: map[string]bool{}}
		s.order = append(s.order, res.RunID)
		s.rep.submitted++
	}
	return nil
}

func (s *soak) list(ctx context.Context) ([]state.Summary, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return s.store.List(ctx, state.Filter{})
}

func (s *soak) show(ctx context.Context, id string) (*state.RunState, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return engine.Show(ctx, s.store, id)
}

// tend does what an operator does with each run: checks a completed one,
// decides a waiting one (several deciders racing), resolves one stopped at
// an unknown outcome.
func (s *soak) tend(ctx context.Context, sums []state.Summary) {
	for _, sum := range sums {
		t := s.runs[sum.ID]
		if t == nil || t.checked {
			continue
		}
		switch sum.Status {
		case state.StatusCompleted:
			st, err := s.show(ctx, t.id)
			if err == nil {
				s.check(t, st)
			}
		case state.StatusWaitingApproval:
			st, err := s.show(ctx, t.id)
			if err != nil {
				continue
			}
			pending, _ := engine.OperatorCalls(st)
			for _, p := range pending {
				s.race(t, p.CallID)
			}
		case state.StatusUnknownOutcome:
			st, err := s.show(ctx, t.id)
			if err != nil {
				continue
			}
			_, unknown := engine.OperatorCalls(st)
			for _, u := range unknown {
				s.resolve(t, u.CallID)
			}
		case state.StatusFailed, state.StatusTimedOut, state.StatusBudgetExhausted:
			st, err := s.show(ctx, t.id)
			msg := ""
			if err == nil && st.Error != nil {
				msg = st.Error.Code + ": " + st.Error.Message
			}
			s.violate("run %s stopped %s: %s", t.id, sum.Status, msg)
			t.checked = true
		}
	}
}

// race has several deciders decide one call at once, each approving or
// denying at random: exactly one may record its decision; the others are
// refused (exit 2: already decided; exit 7: the run changed under them).
func (s *soak) race(t *tracked, call string) {
	decisions := make([]bool, s.cfg.deciders)
	for i := range decisions {
		decisions[i] = s.rng.IntN(4) > 0
	}
	codes := make([]int, len(decisions))
	errs := make([]string, len(decisions))
	var wg sync.WaitGroup
	for i, d := range decisions {
		wg.Go(func() {
			codes[i], _, errs[i] = s.nexa("decide", []string{fmt.Sprintf("NEXA_USER=decider-%d", i)},
				"runs", "approve", t.id, call, fmt.Sprintf("--approved=%t", d), "--reason", "soak")
		})
	}
	wg.Wait()
	s.rep.races++
	winners := 0
	for i, c := range codes {
		switch c {
		case 0:
			winners++
			t.decided[call] = decisions[i]
		case 2, 7:
			s.rep.raceLost++
		default:
			s.violate("runs approve %s %s: exit %d: %s", t.id, call, c, errs[i])
		}
	}
	switch {
	case winners > 1:
		s.violate("%d deciders all recorded a decision of %s %s", winners, t.id, call)
	case winners == 1 && t.decided[call]:
		s.rep.approved++
	case winners == 1:
		s.rep.denied++
	}
}

// resolve records the outcome of an unknown call from the tool's own
// effect: a mark says it executed.
func (s *soak) resolve(t *tracked, call string) {
	success, output := true, "marked"
	if s.countMarks(t.id, call) == 0 {
		success, output = false, "not executed: the crash came before the tool wrote its mark"
	}
	code, _, errs := s.nexa("decide", nil, "runs", "resolve", t.id, call, "--output", output, fmt.Sprintf("--success=%t", success))
	switch code {
	case 0:
		t.resolved[call] = success
		s.rep.resolved++
	case 7: // the worker that stopped the run has not let go yet: next time
	default:
		s.violate("runs resolve %s %s: exit %d: %s", t.id, call, code, errs)
	}
}

// check compares a completed run's journal with the marks its tools left,
// and remembers how many marks each call must have at the end.
func (s *soak) check(t *tracked, st *state.RunState) {
	t.checked = true
	t.want = map[string]int{}
	s.rep.completed++
	var got []string
	for _, e := range st.Journal {
		got = append(got, e.CallID)
		n := s.countMarks(t.id, e.CallID)
		want := -1
		switch e.Outcome {
		case "executed":
			want = 1
		case "denied":
			want = 0
			if d, ok := t.decided[e.CallID]; !ok || d {
				s.violate("run %s call %s denied, but no decider's denial won", t.id, e.CallID)
			}
		case "resolved":
			if ok, known := t.resolved[e.CallID]; known {
				want = map[bool]int{true: 1, false: 0}[ok]
			} else {
				s.violate("run %s call %s resolved, but not by the soak", t.id, e.CallID)
			}
		default:
			s.violate("run %s call %s completed with outcome %q", t.id, e.CallID, e.Outcome)
		}
		if e.Decision != nil {
			if d, ok := t.decided[e.CallID]; !ok || d != *e.Decision {
				s.violate("run %s call %s: decision %t recorded, but the winning decider said %v", t.id, e.CallID, *e.Decision, t.decided[e.CallID])
			}
		}
		if want >= 0 {
			t.want[e.CallID] = want
			if n != want {
				s.violate("run %s call %s (%s): %d marks, want %d", t.id, e.CallID, e.Outcome, n, want)
			}
		}
	}
	if !slices.Equal(got, calls[t.agent]) {
		s.violate("run %s (%s) journaled calls %v, want %v", t.id, t.agent, got, calls[t.agent])
	}
}

// countMarks is how many times the tool of run id's call executed.
func (s *soak) countMarks(id, call string) int {
	b, err := os.ReadFile(filepath.Join(s.marks, id+"."+call))
	if err != nil {
		return 0
	}
	return strings.Count(string(b), "executed\n")
}

// disrupt does one disruption.
func (s *soak) disrupt(ctx context.Context, kind string) error {
	switch kind {
	case "kill":
		w := s.workers[s.rng.IntN(len(s.workers))]
		w.killed = true
		_ = w.cmd.Process.Signal(syscall.SIGKILL)
		<-w.done
		s.rep.workerKill++
		return s.startWorker(w.n)
	case "crash":
		if out, err := exec.Command(s.cfg.cluster, "crash", s.pgDir).CombinedOutput(); err != nil {
			return fmt.Errorf("crash PostgreSQL: %w\n%s", err, out)
		}
		time.Sleep(time.Duration(s.rng.IntN(500)) * time.Millisecond) // the database stays down a while
		if out, err := exec.Command(s.cfg.cluster, "restart", s.pgDir).CombinedOutput(); err != nil {
			return fmt.Errorf("restart PostgreSQL: %w\n%s", err, out)
		}
		s.rep.pgCrash++
	case "prune":
		// Check every completed run first: a run is pruned only once the
		// soak has compared it with its marks.
		sums, err := s.list(ctx)
		if err != nil {
			return nil
		}
		s.tend(ctx, sums)
		code, out, errs := s.nexa("decide", nil, "runs", "prune", "--older-than", "1s", "--status", "completed", "--json")
		if code != 0 {
			s.violate("runs prune: exit %d: %s", code, errs)
			return nil
		}
		var rep state.PruneReport
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			s.violate("runs prune printed %q: %v", out, err)
			return nil
		}
		s.rep.prunes++
		for _, id := range rep.Deleted {
			t := s.runs[id]
			switch {
			case t == nil:
				s.violate("runs prune deleted %s, a run the soak never submitted", id)
			case !t.checked:
				s.violate("runs prune deleted %s before the soak saw it completed", id)
			default:
				t.pruned = true
				s.rep.pruned++
			}
		}
	}
	return nil
}

// drain stops the workers as a deployment does (SIGTERM): each must exit
// 0, holding nothing.
func (s *soak) drain() {
	for _, w := range s.workers {
		select {
		case <-w.done:
			continue
		default:
		}
		w.killed = true
		_ = w.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-w.done:
			if c := w.cmd.ProcessState.ExitCode(); c != 0 {
				s.violate("worker %d exited %d after SIGTERM, not 0", w.n, c)
			}
		case <-time.After(30 * time.Second):
			s.violate("worker %d still running 30s after SIGTERM (its drain timeout is 20s)", w.n)
		}
	}
	s.rep.driveWhy = map[string]int{}
	for _, w := range s.workers {
		for _, why := range driveErrors(filepath.Join(w.dir, "worker.log")) {
			s.rep.driveErrs++
			s.rep.driveWhy[why]++
		}
	}
}

// final checks what must hold once the workers are gone: every run
// completed (or pruned after its check) and held by no one, no run the
// soak does not know, and the marks as the journals say, counted again
// now (a tool process that outlived its worker would have added one).
func (s *soak) final(ctx context.Context) {
	for _, id := range s.order {
		t := s.runs[id]
		if t.pruned {
			continue
		}
		st, err := s.show(ctx, id)
		if err != nil {
			s.rep.lost++
			s.violate("run %s: %v", id, err)
			continue
		}
		if st.Holder != nil {
			s.rep.held++
			s.violate("run %s still held by %s", id, st.Holder.Owner)
		}
		if st.Status != state.StatusCompleted && t.checked {
			s.violate("run %s is %s after it was seen completed", id, st.Status)
		}
	}
	if sums, err := s.list(ctx); err != nil {
		s.violate("list the runs at the end: %v", err)
	} else {
		for _, sum := range sums {
			if s.runs[sum.ID] == nil {
				s.violate("the store holds run %s, which the soak never submitted", sum.ID)
			}
		}
	}
	files, err := os.ReadDir(s.marks)
	if err != nil {
		s.violate("read the marks: %v", err)
		return
	}
	for _, f := range files {
		id, call, _ := strings.Cut(f.Name(), ".")
		n := s.countMarks(id, call)
		s.rep.executions += n
		if n > 1 {
			s.rep.twice++
			s.violate("run %s call %s executed %d times", id, call, n)
		}
		switch t := s.runs[id]; {
		case t == nil:
			s.violate("a tool of run %s, which the soak never submitted, left %d marks", id, n)
		case t.checked && t.want[call] != n:
			s.violate("run %s call %s left %d marks at the end, the journal says %d", id, call, n, t.want[call])
		}
	}
}

// runID matches a run id in an error message.
var runID = regexp.MustCompile(`run_[0-9A-Z]+`)

// driveErrors returns why each drive of a worker's log ended with an
// error, run ids taken out so that like errors count together. They are
// not violations (a drive a crash cut off ends so, and its run is taken
// over), but the soak reports them.
func driveErrors(file string) []string {
	f, err := os.Open(file)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var line struct {
			Msg   string `json:"msg"`
			Error string `json:"error"`
		}
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "run stopped with an error" {
			out = append(out, runID.ReplaceAllString(line.Error, "RUN"))
		}
	}
	return out
}
