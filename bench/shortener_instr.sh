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
# The switches bench/instr.sh explains: no asynchronous preemption, and on
# amd64 no RDTSCP (valgrind 3.19 announces it but cannot run it).
godebug=asyncpreemptoff=1
if [ "$(go env GOARCH)" = amd64 ]; then godebug+=,cpu.rdtscp=off; fi
bin=$(mktemp -d)/shortener.test
go test -c -o "$bin" ./pkg/shortener
count() { # case, N → instructions
	local out
	out=$(mktemp)
	if ! GOGC=off GODEBUG=$godebug valgrind --tool=callgrind --callgrind-out-file="$out" "$bin" -test.run '^$' \
		-test.bench "${BENCH:-BenchmarkRedirectHTTP}/$1" -test.benchtime "$2x" -test.cpu 1 >"$out.log" 2>&1 ||
		! grep -q '^summary:' "$out"; then
		echo "bench/shortener_instr.sh: case $1 at $2 iterations failed under valgrind:" >&2
		tail -n 5 "$out.log" >&2
		exit 1
	fi
	awk '/^summary:/ {print $2}' "$out"
	rm -f "$out" "$out.log"
}
for c in "$@"; do
	a=$(count "$c" "$N1")
	b=$(count "$c" "$N2")
	echo "$c $(( (b - a) / (N2 - N1) )) instructions/request ($a at $N1, $b at $N2)"
done
