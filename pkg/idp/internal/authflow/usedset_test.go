package authflow

import (
	"testing"
	"time"
)

func TestUsedSet(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	u := newUsedSet(4)
	if !u.use("a", now.Add(time.Minute), now) {
		t.Fatal("first use refused")
	}
	if u.use("a", now.Add(time.Minute), now) {
		t.Fatal("second use accepted")
	}
	if !u.use("a", now.Add(2*time.Minute), now.Add(time.Minute)) {
		t.Fatal("use after expiry refused")
	}
	for i := range 100 {
		u.use(string(rune('b'+i)), now.Add(time.Hour), now)
		if len(u.seen) > 4 {
			t.Fatalf("set grew to %d entries, bound is 4", len(u.seen))
		}
	}
}
