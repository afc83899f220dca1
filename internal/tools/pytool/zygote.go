package pytool

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/nexa-run/nexa/internal/tool"
	"hash/fnv"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nexa-run/nexa/internal/proctree"
	"github.com/nexa-run/nexa/internal/tailbuf"
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
	// spareTarget is how many forked children a zygote keeps waiting for
	// a call, besides those that calls are already waiting for. A call's
	// replacement is asked for only when the call ends (refill), so that
	// its preparation does not compete with the call; with two, a call
	// made right after another still finds one ready.
	spareTarget = 2
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
	out    *tailbuf.Buffer // the zygote's own output, for diagnostics
	exited chan struct{}   // closed once the process has been reaped

	mu        sync.Mutex
	requested int               // fork requests not answered yet
	idle      []*spare          // forked children waiting for a call
	waiters   []chan spareReply // calls waiting for a child, oldest first
	procs     map[int]*spare    // every child not yet released
	dead      chan struct{}     // closed when the zygote stops serving
	why       string            // why it stopped

	stopOnce sync.Once
}

// spare is one child forked by the zygote: first a clean fork waiting on a
// socket of its own for a call (idle), then, once a call has taken it
// (owned), that call's process.
type spare struct {
	pid  int
	conn *net.UnixConn // nexa's end of the child's socket
	// owned is set while a call holds the child: its exit report goes to
	// exit. A child nobody holds is released as soon as it has exited.
	// Guarded by zygote.mu.
	owned bool
	exit  chan exitStatus // the child's exit (it is then an unreaped zombie)
	// pidfd, when the kernel has them, tells nexa itself that the child
	// has exited, without waiting for the zygote's report (which says how).
	pidfd *os.File
}

// close lets go of nexa's handles on the child: its socket (a child still
// waiting for a call sees end of file and leaves) and its pidfd.
func (sp *spare) close() {
	sp.conn.Close()
	if sp.pidfd != nil {
		sp.pidfd.Close()
	}
}

// exited returns a channel closed once the child has exited, as its pidfd
// tells; nil (never ready) without one. It must be asked before close.
func (sp *spare) exited() <-chan struct{} {
	if sp.pidfd == nil {
		return nil
	}
	rc, err := sp.pidfd.SyscallConn()
	if err != nil {
		return nil
	}
	ch := make(chan struct{})
	go func() {
		// A pidfd becomes readable when its process exits. The check runs
		// once before the wait and again after each wake-up.
		err := rc.Read(func(fd uintptr) bool {
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			n, err := unix.Poll(fds, 0)
			return err == nil && n > 0
		})
		if err == nil {
			close(ch)
		}
	}()
	return ch
}

type spareReply struct {
	sp  *spare
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
	Pid    int    `json:"pid"`
	Spare  *int   `json:"spare"`
	Error  string `json:"error"`
	Exited int    `json:"exited"`
	Code   *int   `json:"code"`
	Signal *int   `json:"signal"`
}

// startZygote starts a zygote in dir with env, waits for its ready message
// and has it fork its first spare child.
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
		pid: cmd.Process.Pid, proc: cmd.Process, conn: conn, out: tailbuf.New(tailSize),
		exited: make(chan struct{}), procs: map[int]*spare{}, dead: make(chan struct{}),
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
		return nil, fmt.Errorf("zygote did not start: %v%s", err, explainOutput(z.out))
	}
	go z.readLoop()
	// The first call finds a child already forked.
	z.mu.Lock()
	n = z.refillLocked(true)
	z.mu.Unlock()
	z.requestForks(n)
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
		idle := z.idle
		z.idle = nil
		z.mu.Unlock()
		z.conn.Close()
		// Its idle children see end of file and leave (the zygote kills
		// them too, unless it is already dead).
		for _, sp := range idle {
			sp.close()
		}
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
	oob := make([]byte, unix.CmsgSpace(4*4))
	for {
		n, oobn, _, _, err := z.conn.ReadMsgUnix(buf, oob)
		if err != nil {
			why := "its control connection closed"
			if !errors.Is(err, io.EOF) {
				why = "its control connection failed: " + err.Error()
			}
			z.stopWith("the warm interpreter stopped (" + why + ")" + explainOutput(z.out))
			return
		}
		fds := receivedFDs(oob[:oobn])
		if n == 0 {
			closeFDs(fds)
			z.stopWith("the warm interpreter stopped (its control connection closed)" + explainOutput(z.out))
			return
		}
		var m zmsg
		if err := json.Unmarshal(buf[:n], &m); err != nil {
			closeFDs(fds)
			z.stopWith("the warm interpreter sent a garbled message")
			return
		}
		z.dispatch(m, fds)
	}
}

