// Package suggest finds the name a user probably meant when they typed one
// that does not exist (a flag, an environment variable, a key), for "did
// you mean" hints.
package suggest

import "strings"

// Closest returns the name of names nearest to s by edit distance,
// ignoring case, if it is near enough to be a likely typo: at most one
// edit per three characters of s (and at least one). It returns "" when
// none is.
func Closest(s string, names []string) string {
	s = strings.ToLower(s)
	best, bestD := "", max(1, len(s)/3)+1
	for _, n := range names {
		if d := Distance(s, strings.ToLower(n)); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

// Distance is the optimal-string-alignment distance of a and b:
// Levenshtein's insertions, deletions and substitutions, plus the
// transposition of two adjacent characters as one edit ("stroe" is one
// edit from "store").
func Distance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
