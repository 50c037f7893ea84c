package settings

import (
	"fmt"

	"github.com/spf13/pflag"
)

// didYouMean returns ` (did you mean "NAME"?)` naming the flag of fs
// closest to name, a misspelt config key or flag, or "" when none is close
// (at most two edits away, and fewer edits than the name is long).
func didYouMean(fs *pflag.FlagSet, name string) string {
	best, bestDist := "", 3
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Name == ConfigFlag {
			return
		}
		if d := editDistance(name, f.Name); d < bestDist && d < len(name) {
			best, bestDist = f.Name, d
		}
	})
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// editDistance is the Levenshtein distance between a and b (bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
