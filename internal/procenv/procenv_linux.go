//go:build linux

package procenv

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// HideSecrets overwrites the secret values in the environment block that
// /proc/self/environ shows (see the package documentation), then marks the
// process not dumpable. nexa calls it first thing in main, before any tool
// can start. It never panics and leaves os.Getenv working; an error only
// says which protection could not be applied (no /proc, an old kernel, a
// seccomp policy), and nexa runs on without it.
func HideSecrets() error {
	// The block must be written before the process becomes non-dumpable:
	// from then on /proc/self/mem belongs to root and a non-root nexa
	// could no longer open it.
	err := overwriteEnviron()
	if perr := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); perr != nil {
		err = errors.Join(err, fmt.Errorf("mark the process not dumpable: %w", perr))
	}
	return err
}

// overwriteEnviron rewrites the environment block in place through
// /proc/self/mem, which writes to this process's own memory by address
// without any pointer arithmetic in Go.
func overwriteEnviron() error {
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return fmt.Errorf("hide secrets from /proc/self/environ: %w", err)
	}
	start, end, err := envBounds(stat)
	if err != nil {
		return fmt.Errorf("hide secrets from /proc/self/environ: %w", err)
	}
	mem, err := os.OpenFile("/proc/self/mem", os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("hide secrets from /proc/self/environ: %w", err)
	}
	defer mem.Close()
	block := make([]byte, end-start)
	if _, err := mem.ReadAt(block, int64(start)); err != nil {
		return fmt.Errorf("hide secrets from /proc/self/environ: read the block: %w", err)
	}
	if scrub(block) == 0 {
		return nil
	}
	if _, err := mem.WriteAt(block, int64(start)); err != nil {
		return fmt.Errorf("hide secrets from /proc/self/environ: write the block: %w", err)
	}
	return nil
}
