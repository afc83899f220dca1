package compile

import (
	"path/filepath"
	"strings"
)

// relativeTo returns target relative to the directory of main when target
// lies inside it, else target unchanged.
func relativeTo(main, target string) string {
	base := filepath.Dir(main)
	if filepath.IsAbs(base) != filepath.IsAbs(target) {
		if abs, err := filepath.Abs(base); err == nil {
			base = abs
		}
		if abs, err := filepath.Abs(target); err == nil {
			target = abs
		}
	}
	rel, err := filepath.Rel(base, target)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return target
	}
	return filepath.ToSlash(rel)
}
