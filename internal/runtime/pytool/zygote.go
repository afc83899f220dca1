package pytool

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nexa-run/nexa/internal/runtime"
	"github.com/nexa-run/nexa/internal/runtime/proctree"
)

// The warm path (see doc.go, "Warm interpreters"): unsandboxed calls are
// forked by a zygote, a `python3 -u -c BOOTSTRAP --nexa-zygote` that has
// imported what the bootstrap needs and never runs user code.

const (
	// zygoteFlag is the bootstrap's argument that selects the zygote mode.
	zygoteFlag = "--nexa-zygote"
	// maxZygotes bounds the zygotes of one executor (one per working
	// directory and environment); a call that would need another one runs
	// on the per-call path.
	maxZygotes = 4
	// maxStartFailures is how many times in a row a zygote may fail to
	// start for one key before its calls stay on the per-call path.
	maxStartFailures = 2
	// defaultZygoteStart bounds a zygote's start-up (a pyenv shim alone
	// takes ~150 ms; a loaded machine much more).
	defaultZygoteStart = 20 * time.Second
	// defaultZygoteSpawn bounds the wait for a fork's pid; a zygote that
	// takes longer is misbehaving and is replaced.
	defaultZygoteSpawn = 10 * time.Second
	// zygoteStopWait is how long a stopped zygote may take to exit on
	// its own (it kills its children first) before it is killed.
	zygoteStopWait = 3 * time.Second
)

// zygoteSet holds an executor's zygotes, by key (working directory and
// environment). It does not refer to the Executor, so that an Executor
// dropped without Close can still be collected (and its zygotes stopped by
// a cleanup).
type zygoteSet struct {
	python  string
	program string        // the bootstrap text; tests inject broken ones
	start   time.Duration // start-up bound
	spawn   time.Duration // fork reply bound

	mu     sync.Mutex
	closed bool
	slots  map[string]*zslot
	// live holds every zygote not yet reaped, including replaced ones, so
	// that close can wait for all of them.
	live map[*zygote]struct{}
	// starting counts start-ups in flight, so that close can wait for
	// them (a zygote started while closing is stopped by its starter).
	starting sync.WaitGroup

	// Counters for tests and benchmarks.
	starts    atomic.Int64 // zygotes started
	warmCalls atomic.Int64 // calls forked by a zygote
	fallbacks atomic.Int64 // unsandboxed calls that ran per call
}

// zslot is one key's zygote. Its fields are guarded by zygoteSet.mu.
type zslot struct {
	z        *zygote
	refs     int           // calls using z
	starting chan struct{} // closed when a start-up in flight ends
	fails    int           // consecutive failed start-ups
	removed  bool          // evicted or closed
}

func newZygoteSet(python, program string) *zygoteSet {
	return &zygoteSet{
		python: python, program: program,
		start: defaultZygoteStart, spawn: defaultZygoteSpawn,
		slots: map[string]*zslot{}, live: map[*zygote]struct{}{},
	}
}

// zygoteKey names the zygote for a working directory and start-up
// environment: both decide how an interpreter starts (a pyenv shim picks
// the version from the directory; PYTHONPATH, locale and TZ are read at
// start-up).
func zygoteKey(dir string, env []string) string {
	h := fnv.New128a()
	for _, kv := range env {
		_, _ = io.WriteString(h, kv)
		_, _ = h.Write([]byte{0})
	}
	return fmt.Sprintf("%s\x00%x", dir, h.Sum(nil))
}

