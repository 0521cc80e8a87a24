package main

import (
	"syscall"
	"time"
)

// sleepUntil sleeps until t with nanosleep (high-resolution timer, about
// 50 µs of slack), not Go's timers, whose wake-ups are rounded up to the
// millisecond when the process is idle. The caller should be locked to its
// thread (runtime.LockOSThread): the thread blocks in the system call.
func sleepUntil(t time.Time) {
	for {
		d := time.Until(t)
		if d <= 0 {
			return
		}
		ts := syscall.NsecToTimespec(int64(d))
		if err := syscall.Nanosleep(&ts, nil); err != nil && err != syscall.EINTR {
			time.Sleep(time.Until(t))
			return
		}
	}
}
