// Package procenv takes nexa's keys out of the environment that other
// processes can read.
//
// Tools start with a scrubbed environment (package toolenv), but on Linux
// any process may try to read nexa's own: /proc/PID/environ shows the
// environment block nexa was started with, and a tool that is not
// sandboxed runs as the same user, often as root in CI containers. The
// kernel shows that block from nexa's memory (between the env_start and
// env_end addresses of /proc/PID/stat) on every read, so HideSecrets
// overwrites, in that memory, the value of every secret-named variable
// (secrets.IsSecretName: NEXA_API_KEY, OPENAI_API_KEY, ANTHROPIC_API_KEY,
// PREFIX_API_KEY, NEXA_SERVE_TOKEN, NEXA_NOTIFY_SECRET, GITHUB_TOKEN, …),
// the password of every URL value (NEXA_STORE, DATABASE_URL) and any other
// copy of those values. A reader then sees NEXA_API_KEY=**** however
// privileged it is. HideSecrets also marks nexa not dumpable, so a process
// of the same user that is not root cannot read nexa's environ or memory
// at all.
//
// This is safe for nexa because the Go runtime copies the environment
// into Go strings before any package initialises (runtime.goenvs_unix
// builds each entry with gostring, which allocates and copies, not with
// gostringnocopy, which would alias the block): os.Getenv and os.Environ
// keep returning the real values. Only C code reading the C environ
// (nexa links none that reads a key) would see the masked values.
//
// Limits, stated in docs/tools.md: the values still live in nexa's heap,
// so a root process with CAP_SYS_PTRACE can read them from
// /proc/PID/mem; tools with `sandbox: true` run in their own PID
// namespace and cannot see nexa's process at all. On systems other than
// Linux HideSecrets does nothing.
package procenv

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"

	"github.com/nexa-run/nexa/internal/secrets"
)

// maskByte replaces each byte of a hidden value, keeping the block's
// layout (the kernel's bounds do not move) and showing a reader plainly
// that the value was withheld.
const maskByte = '*'

// maxBlock bounds the environment block HideSecrets is willing to read:
// the kernel limits arguments and environment together to a quarter of
// the stack limit, far less than this.
const maxBlock = 64 << 20

// scrub overwrites in block (NUL-terminated KEY=VALUE entries, as the
// kernel lays out a process's environment) the value of every
// secret-named variable, the password of every URL value, and every other
// occurrence of those values at least secrets.MinRedactLen long. It
// returns how many bytes it changed.
func scrub(block []byte) int {
	var hidden [][]byte
	changed := 0
	maskRange := func(b []byte) {
		for i := range b {
			if b[i] != maskByte {
				b[i] = maskByte
				changed++
			}
		}
	}
	entries := bytes.Split(block, []byte{0})
	for _, e := range entries {
		name, value, ok := bytes.Cut(e, []byte("="))
		if !ok || len(value) == 0 {
			continue
		}
		if secrets.IsSecretName(string(name)) {
			hidden = append(hidden, bytes.Clone(value))
			maskRange(value)
			continue
		}
		if start, end, ok := secrets.URLPasswordSpan(string(value)); ok {
			hidden = append(hidden, bytes.Clone(value[start:end]))
			maskRange(value[start:end])
		}
	}
	// The same value under another name (COPY_OF_KEY=sk-…) is hidden too.
	for _, h := range hidden {
		if len(h) < secrets.MinRedactLen {
			continue
		}
		for _, e := range entries {
			_, value, ok := bytes.Cut(e, []byte("="))
			for ok {
				i := bytes.Index(value, h)
				if i < 0 {
					break
				}
				maskRange(value[i : i+len(h)])
				value = value[i+len(h):]
			}
		}
	}
	return changed
}

// envBounds reads the addresses of the environment block (env_start and
// env_end, fields 50 and 51) from the text of /proc/PID/stat. The command
// name (field 2) is in parentheses and may itself hold spaces and
// parentheses, so fields are counted from the last ')'.
func envBounds(stat []byte) (start, end uint64, err error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, 0, errors.New("no command name in /proc/self/stat")
	}
	f := bytes.Fields(stat[i+1:])
	// f[0] is field 3 (state); field N is f[N-3].
	if len(f) < 51-3+1 {
		return 0, 0, fmt.Errorf("/proc/self/stat has %d fields, want at least 51 (kernel older than 3.5)", len(f)+2)
	}
	if start, err = strconv.ParseUint(string(f[50-3]), 10, 64); err == nil {
		end, err = strconv.ParseUint(string(f[51-3]), 10, 64)
	}
	switch {
	case err != nil:
		return 0, 0, fmt.Errorf("environment bounds in /proc/self/stat: %w", err)
	case start == 0 || end <= start:
		return 0, 0, fmt.Errorf("environment bounds in /proc/self/stat are hidden or empty (%d-%d)", start, end)
	case end-start > maxBlock || end > 1<<63-1:
		return 0, 0, fmt.Errorf("environment block of %d bytes at %#x is implausible", end-start, start)
	}
	return start, end, nil
}
