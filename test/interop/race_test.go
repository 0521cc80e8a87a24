//go:build race

package interop_test

// raceEnabled: the real binaries are built with -race too.
const raceEnabled = true