// receivedFDs returns the descriptors passed with a message (already
// close-on-exec: the net package receives with MSG_CMSG_CLOEXEC).
func receivedFDs(oob []byte) []int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for i := range msgs {
		if got, err := unix.ParseUnixRights(&msgs[i]); err == nil {
			fds = append(fds, got...)
		}
	}
	return fds
}

func closeFDs(fds []int) {
	for _, fd := range fds {
		_ = unix.Close(fd)
	}
}

func (z *zygote) dispatch(m zmsg, fds []int) {
	switch {
	case m.Spare != nil:
		z.gotSpare(*m.Spare, m.Error, fds)
		return
	case m.Exited > 0:
		st := exitStatus{}
		if m.Signal != nil {
			st.signal = syscall.Signal(*m.Signal)
		} else if m.Code != nil {
			st.code = *m.Code
		}
		z.mu.Lock()
		sp := z.procs[m.Exited]
		delete(z.procs, m.Exited)
		if sp != nil && sp.owned {
			sp.exit <- st // buffered; one report per child
			z.mu.Unlock()
			break
		}
		if sp != nil {
			z.idle = slices.DeleteFunc(z.idle, func(x *spare) bool { return x == sp })
		}
		z.mu.Unlock()
		// A child no call holds (idle, or given up before its request):
		// it ran nothing; let it be reaped.
		if sp != nil {
			sp.close()
		}
		go z.release(m.Exited)
	}
	closeFDs(fds)
}

// gotSpare takes a forked child (pid, with nexa's end of its socket as the
// one descriptor) to the oldest waiting call, else to the idle list. A
// failed fork (pid 0) is reported to the oldest waiting call.
func (z *zygote) gotSpare(pid int, forkErr string, fds []int) {
	var conn *net.UnixConn
	if pid > 0 && len(fds) == 1 {
		f := os.NewFile(uintptr(fds[0]), "spare")
		fc, err := net.FileConn(f)
		f.Close()
		if c, ok := fc.(*net.UnixConn); err == nil && ok {
			conn = c
		} else if fc != nil {
			fc.Close()
		}
	} else {
		closeFDs(fds)
	}
	if forkErr == "" && conn == nil {
		forkErr = "no socket came with the forked child"
	}
	z.mu.Lock()
	defer z.mu.Unlock()
	z.requested--
	if conn == nil {
		// A child without a usable socket sees end of file and leaves;
		// its exit report, finding no owner, releases it.
		if len(z.waiters) > 0 {
			ch := z.waiters[0]
			z.waiters = z.waiters[1:]
			ch <- spareReply{err: forkErr}
		}
		return
	}
	sp := &spare{pid: pid, conn: conn, exit: make(chan exitStatus, 1)}
	// The child stays an unreaped zombie until released, so its pid still
	// names it.
	sp.pidfd = openPidfd(pid)
	z.procs[pid] = sp
	switch {
	case !z.alive():
		sp.close()
	case len(z.waiters) > 0:
		ch := z.waiters[0]
		z.waiters = z.waiters[1:]
		sp.owned = true
		ch <- spareReply{sp: sp}
	default:
		z.idle = append(z.idle, sp)
	}
}

