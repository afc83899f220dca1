package sqlite

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
)

// TestManyOpenANewStoreAtOnce: processes that open one new store at the
// same moment (a fleet of workers started together) must all get it.
// Switching the file to WAL needs it alone; two connections switching at
// once can deadlock inside SQLite, which then answers one of them BUSY at
// once, without waiting through the busy timeout.
func TestManyOpenANewStoreAtOnce(t *testing.T) {
	for round := range 20 {
		path := filepath.Join(t.TempDir(), "runs.sqlite3")
		const n = 16
		var wg sync.WaitGroup
		errs := make(chan error, n)
		start := make(chan struct{})
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				s, err := Open(context.Background(), path)
				if err != nil {
					errs <- err
					return
				}
				s.Close()
			}()
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("round %d: %v", round, err)
		}
	}
}
