package engine

import (
	"crypto/rand"
	"encoding/binary"
	"time"
)

// crockford is the base32 alphabet of ULIDs: no I, L, O, U, so ids survive
// being read aloud or typed.
const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// NewRunID returns "run_" + a ULID: sortable by creation time, unique without
// coordination between processes.
func NewRunID(now time.Time) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(now.UnixMilli())<<16)
	_, _ = rand.Read(b[6:])
	// 128 bits → 26 base32 characters, most significant first.
	out := make([]byte, 26)
	hi := binary.BigEndian.Uint64(b[:8])
	lo := binary.BigEndian.Uint64(b[8:])
	for i := 25; i >= 0; i-- {
		out[i] = crockford[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	return "run_" + string(out)
}

// ValidRunID accepts the shape of run ids ("run_" and up to 60 letters or
// digits), so that an id read from a command line or an export file never
// names a path when a store keeps files by run id.
func ValidRunID(id string) bool {
	if len(id) <= 4 || len(id) > 64 || id[:4] != "run_" {
		return false
	}
	for _, c := range id[4:] {
		if !(c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z') {
			return false
		}
	}
	return true
}
