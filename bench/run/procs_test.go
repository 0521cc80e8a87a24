package main

import (
	"os"
	"runtime"
	"testing"
	"time"
)

// cpuTime reads this process's CPU time, and it grows with work done.
func TestCPUTime(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	before, err := cpuTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	x := 0
	for start := time.Now(); time.Since(start) < 100*time.Millisecond; {
		x++
	}
	after, err := cpuTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if d := after - before; d < 50*time.Millisecond || d > 10*time.Second {
		t.Fatalf("100 ms of busy loop counted as %v of CPU (%d iterations)", d, x)
	}
	if _, err := cpuTime(-1); err == nil {
		t.Fatal("no error for a missing process")
	}
}