// refillLocked counts the fork requests to send so that every waiting call
// will have a child, and spareTarget more if spares is set, and records
// them as requested.
func (z *zygote) refillLocked(spares bool) int {
	n := len(z.waiters) - z.requested - len(z.idle)
	if spares {
		n += spareTarget
	}
	if n < 0 || !z.alive() {
		return 0
	}
	z.requested += n
	return n
}

// refill asks for the spare children a call took, once it has ended: forked
// while the call ran, a spare's preparation would compete with it for the
// machine's cores.
func (z *zygote) refill() {
	z.mu.Lock()
	n := z.refillLocked(true)
	z.mu.Unlock()
	z.requestForks(n)
}

// requestForks asks the zygote for n more children.
func (z *zygote) requestForks(n int) {
	for i := 0; i < n; i++ {
		if _, err := z.conn.Write([]byte(`{"op":"fork"}`)); err != nil {
			z.stopWith("the warm interpreter stopped (its control connection failed: " + err.Error() + ")")
			return
		}
	}
}

// release tells the zygote that nexa is done with pid (its group has been
// killed): it may now reap it.
func (z *zygote) release(pid int) {
	_, _ = z.conn.Write(fmt.Appendf(nil, `{"op":"release","pid":%d}`, pid))
}

// take hands a forked child to a call: one already waiting, else the next
// one forked. The zygote is asked at once for a child to replace it, so
// the next call finds one waiting too. fault reports that the zygote
// failed (it died, did not fork in time, or could not be asked): it should
// be replaced.
func (z *zygote) take(ctx context.Context, timeout time.Duration) (sp *spare, fault bool, err error) {
	z.mu.Lock()
	if !z.alive() {
		z.mu.Unlock()
		return nil, true, errors.New(z.reason())
	}
	var ch chan spareReply
	if len(z.idle) > 0 {
		sp = z.idle[0]
		z.idle = z.idle[1:]
		sp.owned = true
	} else {
		ch = make(chan spareReply, 1)
		z.waiters = append(z.waiters, ch)
	}
	n := z.refillLocked(false)
	z.mu.Unlock()
	z.requestForks(n)
	if sp != nil {
		return sp, false, nil
	}

	t := time.NewTimer(timeout)
	defer t.Stop()
	var r spareReply
	select {
	case r = <-ch:
	case <-z.dead:
		if r = z.stopWaiting(ch); r.sp != nil {
			z.giveUp(r.sp)
		}
		return nil, true, errors.New(z.reason())
	case <-t.C:
		if r = z.stopWaiting(ch); r.sp == nil {
			return nil, true, fmt.Errorf("the warm interpreter did not fork within %s", timeout)
		}
	case <-ctx.Done():
		if r = z.stopWaiting(ch); r.sp != nil {
			z.putBack(r.sp)
		}
		return nil, false, ctx.Err()
	}
	if r.sp == nil {
		return nil, false, fmt.Errorf("the warm interpreter could not fork: %s", r.err)
	}
	return r.sp, false, nil
}

// stopWaiting withdraws a call's wait for a child, returning what was
// handed to it meanwhile, if anything.
func (z *zygote) stopWaiting(ch chan spareReply) spareReply {
	z.mu.Lock()
	defer z.mu.Unlock()
	if i := slices.Index(z.waiters, ch); i >= 0 {
		z.waiters = slices.Delete(z.waiters, i, i+1)
		return spareReply{}
	}
	return <-ch // handed over under the lock, so it is there
}

// putBack returns a child that got nothing from its call to the idle list.
func (z *zygote) putBack(sp *spare) {
	z.mu.Lock()
	if _, known := z.procs[sp.pid]; known && z.alive() {
		sp.owned = false
		z.idle = append([]*spare{sp}, z.idle...)
		z.mu.Unlock()
		return
	}
	z.mu.Unlock()
	z.giveUp(sp)
}

// giveUp lets go of a child that got no request (it runs nothing): its
// socket is closed, so it leaves, and it is released once it has exited.
func (z *zygote) giveUp(sp *spare) {
	sp.close()
	z.mu.Lock()
	_, waiting := z.procs[sp.pid]
	sp.owned = false // its exit report will find no owner: released then
	z.mu.Unlock()
	if !waiting {
		go z.release(sp.pid) // it has already exited
	}
}

