//go:build !linux

package main

import "time"

// sleepUntil sleeps until t (Go's timers: up to about 1 ms late).
func sleepUntil(t time.Time) { time.Sleep(time.Until(t)) }
