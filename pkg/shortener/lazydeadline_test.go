package shortener

import (
	"context"
	"errors"
	"testing"
	"time"
)

type ctxKey struct{}

// Without anyone waiting, the deadline is still reported by Err, from the
// clock, and the context carries its parent's values.
func TestLazyDeadlineErrWithoutDone(t *testing.T) {
	parent := context.WithValue(context.Background(), ctxKey{}, "v")
	c := withLazyDeadline(parent, time.Now(), time.Hour)
	if err := c.Err(); err != nil {
		t.Fatalf("Err = %v before the deadline", err)
	}
	if c.Value(ctxKey{}) != "v" {
		t.Error("parent's value lost")
	}
	past := withLazyDeadline(parent, time.Now().Add(-2*time.Second), time.Second)
	if err := past.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Err = %v past the deadline, want DeadlineExceeded", err)
	}
	select {
	case <-past.Done():
	default:
		t.Fatal("Done not closed past the deadline")
	}
	if d, ok := c.Deadline(); !ok || time.Until(d) < 59*time.Minute {
		t.Errorf("Deadline = %v, %v", d, ok)
	}
}

// A store that waits on Done is woken at the deadline, as by
// context.WithTimeout.
func TestLazyDeadlineDoneAtDeadline(t *testing.T) {
	c := withLazyDeadline(context.Background(), time.Now(), 20*time.Millisecond)
	defer c.stop()
	select {
	case <-c.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Done not closed at the deadline")
	}
	if err := c.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Err = %v, want DeadlineExceeded", err)
	}
}

// The parent's end ends it, whether the waiter came before or after.
func TestLazyDeadlineParentCanceled(t *testing.T) {
	parent, cancel := context.WithCancel(context.Background())
	c := withLazyDeadline(parent, time.Now(), time.Hour)
	done := c.Done()
	cancel()
	<-done
	if err := c.Err(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Err = %v, want Canceled", err)
	}
	late := withLazyDeadline(parent, time.Now(), time.Hour)
	<-late.Done()
	if err := late.Err(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Err = %v, want Canceled", err)
	}
	// A derived context (what pgx makes) follows it too.
	parent2, cancel2 := context.WithCancel(context.Background())
	c2 := withLazyDeadline(parent2, time.Now(), time.Hour)
	child, cancelChild := context.WithCancel(c2)
	defer cancelChild()
	cancel2()
	<-child.Done()
}

// A parent's earlier deadline is the context's.
func TestLazyDeadlineParentDeadline(t *testing.T) {
	parent, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pd, _ := parent.Deadline()
	c := withLazyDeadline(parent, time.Now(), time.Hour)
	if d, _ := c.Deadline(); !d.Equal(pd) {
		t.Errorf("Deadline = %v, want the parent's %v", d, pd)
	}
}

// stop ends it as WithTimeout's cancel does, before or after a waiter.
func TestLazyDeadlineStop(t *testing.T) {
	c := withLazyDeadline(context.Background(), time.Now(), time.Hour)
	c.stop()
	if err := c.Err(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Err after stop = %v, want Canceled", err)
	}
	<-c.Done()
	w := withLazyDeadline(context.Background(), time.Now(), time.Hour)
	done := w.Done()
	go w.stop()
	<-done
	if err := w.Err(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Err after stop = %v, want Canceled", err)
	}
}

func BenchmarkStoreDeadline(b *testing.B) {
	parent, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.Run("WithTimeout", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c, cc := context.WithTimeout(parent, DefaultStoreTimeout)
			_ = c
			cc()
		}
	})
	b.Run("lazy", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c := withLazyDeadline(parent, time.Now(), DefaultStoreTimeout)
			c.stop()
		}
	})
}
