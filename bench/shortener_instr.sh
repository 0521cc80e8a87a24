#!/usr/bin/env bash
# Instructions per redirect of the shortener's BenchmarkRedirectHTTP cases
# (loopback HTTP, client in the same process), counted with valgrind's
# callgrind: a run of N1 and one of N2 iterations of each case, the
# difference divided by N2 - N1 (setup, preloading and warm-up cancel
# out). GOGC=off and -test.cpu 1, as in bench/README.md ("Shortener
# routing"). PostgreSQL cases need TEST_POSTGRES_DSN (the server's own
# instructions are not counted).
#
#   bench/shortener_instr.sh 'constant302-before-bolt$' 'bolt$' 'bolt-stats$'
#   BENCH=BenchmarkRedirectCost N1=20000 N2=60000 bench/shortener_instr.sh 'constant302$' 'bolt$' 'bolt-stats$' 'pg$' 'pg-stats$'
#
# BenchmarkRedirectHTTP's counts of store-backed cases moved by up to 60 %
# between runs on a busy machine (its client and server share the
# process and the scheduler); BenchmarkRedirectCost's (the handler alone,
# one goroutine) repeat.
set -euo pipefail
N1=${N1:-3000}
N2=${N2:-9000}
cd "$(dirname "$0")/.."
bin=$(mktemp -d)/shortener.test
go test -c -o "$bin" ./pkg/shortener
count() { # case, N → instructions
	local out
	out=$(mktemp)
	GOGC=off GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind --callgrind-out-file="$out" "$bin" -test.run '^$' \
		-test.bench "${BENCH:-BenchmarkRedirectHTTP}/$1" -test.benchtime "$2x" -test.cpu 1 >/dev/null 2>&1
	awk '/^summary:/ {print $2}' "$out"
	rm -f "$out"
}
for c in "$@"; do
	a=$(count "$c" "$N1")
	b=$(count "$c" "$N2")
	echo "$c $(( (b - a) / (N2 - N1) )) instructions/request ($a at $N1, $b at $N2)"
done
