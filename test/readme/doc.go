// Package readme holds tests of the README's code: every Go block is a
// complete program that builds, and the pkg/idp example runs as written.
package readme