// handOver sends a call to the child sp: its output pipe and result channel
// (SCM_RIGHTS) with the first bytes of the request. It returns how much of
// the request went; an error means nothing did, and the child ran nothing.
func (sp *spare) handOver(payload []byte, logW, resW *os.File) (int, error) {
	first := payload
	if len(first) > 64<<10 {
		first = first[:64<<10]
	}
	// Fd puts the files in blocking mode, which is what the child needs
	// (exec.Cmd does the same for the files it passes).
	rights := unix.UnixRights(int(logW.Fd()), int(resW.Fd()))
	n, _, err := sp.conn.WriteMsgUnix(first, rights, nil)
	return n, err
}

// warmCall is a forked call's child and nexa's ends of its pipes.
type warmCall struct {
	sp         *spare
	logR, resR *os.File
}

// startCall has a child of z take the call: a waiting child gets the
// output pipe, the result channel and the first bytes of payload (the
// caller sends the rest). fault reports that the zygote failed; a call
// that gets no child ran nothing.
func startCall(ctx context.Context, z *zygote, timeout time.Duration, payload []byte) (wc *warmCall, sent int, fault bool, err error) {
	logR, logW, err := os.Pipe()
	if err != nil {
		return nil, 0, false, err
	}
	resR, resW, err := os.Pipe()
	if err != nil {
		logR.Close()
		logW.Close()
		return nil, 0, false, err
	}
	// The child receives its own copies of the write ends; ours must go so
	// EOF can be seen.
	defer logW.Close()
	defer resW.Close()
	for tries := 1; ; tries++ {
		sp, fault, err := z.take(ctx, timeout)
		if err != nil {
			logR.Close()
			resR.Close()
			return nil, 0, fault, err
		}
		n, err := sp.handOver(payload, logW, resW)
		if err == nil {
			return &warmCall{sp: sp, logR: logR, resR: resR}, n, false, nil
		}
		// The child is gone (killed from outside) or its socket broke:
		// it got nothing. Take another.
		z.giveUp(sp)
		if ctx.Err() != nil || !z.alive() || tries == 3 {
			logR.Close()
			resR.Close()
			return nil, 0, ctx.Err() == nil, fmt.Errorf("hand the call to a forked child: %w", err)
		}
	}
}

// runWarm runs an unsandboxed call in a child forked by a zygote. ok is
// false when the call did not start there and must take the per-call path:
// nothing of it ran (no child received its request).
func (e *Executor) runWarm(ctx context.Context, inv tool.Invocation, req *request) (out tool.Outcome, ok bool, err error) {
	zs := e.zygotes
	dir := inv.WorkDir
	if dir == "" {
		dir, err = os.Getwd()
	} else if !filepath.IsAbs(dir) {
		dir, err = filepath.Abs(dir)
	}
	if err != nil || ctx.Err() != nil {
		zs.fallbacks.Add(1)
		return tool.Outcome{}, false, nil
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
			return tool.Outcome{}, false, nil
		}
	}
	zenv := env[:len(env)-len(callVars)]
	key := zygoteKey(dir, zenv)

	wreq := *req
	wreq.Environ = base64.StdEncoding.EncodeToString([]byte(strings.Join(env[len(zenv):], "\x00")))
	wreq.Cwd = dir
	payload, err := json.Marshal(&wreq)
	if err != nil {
		return tool.Outcome{}, true, &StartError{Tool: inv.Tool.Name, Reason: "encode request", Err: err}
	}

	// A zygote that died or misbehaves is replaced once; then the call
	// runs per call.
	for attempt := 0; attempt < 2; attempt++ {
		z, slot := zs.acquire(ctx, key, dir, zenv)
		if z == nil {
			break
		}
		wc, sent, fault, _ := startCall(ctx, z, zs.spawn, payload)
		if wc == nil {
			zs.done(slot)
			if !fault {
				break
			}
			zs.discard(slot, z)
			continue
		}
		out, again, err := e.waitWarm(ctx, inv, slot, z, wc, payload[sent:])
		z.refill()
		zs.done(slot)
		if !again {
			zs.warmCalls.Add(1)
			return out, true, err
		}
		zs.discard(slot, z)
	}
	zs.fallbacks.Add(1)
	return tool.Outcome{}, false, nil
}

