package shortener

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// hangingStore hangs every Get and Ping until its context ends while
// frozen, as a frozen PostgreSQL does, and counts the calls that reach it.
type hangingStore struct {
	fakeStore
	frozen atomic.Bool
	calls  atomic.Int64
}

func (h *hangingStore) Get(ctx context.Context, code string) (Link, error) {
	if err := h.hang(ctx); err != nil {
		return Link{}, err
	}
	return h.fakeStore.Get(ctx, code)
}

func (h *hangingStore) Ping(ctx context.Context) error { return h.hang(ctx) }

func (h *hangingStore) List(ctx context.Context, owner string, after Cursor, limit int) ([]Link, error) {
	return nil, h.hang(ctx)
}

func (h *hangingStore) hang(ctx context.Context) error {
	h.calls.Add(1)
	if h.frozen.Load() {
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

// Once a call has run out of StoreTimeout, one call at a time goes to the
// store and the others fail at once with ErrStoreUnresponsive, until a
// call answers within it.
func TestStoreNotAnsweringIsTriedOneCallAtATime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		st := &hangingStore{fakeStore: fakeStore{links: map[string]Link{"Abc1234": {Code: "Abc1234", URL: "https://example.com/"}}}}
		s, err := New(st, Options{StoreTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		st.frozen.Store(true)
		if _, err := s.Resolve(ctx, "Abc1234"); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("first call to the frozen store: %v", err)
		}

		start := time.Now()
		var wg sync.WaitGroup
		var refused, waited atomic.Int64
		for range 10 {
			wg.Go(func() {
				_, err := s.Resolve(ctx, "Abc1234")
				switch {
				case errors.Is(err, ErrStoreUnresponsive) && time.Since(start) == 0:
					refused.Add(1)
				case errors.Is(err, context.DeadlineExceeded):
					waited.Add(1)
				default:
					t.Errorf("Resolve: %v after %v", err, time.Since(start))
				}
			})
		}
		wg.Wait()
		if refused.Load() != 9 || waited.Load() != 1 || st.calls.Load() != 2 {
			t.Fatalf("10 calls while the store does not answer: %d refused at once, %d waited, %d reached the store; want 9, 1 (the probe), 2 in all",
				refused.Load(), waited.Load(), st.calls.Load())
		}

		st.frozen.Store(false)
		if _, err := s.Resolve(ctx, "Abc1234"); err != nil {
			t.Fatalf("the probe after the thaw: %v", err)
		}
		for range 3 {
			wg.Go(func() {
				if _, err := s.Resolve(ctx, "Abc1234"); err != nil {
					t.Errorf("after the store answered: %v", err)
				}
			})
		}
		wg.Wait()
	})
}

// While the store is known not to answer, a stale cached link is served
// without asking it; one background probe at a time finds out when it
// answers again, and the link is read from the store from then on.
func TestStaleLinksServedWithoutWaitingWhileTheStoreDoesNotAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		st := &hangingStore{fakeStore: fakeStore{links: map[string]Link{"Abc1234": {Code: "Abc1234", URL: "https://example.com/"}}}}
		s, err := New(st, Options{StoreTimeout: 5 * time.Second, CacheSize: 10, CacheTTL: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Resolve(ctx, "Abc1234"); err != nil {
			t.Fatal(err)
		}
		st.frozen.Store(true)
		time.Sleep(time.Second) // stale from now on
		if l, err := s.Resolve(ctx, "Abc1234"); err != nil || l.URL != "https://example.com/" {
			t.Fatalf("the call that finds the store frozen: %+v, %v; want the stale link", l, err)
		}
		before := st.calls.Load()
		start := time.Now()
		for range 100 {
			if _, err := s.Resolve(ctx, "Abc1234"); err != nil || time.Since(start) != 0 {
				t.Fatalf("stale link while the store does not answer: %v after %v", err, time.Since(start))
			}
		}
		synctest.Wait()
		if n := st.calls.Load() - before; n != 1 {
			t.Fatalf("%d calls reached the store for 100 stale redirects; want 1 background probe", n)
		}

		st.frozen.Store(false)
		time.Sleep(5 * time.Second) // the probe sent while frozen times out
		synctest.Wait()
		if _, err := s.Resolve(ctx, "Abc1234"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // the next probe answers
		before = st.calls.Load()
		if _, err := s.Resolve(ctx, "Abc1234"); err != nil || st.calls.Load() != before+1 {
			t.Fatalf("after the store answered: %v, %d calls; want a store read", err, st.calls.Load()-before)
		}
	})
}

// A list, a statistics query or a batch that runs out of StoreTimeout may
// just be big: it does not take the store as not answering.
func TestSlowBulkCallDoesNotTakeTheStoreAsNotAnswering(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		st := &hangingStore{fakeStore: fakeStore{links: map[string]Link{"Abc1234": {Code: "Abc1234", URL: "https://example.com/"}}}}
		s, err := New(st, Options{StoreTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		st.frozen.Store(true)
		if _, _, err := s.List(ctx, "alice", Cursor{}, 10); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("List: %v", err)
		}
		st.frozen.Store(false)
		var wg sync.WaitGroup
		for range 5 {
			wg.Go(func() {
				if _, err := s.Resolve(ctx, "Abc1234"); err != nil {
					t.Errorf("Resolve after a slow list: %v", err)
				}
			})
		}
		wg.Wait()
		if !s.StoreAnswering() {
			t.Fatal("the store is taken as not answering after a slow list")
		}
	})
}
