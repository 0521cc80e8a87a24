// Package makefile holds tests of the repository's Makefile: what its
// targets run, as `make -n` prints it, against what their comments and
// the README say.
package makefile
