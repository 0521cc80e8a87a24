package directmap

import (
	"strconv"
	"testing"
)

// A key always maps to the same slot; slots are bounded; Reset empties them.
func TestTable(t *testing.T) {
	tab := Make[string](16)
	if tab.Len() != 16 {
		t.Fatalf("Len = %d", tab.Len())
	}
	for i := range 100 {
		k := strconv.Itoa(i)
		s := tab.String(k)
		if s != tab.Bytes([]byte(k)) {
			t.Fatalf("String and Bytes disagree on %q", k)
		}
		v := k
		s.Store(&v)
		if got := tab.String(k).Load(); got == nil || *got != k {
			t.Fatalf("slot of %q holds %v", k, got)
		}
	}
	x := new(int)
	first := Comparable(&tab, x)
	if Comparable(&tab, x) != first {
		t.Fatal("a pointer maps to two slots")
	}
	tab.Reset()
	for i := range 100 {
		if tab.String(strconv.Itoa(i)).Load() != nil {
			t.Fatal("slot not empty after Reset")
		}
	}
	if n := testing.AllocsPerRun(100, func() { tab.String("key").Load() }); n != 0 {
		t.Fatalf("look-up allocates %.0f times", n)
	}
}

// Make refuses a size that is not a power of two.
func TestMakeSize(t *testing.T) {
	for _, n := range []int{0, -1, 3, 100} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Make(%d) did not panic", n)
				}
			}()
			Make[int](n)
		}()
	}
}
