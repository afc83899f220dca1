// Package tailbuf keeps the last bytes a process wrote, in bounded memory.
//
// A child process (an MCP server, a Python interpreter, a shell command)
// may write without end, yet when it fails the most useful thing to show is
// how its output ended. A Buffer is the io.Writer to copy that output into:
// it never fails and never blocks the writer, so a pipe is always drained,
// and it holds at most twice its limit between compactions.
package tailbuf

import "sync"

// Buffer keeps the last bytes written to it, as many as New was given. It
// is safe for concurrent use; the zero value keeps nothing.
type Buffer struct {
	mu    sync.Mutex
	max   int
	buf   []byte
	total int64
}

// New returns a Buffer that keeps the last max bytes.
func New(max int) *Buffer { return &Buffer{max: max} }

// Write keeps the end of p. It never fails, so that whatever copies a
// process's output into it never stops draining the pipe.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.total += int64(len(p))
	if b.max <= 0 {
		return len(p), nil
	}
	if len(p) >= b.max {
		b.buf = append(b.buf[:0], p[len(p)-b.max:]...)
		return len(p), nil
	}
	b.buf = append(b.buf, p...)
	// Compacting only past twice the limit keeps a stream of small writes
	// from copying the kept bytes on every one of them.
	if len(b.buf) > 2*b.max {
		b.buf = append(b.buf[:0], b.buf[len(b.buf)-b.max:]...)
	}
	return len(p), nil
}

// Bytes returns a copy of the kept bytes: the last ones up to the limit,
// or all of them when fewer were written.
func (b *Buffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	kept := b.buf
	if len(kept) > b.max {
		kept = kept[len(kept)-b.max:]
	}
	return append([]byte(nil), kept...)
}

// String returns the kept bytes as text, as they were written (a cut may
// have split a UTF-8 character at the start).
func (b *Buffer) String() string { return string(b.Bytes()) }

// Total is the number of bytes written so far, kept or not.
func (b *Buffer) Total() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.total
}
