package shortener

import (
	"context"
	"sync"
	"time"
)

// lazyDeadline is context.WithTimeout without its cost until someone
// waits on it: a store call that never asks for Done (bbolt's reads,
// which cannot be interrupted anyway) gets its deadline without a timer,
// a registration with the parent or a clock read; one that does (pgx
// waits on Done during a round trip) gets the timer then. Err reports
// the deadline as WithTimeout's would, from the clock, also when nobody
// waited. Create one with withLazyDeadline; call stop when the call is
// over.
type lazyDeadline struct {
	parent   context.Context
	deadline time.Time

	mu         sync.Mutex
	done       chan struct{} // made by Done
	err        error
	stopTimer  func() bool // set once Done armed the timer
	stopParent func() bool
}

// withLazyDeadline returns a context that is done d after start, or when
// parent is.
func withLazyDeadline(parent context.Context, start time.Time, d time.Duration) *lazyDeadline {
	deadline := start.Add(d)
	if pd, ok := parent.Deadline(); ok && pd.Before(deadline) {
		deadline = pd
	}
	return &lazyDeadline{parent: parent, deadline: deadline}
}

func (c *lazyDeadline) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *lazyDeadline) Value(key any) any { return c.parent.Value(key) }

func (c *lazyDeadline) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done != nil {
		return c.done
	}
	c.done = make(chan struct{})
	if c.err == nil {
		c.err = c.check()
	}
	if c.err != nil {
		close(c.done)
		return c.done
	}
	c.stopTimer = time.AfterFunc(time.Until(c.deadline), func() { c.end(context.DeadlineExceeded) }).Stop
	c.stopParent = context.AfterFunc(c.parent, func() { c.end(c.parent.Err()) })
	return c.done
}

// Err is nil until the deadline or the parent's end, whether or not
// anyone waits on Done; context.Canceled once stop has run.
func (c *lazyDeadline) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		if err := c.check(); err != nil {
			c.endLocked(err)
		}
	}
	return c.err
}

// check returns the parent's error, or DeadlineExceeded past the
// deadline.
func (c *lazyDeadline) check() error {
	if err := c.parent.Err(); err != nil {
		return err
	}
	if !time.Now().Before(c.deadline) {
		return context.DeadlineExceeded
	}
	return nil
}

// end ends the context with err unless it has ended.
func (c *lazyDeadline) end(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.endLocked(err)
	}
}

// endLocked records err, closes done if made and stops the timer and
// the parent's watch if armed. c.mu is held; c.err is nil.
func (c *lazyDeadline) endLocked(err error) {
	c.err = err
	if c.done != nil {
		close(c.done)
	}
	if c.stopTimer != nil {
		c.stopTimer()
		c.stopParent()
	}
}

// stop releases the timer, if one was armed, as WithTimeout's cancel
// does: the context is done (context.Canceled) from then on, unless it
// had ended before.
func (c *lazyDeadline) stop() { c.end(context.Canceled) }
