package lang

import "strings"

// Distance is the edit distance between a and b (compared
// case-insensitively) counting an insertion, a deletion, a substitution or a
// swap of two neighbouring characters as one edit (optimal string
// alignment), used to suggest the name a user probably meant.
func Distance(a, b string) int {
	ra, rb := []rune(strings.ToLower(a)), []rune(strings.ToLower(b))
	// three rows: i-2, i-1, i
	pp := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], pp[j-2]+1)
			}
		}
		pp, prev, cur = prev, cur, pp
	}
	return prev[len(rb)]
}

// Closest returns the candidate nearest to name when it is near enough to be
// a plausible misspelling (at most a third of the name's length, and at
// least one edit allowed), or "". Ties go to the alphabetically first
// candidate so that the suggestion does not depend on declaration order.
// Very long names get no suggestion (the distance is quadratic).
func Closest(name string, candidates []string) string {
	if len(name) > 64 {
		return ""
	}
	best, bestD := "", -1
	limit := max(1, len([]rune(name))/3)
	for _, c := range candidates {
		if c == name {
			continue
		}
		if len(c) > 64 {
			continue
		}
		// a name that is the start of a longer one (`risk` for
		// `risk_level`) counts as one edit
		if len(name) >= 3 && strings.HasPrefix(strings.ToLower(c), strings.ToLower(name)+"_") {
			if bestD < 0 || 1 < bestD || (bestD == 1 && c < best) {
				best, bestD = c, 1
			}
			continue
		}
		if len(c)-len(name) > limit || len(name)-len(c) > limit {
			continue
		}
		d := Distance(name, c)
		if d <= limit && (bestD < 0 || d < bestD || (d == bestD && c < best)) {
			best, bestD = c, d
		}
	}
	return best
}
