// Package testsupport holds the helpers the repository's tests share,
// one concept a file: a log sink safe for a server's goroutines
// (SyncBuffer), a client that announces a body and never sends it all
// (SlowBody). For tests only: nothing outside _test.go files imports it.
package testsupport
