package dpop

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// A key is first once until it expires; then it may be claimed again.
func TestMemoryReplay_FirstUse(t *testing.T) {
	now := testNow
	m := newMemoryReplay(10, func() time.Time { return now })
	claim := func(key string, until time.Time) bool {
		first, err := m.Claim(context.Background(), key, until)
		if err != nil {
			t.Fatal(err)
		}
		return first
	}
	if !claim("a", now.Add(time.Minute)) || claim("a", now.Add(time.Minute)) {
		t.Fatal("a was not first exactly once")
	}
	if !claim("b", now.Add(time.Minute)) {
		t.Fatal("b was not first")
	}
	now = now.Add(time.Minute)
	if !claim("a", now.Add(time.Minute)) {
		t.Fatal("an expired a was not first again")
	}
}

// Full of unexpired keys, the cache refuses (fail closed) rather than
// forget one; once some have expired, they make room.
func TestMemoryReplay_FullFailsClosed(t *testing.T) {
	now := testNow
	m := newMemoryReplay(3, func() time.Time { return now })
	for i, ttl := range []time.Duration{time.Second, time.Minute, time.Minute} {
		if first, err := m.Claim(context.Background(), strconv.Itoa(i), now.Add(ttl)); !first || err != nil {
			t.Fatal(first, err)
		}
	}
	if _, err := m.Claim(context.Background(), "x", now.Add(time.Minute)); !errors.Is(err, ErrReplayFull) {
		t.Fatalf("a full cache answered %v, want ErrReplayFull", err)
	}
	// A key it holds is still refused as a replay, full or not.
	if first, err := m.Claim(context.Background(), "1", now.Add(time.Minute)); first || err != nil {
		t.Fatalf("a replay in a full cache: %v %v", first, err)
	}
	now = now.Add(2 * time.Second) // key 0 expired
	if first, err := m.Claim(context.Background(), "x", now.Add(time.Minute)); !first || err != nil {
		t.Fatalf("after an expiry: %v %v", first, err)
	}
	if len(m.seen) != 3 {
		t.Fatalf("%d entries, want 3", len(m.seen))
	}
}

// A key claimed again after it expired gets a later expiry; the cache
// then still knows that nothing else has expired, and fails closed.
func TestMemoryReplay_FullAfterReclaim(t *testing.T) {
	now := testNow
	m := newMemoryReplay(2, func() time.Time { return now })
	claim := func(key string, ttl time.Duration) (bool, error) {
		return m.Claim(context.Background(), key, now.Add(ttl))
	}
	_, _ = claim("a", time.Second)
	_, _ = claim("b", time.Minute)
	now = now.Add(2 * time.Second)
	if first, err := claim("a", time.Minute); !first || err != nil {
		t.Fatalf("an expired key claimed again: %v %v", first, err)
	}
	if _, err := claim("c", time.Minute); !errors.Is(err, ErrReplayFull) {
		t.Fatalf("a cache full of unexpired keys answered %v, want ErrReplayFull", err)
	}
	if len(m.seen) != 2 {
		t.Fatalf("%d entries, want at most 2", len(m.seen))
	}
}

// The memory of a full cache of DefaultReplaySize entries, per entry.
func TestMemoryReplay_BytesPerEntry(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates a full cache")
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	m := newMemoryReplay(DefaultReplaySize, func() time.Time { return testNow })
	for i := range DefaultReplaySize {
		_, _ = m.Claim(context.Background(), replayKey("jkt", strconv.Itoa(i)), testNow.Add(time.Minute))
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	bytes := after.HeapAlloc - before.HeapAlloc
	t.Logf("replay cache of %d entries: %d bytes, %.1f bytes/entry", DefaultReplaySize, bytes, float64(bytes)/DefaultReplaySize)
	if len(m.seen) != DefaultReplaySize {
		t.Fatalf("%d entries", len(m.seen))
	}
	runtime.KeepAlive(m)
}