// acquire returns a live zygote for key, starting one if needed, and counts
// the caller as one of its users (release with done). It returns nil when
// the call must use the per-call path: the set is closed, too many zygotes,
// the zygote cannot start, or ctx ended while waiting for it.
func (s *zygoteSet) acquire(ctx context.Context, key, dir string, env []string) (*zygote, *zslot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	slot := s.slots[key]
	if slot == nil {
		if s.closed || (len(s.slots) >= maxZygotes && !s.evictIdleLocked()) {
			return nil, nil
		}
		slot = &zslot{}
		s.slots[key] = slot
	}
	for {
		if s.closed || slot.removed {
			return nil, nil
		}
		if z := slot.z; z != nil {
			if z.alive() {
				slot.refs++
				return z, slot
			}
			slot.z = nil
			z.stop()
		}
		ch := slot.starting
		if ch == nil {
			if slot.fails >= maxStartFailures {
				return nil, nil
			}
			ch = make(chan struct{})
			slot.starting = ch
			s.starting.Add(1)
			go s.startSlot(slot, ch, dir, env)
		}
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			s.mu.Lock()
			return nil, nil
		}
		s.mu.Lock()
		if z := slot.z; z == nil || !z.alive() || s.closed || slot.removed {
			// This start failed: one attempt per call, then per call.
			return nil, nil
		}
	}
}

// startSlot starts slot's zygote in the background: a caller whose context
// ends stops waiting, but the start-up completes for the next call.
func (s *zygoteSet) startSlot(slot *zslot, ch chan struct{}, dir string, env []string) {
	defer s.starting.Done()
	z, err := startZygote(s.python, s.program, dir, env, s.start)
	s.mu.Lock()
	slot.starting = nil
	switch {
	case err != nil:
		slot.fails++
	case s.closed || slot.removed:
		// Closed meanwhile: it must not outlive close, which waits for us.
		s.mu.Unlock()
		z.stop()
		z.waitExited()
		s.mu.Lock()
	default:
		slot.fails = 0
		slot.z = z
		s.starts.Add(1)
		s.live[z] = struct{}{}
		go func() {
			<-z.exited
			s.mu.Lock()
			delete(s.live, z)
			s.mu.Unlock()
		}()
	}
	close(ch)
	s.mu.Unlock()
}

// done releases a caller's use of slot's zygote.
func (s *zygoteSet) done(slot *zslot) {
	s.mu.Lock()
	slot.refs--
	s.mu.Unlock()
}

// discard kills z, a zygote that died or misbehaved, so the next acquire of
// its key starts a new one. Calls running on it see it stop and kill their
// own process groups.
func (s *zygoteSet) discard(slot *zslot, z *zygote) {
	s.mu.Lock()
	if slot.z == z {
		slot.z = nil
	}
	s.mu.Unlock()
	z.stopWith("it misbehaved and was replaced")
	z.kill()
}

// evictIdleLocked frees a slot no call uses, if there is one.
func (s *zygoteSet) evictIdleLocked() bool {
	for key, slot := range s.slots {
		if slot.refs == 0 && slot.starting == nil {
			slot.removed = true
			delete(s.slots, key)
			if slot.z != nil {
				slot.z.stop()
			}
			return true
		}
	}
	return false
}

// close stops every zygote and waits until they have exited. Calls still
// running on one are killed (they see it stop). Later acquires return nil.
func (s *zygoteSet) close() {
	s.mu.Lock()
	s.closed = true
	for key, slot := range s.slots {
		slot.removed = true
		delete(s.slots, key)
	}
	var zs []*zygote
	for z := range s.live {
		zs = append(zs, z)
	}
	s.mu.Unlock()
	for _, z := range zs {
		z.stop()
	}
	s.starting.Wait()
	for _, z := range zs {
		z.waitExited()
	}
}

// pids lists the zygotes' process ids (tests).
func (s *zygoteSet) pids() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []int
	for _, slot := range s.slots {
		if slot.z != nil && slot.z.alive() {
			out = append(out, slot.z.pid)
		}
	}
	return out
}

// zygote is one fork server process and its control connection.
type zygote struct {
	pid    int         // the zygote's pid, also its process group
	proc   *os.Process // to signal it safely
	conn   *net.UnixConn
	out    *tailBuffer   // the zygote's own output, for diagnostics
	exited chan struct{} // closed once the process has been reaped

	mu      sync.Mutex
	nextID  uint64
	pending map[uint64]*warmProc // spawns waiting for their pid
	procs   map[int]*warmProc    // children waiting for their exit
	dead    chan struct{}        // closed when the zygote stops serving
	why     string               // why it stopped

	stopOnce sync.Once
}

