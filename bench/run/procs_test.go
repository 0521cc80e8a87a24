package main

import (
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// cpuTime reads this process's CPU time as the kernel accounts it: it
// agrees with getrusage (within /proc's 10 ms ticks), after some work.
func TestCPUTime(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	rusage := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			t.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	start, deadline := rusage(), time.Now().Add(10*time.Second)
	x := 0
	for rusage()-start < 100*time.Millisecond && time.Now().Before(deadline) { // busy, however loaded the machine
		for range 100000 {
			x++
		}
	}
	want := rusage()
	got, err := cpuTime(os.Getpid())
	after := rusage()
	if err != nil {
		t.Fatal(err)
	}
	if got < want-50*time.Millisecond || got > after+50*time.Millisecond {
		t.Fatalf("cpuTime = %v, getrusage %v..%v (%d iterations)", got, want, after, x)
	}
	if _, err := cpuTime(-1); err == nil {
		t.Fatal("no error for a missing process")
	}
}
