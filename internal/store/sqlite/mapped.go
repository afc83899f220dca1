package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
)

// mmapBytes is how much of the store file a read of a run maps into
// memory instead of copying it page by page into SQLite's cache: a resume
// reads most of a long run's pages once, and through the cache each page
// cost a read and a fresh buffer the kernel had to fault in (a 2,000-step
// resume spent about 5 ms on it;.
const mmapBytes = 1 << 30

// errCutShort is a mapped read that faulted: the store file became
// shorter than SQLite knew it (another program truncated it), which a
// read through SQLite's own reads reports as corruption instead.
var errCutShort = errors.New("the store file was cut short while it was read (another program truncated it?); nothing was written")

// readMapped runs fn in a read transaction that reads the store file
// through a memory map. Only these transactions map the file, and the map
// is dropped when fn returns: a file that shrinks under a mapping faults
// where a read would have failed, so no save and nothing a tool can do in
// between ever reads through one. A fault within fn is errCutShort, not a
// crash; the connection it happened on is then never used again, since
// SQLite was stopped in the middle of its work.
func (s *SQLite) readMapped(ctx context.Context, fn func(*sql.Tx) error) (err error) {
	c, err := s.db.Conn(ctx)
	if err != nil {
		return dbErr(ctx, err)
	}
	if _, err := c.ExecContext(ctx, "PRAGMA mmap_size = "+strconv.Itoa(mmapBytes)); err != nil {
		c.Close()
		return dbErr(ctx, err)
	}
	tx, err := c.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		err = dbErr(ctx, err)
	} else {
		var faulted bool
		if faulted, err = whileMapped(func() error { return fn(tx) }); faulted {
			return err // abandoned: c and tx stay checked out of the pool
		}
		tx.Rollback()
	}
	if _, rerr := c.ExecContext(context.Background(), "PRAGMA mmap_size = 0"); rerr != nil {
		_ = c.Raw(func(any) error { return driver.ErrBadConn }) // never back to the pool still mapped
		err = errors.Join(err, dbErr(ctx, rerr))
	}
	c.Close()
	return err
}

// whileMapped runs fn with a memory fault of this goroutine turned into
// errCutShort (faulted true) instead of the runtime's crash; any other
// panic goes on.
func whileMapped(fn func() error) (faulted bool, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		if f, ok := r.(interface{ Addr() uintptr }); ok {
			faulted, err = true, fmt.Errorf("%w (fault at %#x)", errCutShort, f.Addr())
			return
		}
		panic(r)
	}()
	return false, fn()
}