// waitWarm sends the rest of the request to a forked call and waits for
// its end, as run does for a child of nexa. again reports a call that ran
// nothing because its zygote died under it (a child taken from a zygote
// that had just died refuses the call, or gets killed with the zygote):
// no start record, no final record, and the result channel read to its
// end. It may run elsewhere.
func (e *Executor) waitWarm(ctx context.Context, inv tool.Invocation, slot *zslot, z *zygote, wc *warmCall, rest []byte) (out tool.Outcome, again bool, err error) {
	name := inv.Tool.Name
	pid := wc.sp.pid
	logW := inv.Log
	if logW == nil {
		logW = io.Discard
	}
	rd := readCall(wc.logR, wc.resR, logW)
	reqDone := make(chan struct{})
	go func() {
		defer close(reqDone)
		if len(rest) > 0 {
			_, _ = wc.sp.conn.Write(rest)
		}
		_ = wc.sp.conn.CloseWrite()
	}()

	timer, stopTimer := e.callTimer(inv)
	defer stopTimer()

	// The child's exit is known from its pidfd, or from the zygote's
	// report, which also says how it ended (known).
	gone := wc.sp.exited()
	var st exitStatus
	exited, known := false, false
	killReason := ""
	select {
	case st = <-wc.sp.exit:
		exited, known = true, true
	case <-gone:
		exited = true
	case <-rd.resDone:
		// Result delivered (or the channel closed): let the interpreter
		// finish its exit, within the grace period.
		g := time.NewTimer(e.grace)
		select {
		case st = <-wc.sp.exit:
			exited, known = true, true
		case <-gone:
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
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	if !exited {
		stuck := time.NewTimer(zygoteStopWait)
		select {
		case st = <-wc.sp.exit:
			exited, known = true, true
		case <-gone:
			exited = true
		case <-z.dead:
			select {
			case st = <-wc.sp.exit:
				exited, known = true, true
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
		z.release(pid)
	}
	// Closing the socket also drops whatever of the request the child
	// never read (and the descriptors, had it died before receiving them).
	wc.sp.close()
	<-reqDone

	resHeld := !drain(wc.resR, rd.resDone)
	drain(wc.logR, rd.logDone)

	if !resHeld && !rd.tooLarge {
		if started, final := parseRecords(rd.result); !started && final == nil && (!z.alive() || orphaned(rd.result)) {
			return tool.Outcome{}, true, nil
		}
	}
	reason := killReason
	if reason == "" && exited && !known {
		// Only a call without a final record needs to say how its
		// process ended: the zygote reports it (it reaps the child only
		// after that).
		if _, final := parseRecords(rd.result); final == nil {
			stuck := time.NewTimer(zygoteStopWait)
			select {
			case st = <-wc.sp.exit:
				known = true
			case <-z.dead:
			case <-stuck.C:
			}
			stuck.Stop()
		}
	}
	switch {
	case reason != "":
	case exited && known:
		reason = st.describe()
	case exited || z.alive():
		reason = "the interpreter ended without a result"
	default:
		reason = "the interpreter ended without a result (" + z.reason() + ")"
	}
	out, err = callOutcome(name, rd.result, rd.tooLarge, false, resHeld, reason, rd.tail)
	return out, false, err
}

// orphaned reports whether a forked child refused its call because its
// zygote was gone (a record of its own on the result channel).
func orphaned(result []byte) bool {
	for _, line := range bytes.Split(result, []byte("\n")) {
		var r struct {
			Orphaned bool `json:"orphaned"`
		}
		if json.Unmarshal(line, &r) == nil && r.Orphaned {
			return true
		}
	}
	return false
}
