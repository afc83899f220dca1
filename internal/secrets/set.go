package secrets

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
)

// DefaultBlock is the block a program without `use config NAME` reads, as
// in 2.x, and the fallback block when another one is active.
const DefaultBlock = "default"

// Set is the merged view of every secrets file a program loads. Its zero
// value and a nil *Set are empty sets: every method works on them.
type Set struct {
	files  []string
	flat   map[string]Value
	blocks map[string]map[string]Value
}

// Load parses the files at paths, in order, and merges them with Merge.
// Every path must exist: the caller decides which candidate files apply
// (secrets.nxs beside the main file only if present; NEXA_SECRETS always).
// Empty paths are skipped.
func Load(paths ...string) (*Set, error) {
	var files []*File
	for _, path := range paths {
		if path == "" {
			continue
		}
		f, err := ParseFile(path)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	return Merge(files...), nil
}

// Merge combines parsed files in order. Later files win, key by key: a flat
// key of a later file replaces the same flat key, and a key of a later
// `config NAME` block replaces the same key of that block while the
// block's other keys stay (a map value is replaced whole, not merged). This
// lets the file named by NEXA_SECRETS, loaded last, override single keys of
// the project's secrets.nxs.
func Merge(files ...*File) *Set {
	s := &Set{flat: map[string]Value{}, blocks: map[string]map[string]Value{}}
	for _, f := range files {
		if f == nil {
			continue
		}
		s.files = append(s.files, f.Path)
		for k, v := range f.Flat {
			s.flat[k] = v
		}
		for name, entries := range f.Blocks {
			dst := s.blocks[name]
			if dst == nil {
				dst = map[string]Value{}
				s.blocks[name] = dst
			}
			for k, v := range entries {
				dst[k] = v
			}
		}
	}
	return s
}

// Files lists the files merged into the set, in load order.
func (s *Set) Files() []string {
	if s == nil {
		return nil
	}
	return append([]string(nil), s.files...)
}

// Blocks lists the config block names, sorted.
func (s *Set) Blocks() []string {
	if s == nil {
		return nil
	}
	return sortedKeys(s.blocks)
}

// HasBlock reports whether a `config NAME` block exists, so the CLI can
// warn about a `use config NAME` that names none.
func (s *Set) HasBlock(name string) bool {
	if s == nil {
		return false
	}
	_, ok := s.blocks[name]
	return ok
}

// Block returns a copy of the entries of block name; nil if there is no
// such block.
func (s *Set) Block(name string) map[string]Value {
	if s == nil || s.blocks[name] == nil {
		return nil
	}
	return copyValues(s.blocks[name])
}

// Flat returns a copy of the flat entries (outside any block).
func (s *Set) Flat() map[string]Value {
	if s == nil {
		return map[string]Value{}
	}
	return copyValues(s.flat)
}

// Get finds key in block ("" means the flat entries) and only there: the
// caller owns the precedence between blocks, flat keys and the
// environment. A dotted key reaches into maps when no entry has the
// dotted name itself: Get("default", "MODEL_NAME.strong"). A null value
// counts as absent.
func (s *Set) Get(block, key string) (Value, bool) {
	if s == nil {
		return Value{}, false
	}
	entries := s.flat
	if block != "" {
		entries = s.blocks[block]
	}
	v, ok := lookupPath(entries, key)
	if !ok || v.kind == Null {
		return Value{}, false
	}
	return v, true
}

// Lookup is Get rendered as text (Value.String).
func (s *Set) Lookup(block, key string) (string, bool) {
	v, ok := s.Get(block, key)
	if !ok {
		return "", false
	}
	return v.String(), true
}

func lookupPath(entries map[string]Value, key string) (Value, bool) {
	if v, ok := entries[key]; ok {
		return v, true
	}
	head, rest, dotted := strings.Cut(key, ".")
	if !dotted {
		return Value{}, false
	}
	v, ok := entries[head]
	if !ok || v.kind != Map {
		return Value{}, false
	}
	return lookupPath(v.items, rest)
}

// Env flattens the set into the key/value map Python tools read through
// nexa_secrets, for the active block (the first `use config NAME`; ""
// means DefaultBlock). Precedence, lowest to highest, as nexa_secrets.get
// in 2.x: flat keys, then the DefaultBlock when another block is active,
// then the active block. Maps and lists become JSON text; nulls are left
// out (so the tool falls back to the environment).
func (s *Set) Env(active string) map[string]string {
	env := map[string]string{}
	if s == nil {
		return env
	}
	if active == "" {
		active = DefaultBlock
	}
	layers := []map[string]Value{s.flat}
	if active != DefaultBlock {
		layers = append(layers, s.blocks[DefaultBlock])
	}
	layers = append(layers, s.blocks[active])
	for _, layer := range layers {
		for k, v := range layer {
			if v.kind == Null {
				continue
			}
			env[k] = v.String()
		}
	}
	return env
}

// Strings returns every string value of the set (map entries and list
// elements included), deduplicated and sorted: what must never be shown.
func (s *Set) Strings() []string {
	if s == nil {
		return nil
	}
	var all []string
	for _, v := range s.flat {
		all = v.strings(all)
	}
	for _, entries := range s.blocks {
		for _, v := range entries {
			all = v.strings(all)
		}
	}
	sort.Strings(all)
	out := all[:0]
	for i, v := range all {
		if i == 0 || v != all[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// Format prints the set's shape (files, block names, key counts), never its
// values, so a Set can be logged safely.
func (s *Set) Format(st fmt.State, _ rune) {
	if s == nil {
		_, _ = io.WriteString(st, "secrets.Set{}")
		return
	}
	_, _ = fmt.Fprintf(st, "secrets.Set{files %v, %d flat keys, blocks %v}", s.files, len(s.flat), sortedKeys(s.blocks))
}

// MarshalJSON keeps a Set out of any JSON output by accident: it encodes
// the shape only.
func (s *Set) MarshalJSON() ([]byte, error) {
	if s == nil {
		return []byte("null"), nil
	}
	return json.Marshal(map[string]any{"files": s.files, "blocks": sortedKeys(s.blocks), "flat_keys": len(s.flat)})
}

func copyValues(m map[string]Value) map[string]Value {
	out := make(map[string]Value, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