// warmProc is one forked call as the control connection sees it.
type warmProc struct {
	reply chan spawnReply // the fork's pid or error
	exit  chan exitStatus // the child's exit (it is then an unreaped zombie)
}

type spawnReply struct {
	pid int
	err string
}

// exitStatus is how a forked child ended, as the zygote saw it.
type exitStatus struct {
	code   int
	signal syscall.Signal
}

// describe says how the child ended, in the words describeExit uses for a
// child of nexa.
func (st exitStatus) describe() string {
	if st.signal != 0 {
		return fmt.Sprintf("the interpreter was killed by signal %s without reporting a result", st.signal)
	}
	return fmt.Sprintf("the interpreter exited with status %d without reporting a result", st.code)
}

// zmsg is a message from the zygote.
type zmsg struct {
	Ready  bool   `json:"ready"`
	ID     uint64 `json:"id"`
	Pid    int    `json:"pid"`
	Error  string `json:"error"`
	Exited int    `json:"exited"`
	Code   *int   `json:"code"`
	Signal *int   `json:"signal"`
}

// startZygote starts a zygote in dir with env and waits for its ready
// message.
func startZygote(python, program, dir string, env []string, bound time.Duration) (*zygote, error) {
	fds, err := controlSocketpair()
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	ours := os.NewFile(uintptr(fds[0]), "zygote-control")
	theirs := os.NewFile(uintptr(fds[1]), "zygote-control-peer")
	outR, outW, err := os.Pipe()
	if err != nil {
		ours.Close()
		theirs.Close()
		return nil, fmt.Errorf("output pipe: %w", err)
	}
	cmd := exec.Command(python, "-u", "-c", program, zygoteFlag)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdout = outW
	cmd.Stderr = outW
	cmd.ExtraFiles = []*os.File{theirs} // fd 3
	// Its own group, like a per-call interpreter: the terminal's Ctrl-C is
	// not for it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	startErr := proctree.Start(cmd)
	theirs.Close()
	outW.Close()
	if startErr != nil {
		ours.Close()
		outR.Close()
		return nil, startErr
	}
	fc, err := net.FileConn(ours)
	ours.Close()
	conn, ok := fc.(*net.UnixConn)
	if err != nil || !ok {
		if fc != nil {
			fc.Close()
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		outR.Close()
		if err == nil {
			err = fmt.Errorf("unexpected connection type %T", fc)
		}
		return nil, fmt.Errorf("control connection: %w", err)
	}
	z := &zygote{
		pid: cmd.Process.Pid, proc: cmd.Process, conn: conn, out: &tailBuffer{max: tailSize},
		exited: make(chan struct{}), pending: map[uint64]*warmProc{}, procs: map[int]*warmProc{},
		dead: make(chan struct{}),
	}
	outDone := make(chan struct{})
	go func() {
		defer close(outDone)
		_, _ = io.Copy(z.out, outR)
		outR.Close()
	}()
	go func() {
		// Whatever is left of its group (a wrapper's child) goes with it,
		// while it is an unreaped zombie and the group id is still ours.
		proctree.WaitExitNoReap(z.pid)
		_ = syscall.Kill(-z.pid, syscall.SIGKILL)
		_ = cmd.Wait()
		close(z.exited)
	}()

	_ = conn.SetReadDeadline(time.Now().Add(bound))
	buf := make([]byte, 4096)
	n, err := conn.Read(buf)
	_ = conn.SetReadDeadline(time.Time{})
	var m zmsg
	if err == nil {
		err = json.Unmarshal(buf[:n], &m)
	}
	if err == nil && !m.Ready {
		err = errors.New("no ready message")
	}
	if err != nil {
		z.stopWith("it did not start")
		z.kill()
		z.waitExited()
		waitFor(outDone, time.Second)
		return nil, fmt.Errorf("zygote did not start: %v%s", err, z.out.explain())
	}
	go z.readLoop()
	return z, nil
}

func (z *zygote) alive() bool {
	select {
	case <-z.dead:
		return false
	default:
		return true
	}
}

// reason says why the zygote stopped serving.
func (z *zygote) reason() string {
	z.mu.Lock()
	defer z.mu.Unlock()
	return z.why
}

// stop ends the zygote: its control connection is closed, which makes it
// kill its children's process groups and exit; one that has not exited
// after zygoteStopWait is killed. Every call waiting on it sees dead.
func (z *zygote) stop() { z.stopWith("the executor was closed, or replaced its warm interpreter") }

func (z *zygote) stopWith(why string) {
	z.stopOnce.Do(func() {
		z.mu.Lock()
		z.why = why
		close(z.dead)
		z.mu.Unlock()
		z.conn.Close()
		go func() {
			if !waitFor(z.exited, zygoteStopWait) {
				z.kill()
			}
		}()
	})
}

// waitExited waits (boundedly) until the stopped zygote has been reaped.
func (z *zygote) waitExited() {
	if !waitFor(z.exited, zygoteStopWait+2*time.Second) {
		z.kill()
		waitFor(z.exited, 2*time.Second)
	}
}

// kill sends SIGKILL to the zygote process (through its pidfd where the
// kernel has them, so never to a process that reused its pid); the reaper
// then kills the rest of its group.
func (z *zygote) kill() { _ = z.proc.Kill() }

// readLoop dispatches the zygote's messages until the connection ends.
func (z *zygote) readLoop() {
	buf := make([]byte, 64<<10)
	for {
		n, err := z.conn.Read(buf)
		if err != nil {
			why := "its control connection closed"
			if !errors.Is(err, io.EOF) {
				why = "its control connection failed: " + err.Error()
			}
			z.stopWith("the warm interpreter stopped (" + why + ")" + z.out.explain())
			return
		}
		var m zmsg
		if err := json.Unmarshal(buf[:n], &m); err != nil {
			z.stopWith("the warm interpreter sent a garbled message")
			return
		}
		z.dispatch(m)
	}
}

func (z *zygote) dispatch(m zmsg) {
	switch {
	case m.Exited > 0:
		st := exitStatus{}
		if m.Signal != nil {
			st.signal = syscall.Signal(*m.Signal)
		} else if m.Code != nil {
			st.code = *m.Code
		}
		z.mu.Lock()
		p := z.procs[m.Exited]
		delete(z.procs, m.Exited)
		z.mu.Unlock()
		if p != nil {
			p.exit <- st
		} else {
			// A child whose caller gave up before its pid arrived: it
			// never got a request, so it ran nothing; let it be reaped.
			go z.release(m.Exited)
		}
	case m.ID != 0:
		z.mu.Lock()
		p := z.pending[m.ID]
		delete(z.pending, m.ID)
		if p != nil && m.Pid > 0 {
			z.procs[m.Pid] = p
		}
		z.mu.Unlock()
		if p != nil {
			p.reply <- spawnReply{pid: m.Pid, err: m.Error}
		}
	}
}

// release tells the zygote that nexa is done with pid (its group has been
// killed): it may now reap it.
func (z *zygote) release(pid int) {
	_, _ = z.conn.Write(fmt.Appendf(nil, `{"op":"release","pid":%d}`, pid))
}

// spawn asks the zygote to fork a call whose stdin, output and result
// channel are files. fault reports that the zygote failed (it died, did not
// answer in time, or the message could not be sent): it should be replaced.
func (z *zygote) spawn(ctx context.Context, timeout time.Duration, files [3]*os.File) (pid int, p *warmProc, fault bool, err error) {
	p = &warmProc{reply: make(chan spawnReply, 1), exit: make(chan exitStatus, 1)}
	z.mu.Lock()
	if !z.alive() {
		z.mu.Unlock()
		return 0, nil, true, errors.New(z.why)
	}
	z.nextID++
	id := z.nextID
	z.pending[id] = p
	z.mu.Unlock()
	forget := func() {
		z.mu.Lock()
		delete(z.pending, id)
		z.mu.Unlock()
	}

	// Fd puts the files in blocking mode, which is what the child needs
	// (exec.Cmd does the same for the files it passes).
	rights := unix.UnixRights(int(files[0].Fd()), int(files[1].Fd()), int(files[2].Fd()))
	_, _, err = z.conn.WriteMsgUnix(fmt.Appendf(nil, `{"op":"spawn","id":%d}`, id), rights, nil)
	if err != nil {
		forget()
		return 0, nil, true, fmt.Errorf("send to the warm interpreter: %w", err)
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case r := <-p.reply:
		if r.err != "" || r.pid <= 0 {
			return 0, nil, false, fmt.Errorf("the warm interpreter could not fork: %s", r.err)
		}
		return r.pid, p, false, nil
	case <-z.dead:
		forget()
		return 0, nil, true, errors.New(z.reason())
	case <-t.C:
		forget()
		return 0, nil, true, fmt.Errorf("the warm interpreter did not fork within %s", timeout)
	case <-ctx.Done():
		forget()
		select {
		case r := <-p.reply:
			if r.pid > 0 {
				z.abandon(r.pid, p)
			}
		default:
		}
		return 0, nil, false, ctx.Err()
	}
}

// abandon gives up a forked child whose caller no longer wants it (it got
// no request, so it runs nothing and exits): the zygote may reap it once it
// has exited.
func (z *zygote) abandon(pid int, p *warmProc) {
	z.mu.Lock()
	waiting := z.procs[pid] == p
	if waiting {
		delete(z.procs, pid) // its exit report will find no taker: released then
	}
	z.mu.Unlock()
	if !waiting {
		go z.release(pid) // it has already exited
	}
}

// warmCall is a forked call's pid and nexa's ends of its pipes.
type warmCall struct {
	pid              int
	proc             *warmProc
	reqW, logR, resR *os.File
}

// forkCall creates the call's pipes and has z fork a child on them.
func forkCall(ctx context.Context, z *zygote, timeout time.Duration) (wc *warmCall, fault bool, err error) {
	reqR, reqW, err := os.Pipe()
	if err != nil {
		return nil, false, err
	}
	logR, logW, err := os.Pipe()
	if err != nil {
		reqR.Close()
		reqW.Close()
		return nil, false, err
	}
	resR, resW, err := os.Pipe()
	if err != nil {
		reqR.Close()
		reqW.Close()
		logR.Close()
		logW.Close()
		return nil, false, err
	}
	pid, proc, fault, err := z.spawn(ctx, timeout, [3]*os.File{reqR, logW, resW})
	// The zygote received its own copies (and passed them to the child);
	// ours must go so EOF can be seen.
	reqR.Close()
	logW.Close()
	resW.Close()
	if err != nil {
		// A child may exist whose pid never arrived: closing the request
		// pipe unwritten makes it exit without running anything.
		reqW.Close()
		logR.Close()
		resR.Close()
		return nil, fault, err
	}
	return &warmCall{pid: pid, proc: proc, reqW: reqW, logR: logR, resR: resR}, false, nil
}

// runWarm runs an unsandboxed call forked by a zygote. ok is false when the
// call did not start there and must take the per-call path: nothing of it
// ran (its request was never sent).
func (e *Executor) runWarm(ctx context.Context, inv runtime.Invocation, req *request) (out runtime.Outcome, ok bool, err error) {
	zs := e.zygotes
	dir := inv.WorkDir
	if dir == "" {
		dir, err = os.Getwd()
	} else if !filepath.IsAbs(dir) {
		dir, err = filepath.Abs(dir)
	}
	if err != nil || ctx.Err() != nil {
		zs.fallbacks.Add(1)
		return runtime.Outcome{}, false, nil
	}
	// The zygote starts with the call's environment minus the call
	// variables, which each child sets: what the interpreter sees (after any
	// wrapper such as a pyenv shim changed it) is then exactly what a fresh
	// interpreter would see.
	base := e.baseEnv()
	env := childEnv(base, &inv)
	for _, kv := range env {
		if strings.IndexByte(kv, 0) >= 0 {
			// exec would refuse it; let the per-call path say so.
			zs.fallbacks.Add(1)
			return runtime.Outcome{}, false, nil
		}
	}
	zenv := env[:len(env)-len(callVars)]
	key := zygoteKey(dir, zenv)

	wreq := *req
	wreq.Environ = base64.StdEncoding.EncodeToString([]byte(strings.Join(env[len(zenv):], "\x00")))
	wreq.Cwd = dir
	payload, err := json.Marshal(&wreq)
	if err != nil {
		return runtime.Outcome{}, true, &StartError{Tool: inv.Tool.Name, Reason: "encode request", Err: err}
	}

	// A zygote that died or misbehaves is replaced once; then the call
	// runs per call.
	var (
		z    *zygote
		slot *zslot
		wc   *warmCall
	)
	for attempt := 0; attempt < 2 && wc == nil; attempt++ {
		z, slot = zs.acquire(ctx, key, dir, zenv)
		if z == nil {
			break
		}
		var fault bool
		wc, fault, err = forkCall(ctx, z, zs.spawn)
		if wc != nil {
			break
		}
		zs.done(slot)
		if !fault {
			break
		}
		zs.discard(slot, z)
	}
	if wc == nil {
		zs.fallbacks.Add(1)
		return runtime.Outcome{}, false, nil
	}
	defer zs.done(slot)
	zs.warmCalls.Add(1)
	out, err = e.waitWarm(ctx, inv, slot, z, wc, payload)
	return out, true, err
}

// waitWarm sends the request to a forked call and waits for its end, as run
// does for a child of nexa.
func (e *Executor) waitWarm(ctx context.Context, inv runtime.Invocation, slot *zslot, z *zygote, wc *warmCall, payload []byte) (runtime.Outcome, error) {
	name := inv.Tool.Name
	logW := inv.Log
	if logW == nil {
		logW = io.Discard
	}
	rd := readCall(wc.logR, wc.resR, logW)
	// The request goes out only now that nexa knows the pid.
	reqDone := make(chan struct{})
	go func() {
		defer close(reqDone)
		_, _ = wc.reqW.Write(payload)
		wc.reqW.Close()
	}()

	timer, stopTimer := e.callTimer(inv)
	defer stopTimer()

	var st exitStatus
	exited := false
	killReason := ""
	select {
	case st = <-wc.proc.exit:
		exited = true
	case <-rd.resDone:
		// Result delivered (or the channel closed): let the interpreter
		// finish its exit, within the grace period.
		g := time.NewTimer(e.grace)
		select {
		case st = <-wc.proc.exit:
			exited = true
		case <-g.C:
		case <-ctx.Done():
		case <-z.dead:
		}
		g.Stop()
	case <-timer:
		killReason = "killed: " + timeoutReason(inv)
	case <-ctx.Done():
		killReason = "killed: " + contextReason(ctx, inv)
	case <-z.dead:
		killReason = "killed: " + z.reason()
	}

	// Whatever happened, nothing of this call may keep running. The zygote
	// keeps the child unreaped until it is released, so the group id
	// cannot have been reused.
	_ = syscall.Kill(-wc.pid, syscall.SIGKILL)
	if !exited {
		stuck := time.NewTimer(zygoteStopWait)
		select {
		case st = <-wc.proc.exit:
			exited = true
		case <-z.dead:
			select {
			case st = <-wc.proc.exit:
				exited = true
			default:
			}
		case <-stuck.C:
			// A killed child is reported at once; a zygote that does
			// not is misbehaving.
			e.zygotes.discard(slot, z)
		}
		stuck.Stop()
	}
	if exited {
		z.release(wc.pid)
	}
	wc.reqW.Close()
	<-reqDone

	resHeld := !drain(wc.resR, rd.resDone)
	drain(wc.logR, rd.logDone)

	reason := killReason
	switch {
	case reason != "":
	case exited:
		reason = st.describe()
	default:
		reason = "the interpreter ended without a result (" + z.reason() + ")"
	}
	return callOutcome(name, rd.result, rd.tooLarge, false, resHeld, reason, rd.tail)
}
