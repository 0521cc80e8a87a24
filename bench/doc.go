// Package bench holds the tests of the benchmark scripts (instr.sh); the
// benchmarks themselves are its sub-directories and make targets.
package bench
