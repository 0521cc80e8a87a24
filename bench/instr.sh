#!/usr/bin/env bash
# bench/instr.sh: user-space instructions per request of each proxy, counted
# by valgrind's callgrind. Unlike requests/s, the count does not move with
# what else the machine is doing (the same binaries and load give the same
# count within about 1%), so it shows small changes of the proxies' own
# cost that the noise of a shared machine hides in the wrk groups.
#
#   bench/instr.sh            # 10 s of load per case
#   INSTR_SECONDS=20 bench/instr.sh
#   INSTR_KEEP=1 bench/instr.sh   # keep the callgrind files (callgrind_annotate DIR/cg.CASE.1)
#   INSTR_BASELINE=main bench/instr.sh   # also idp-repeated and idp-distinct of idp-proxy built at that git revision
#   INSTR_CASES="bare-proxy idp-repeated" bench/instr.sh   # only these cases (names as in the table)
#
# Needs valgrind and wrk (Debian: apt-get install valgrind wrk). Each case
# runs one proxy under callgrind in front of bench/upstream; wrk (1 thread,
# 4 connections) warms it up for 3 s, then the counters are zeroed, wrk
# loads it again and the counters are dumped: instructions / requests
# answered. Cases: bare-proxy (bench/bareproxy, the baseline), idp-repeated
# (idp-proxy, one valid token: cache hits), idp-distinct and
# naive-distinct (bench/naiveproxy: golang-jwt + keyfunc, no cache), both
# with 4,000 distinct valid tokens in turn against an idp-proxy cache of
# 500, the counted run going on where the warm-up stopped, so that every
# request verifies a signature; idp-hosts50
# (idp-proxy with 50 upstreams chosen by host, the same token as
# idp-repeated, requests for the 25th host), whose ratio to idp-repeated
# is the cost of choosing among many apps; idp-issuers3 (idp-proxy trusting
# three issuers, idp.issuers naming two more bench/provider realms, with a
# claims rule on the route and two claim headers; the same token as
# idp-repeated), whose ratio to idp-repeated is the cost of several
# issuers and of rules and headers on any claim.
# idp-origin is idp-repeated with an Origin header on every request, and
# idp-cors the same with a CORS policy on the route that allows it.
# idp-exchange is idp-repeated with the upstream's credential exchange
# (RFC 8693 at bench/provider, audience bench-api): after the first
# request the exchanged token is cached, so its ratio to idp-repeated is
# the cost of a cached exchange.
# INSTR_CASES="idp-repeated idp-exchange" runs only the cases named.
# idp-repeated-traced is idp-repeated with tracing on (tracing.enabled,
# OTEL_TRACES_SAMPLER=always_on: every request sampled, three spans each)
# exporting over OTLP/HTTP to bench/otlpsink.
# idp-dpop is a route with dpop: required, one DPoP-bound token (Keycloak's
# shape) repeated, and a fresh DPoP proof on every request (bench/provider
# -dpop-url makes them beforehand, bench/lua/dpop.lua sends each once;
# idp.dpop.max_age 1h covers the run). Its cost over idp-repeated is
# compared with one ES256 signature verification (bench/es256verify under
# callgrind, -n 2000 minus -n 0): the budget is one verification + 15 % of
# idp-repeated.
#
# Kernel time is not counted: the proxies make the same system calls per
# request (strace -c: 2 reads and 1 write on each side), which are about
# 40 % of the bare proxy's CPU time, so the ratios here overstate the
# difference in total CPU time. Go runs with GODEBUG=asyncpreemptoff=1
# (callgrind cannot follow the preemption signals) and, on amd64,
# cpu.rdtscp=off: valgrind 3.19 announces RDTSCP in the CPUID it emulates
# but cannot run it on a CPU without it ("Unrecognised instruction" in
# runtime.cputicks, first met under load), so the runtime must take its
# RDTSC path. A case whose proxy dies, answers no request or yields no
# count stops the run there, naming the case, with valgrind's last lines.
set -euo pipefail
cd "$(dirname "$0")/.."

for c in valgrind callgrind_control callgrind_annotate wrk curl; do
	command -v "$c" >/dev/null || { echo "bench/instr.sh: $c not found (apt-get install valgrind wrk curl)" >&2; exit 1; }
done
secs=${INSTR_SECONDS:-10}
# wanted NAME: whether case NAME is to run: INSTR_CASES (names separated
# by spaces or commas) lists the cases, all when unset or empty.
wanted() {
	[ -z "${INSTR_CASES:-}" ] && return 0
	[[ " ${INSTR_CASES//,/ } " == *" $1 "* ]]
}
cases=${INSTR_CASES:-}
for c in ${cases//,/ }; do
	case "$c" in
	bare-proxy | idp-repeated | idp-distinct | idp-repeated-traced | naive-distinct | idp-hosts50 | idp-issuers3 | idp-origin | idp-cors) ;;
	*) echo "bench/instr.sh: INSTR_CASES names an unknown case: $c" >&2; exit 2 ;;
	esac
done

# The switches every Go program under valgrind needs (see above).
godebug=asyncpreemptoff=1
if [ "$(go env GOARCH)" = amd64 ]; then godebug+=,cpu.rdtscp=off; fi
work=$(mktemp -d /tmp/idp-instr.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	if [ -d "$work/base" ]; then git worktree remove --force "$work/base" >/dev/null 2>&1 || true; fi
	if [ -n "${INSTR_KEEP:-}" ]; then
		echo "bench/instr.sh: kept $work" >&2
	else
		rm -rf "$work"
	fi
}
trap cleanup EXIT

echo "building into $work" >&2
for p in bench/upstream bench/provider bench/bareproxy bench/naiveproxy bench/otlpsink bench/es256verify cmd/idp-proxy; do
	go build -o "$work/$(basename "$p")" "./$p"
done

if [ -n "${INSTR_BASELINE:-}" ]; then
	git worktree add --detach "$work/base" "$INSTR_BASELINE" >/dev/null
	(cd "$work/base" && go build -o "$work/idp-proxy-base" ./cmd/idp-proxy)
fi

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
up=$(free_port)
"$work/upstream" -listen "127.0.0.1:$up" >"$work/upstream.log" 2>&1 &
pids+=($!)
mkdir "$work/tokens"
# wanted NAME: the case is in INSTR_CASES (all when unset).
wanted() { [ -z "${INSTR_CASES:-}" ] || [[ " $INSTR_CASES " == *" $1 "* ]]; }
idp=$(free_port)
dpopargs=()
if wanted idp-dpop; then dpopargs=(-dpop-url "http://127.0.0.1:$idp/dpop/items" -dpop-n 40000); fi
"$work/provider" -n 4000 -invalid 1 -out "$work/tokens" "${dpopargs[@]}" >"$work/provider.log" 2>&1 &
pids+=($!)
for _ in $(seq 120); do grep -q '"url"' "$work/provider.log" 2>/dev/null && break; sleep 0.5; done
provider=$(sed -n 's/.*"url":"\([^"]*\)".*/\1/p' "$work/provider.log")
[ -n "$provider" ] || { echo "bench/instr.sh: the provider did not start:" >&2; cat "$work/provider.log" >&2; exit 1; }
token=$(head -1 "$work/tokens/valid.txt")
# Two more issuers for idp-issuers3: realms of their own, one token each.
others=()
for r in ci partner; do
	mkdir "$work/tokens-$r"
	"$work/provider" -realm "$r" -n 1 -invalid 0 -out "$work/tokens-$r" >"$work/provider-$r.log" 2>&1 &
	pids+=($!)
done
for r in ci partner; do
	for _ in $(seq 120); do grep -q '"url"' "$work/provider-$r.log" 2>/dev/null && break; sleep 0.5; done
	iss=$(sed -n 's/.*"issuer":"\([^"]*\)".*/\1/p' "$work/provider-$r.log")
	[ -n "$iss" ] || { echo "bench/instr.sh: the provider of realm $r did not start:" >&2; cat "$work/provider-$r.log" >&2; exit 1; }
	others+=("$iss")
done
awk '{print "/api/items " $0}' "$work/tokens/valid.txt" >"$work/distinct.txt"

sink=$(free_port)
"$work/otlpsink" -listen "127.0.0.1:$sink" >"$work/otlpsink.log" 2>&1 &
pids+=($!)
# Read by the traced idp-proxy only (tracing.enabled); the rest ignore them.
export OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$sink" OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf \
	OTEL_TRACES_SAMPLER=always_on OTEL_SERVICE_NAME=idp-proxy-bench

ops=$(free_port)
cat >"$work/idp-proxy.yaml" <<EOF
listen: "127.0.0.1:$idp"
metrics_listen: "127.0.0.1:$ops"
upstream:
  url: "http://127.0.0.1:$up"
  max_idle_conns_per_host: 1024
idp:
  server_url: "$provider"
  realm: bench
  client_id: bench
  optional_audiences: [account]
  verified_cache_size: 500
routes:
  - match: /public/
    public: true
  - match: /api/
    roles: [bench-user]
default_policy: deny
server:
  drain_delay: 1ms
log:
  format: json
  level: warn
EOF
{ cat "$work/idp-proxy.yaml"; printf 'tracing:\n  enabled: true\n'; } >"$work/idp-proxy-traced.yaml"
# The same proxy exchanging the caller's token for one of bench-api.
awk '
	/^  max_idle_conns_per_host:/ { print; print "  credential: exchange"; print "  audience: bench-api"; next }
	/^  client_id: bench/ { print; print "  client_secret: bench-secret"; next }
	{ print }
' "$work/idp-proxy.yaml" >"$work/idp-proxy-exchange.yaml"

# The same proxy in front of 50 apps chosen by host (all the same
# upstream here): upstreams instead of upstream.url.
awk -v up="http://127.0.0.1:$up" '
	/^upstream:/ { print "upstream:"; print "  max_idle_conns_per_host: 1024"; print "upstreams:";
		for (i = 1; i <= 50; i++) { print "  - match: h" i ".bench.test/"; print "    url: \"" up "\"" }
		skip = 1; next }
	skip && /^  / { next }
	{ skip = 0; print }
' "$work/idp-proxy.yaml" >"$work/idp-proxy-hosts50.yaml"
host50=h25.bench.test

# The same proxy trusting three issuers, with a claims rule and two claim
# headers.
awk -v ci="${others[0]}" -v partner="${others[1]}" '
	/^  verified_cache_size:/ { print; print "  issuers:";
		print "    - {name: ci, issuer_url: \"" ci "\", audiences: [bench], claims: {preset: generic}}";
		print "    - {name: partner, issuer_url: \"" partner "\", audiences: [bench]}"; next }
	/^    roles: \[bench-user\]/ { print; print "    claims: {azp: [bench]}"; next }
	/^default_policy:/ { print "headers:"; print "  claims: {X-Auth-Request-Acr: acr, X-Auth-Request-Sid: sid}"; print; next }
	{ print }
' "$work/idp-proxy.yaml" >"$work/idp-proxy-issuers3.yaml"

# The same proxy with a CORS policy on the route (idp-cors: requests from
# an allowed origin): its ratio to idp-origin is the cost of the policy.
awk '
	/^    roles: \[bench-user\]/ { print; print "    cors:";
		print "      allowed_origins: [\"https://other.example.com\", \"https://app.example.com\", \"https://*.preview.example.com\"]";
		print "      allowed_headers: [Authorization]"; print "      exposed_headers: [ETag]"; next }
	{ print }
' "$work/idp-proxy.yaml" >"$work/idp-proxy-cors.yaml"
origin=https://app.example.com

# The same proxy with a route that requires DPoP (idp-dpop).
awk '
	/^  verified_cache_size:/ { print; print "  dpop: {max_age: 1h}"; next }
	/^routes:/ { print; print "  - match: /dpop/"; print "    roles: [bench-user]"; print "    dpop: required"; next }
	{ print }
' "$work/idp-proxy.yaml" >"$work/idp-proxy-dpop.yaml"

# measure NAME PORT LOAD CMD...: LOAD is "repeated", "distinct",
# "host" (repeated, with Host: $host50), "origin" (repeated, with
# Origin: $origin) or "dpop" (the DPoP-bound token, a fresh proof each).
measure() {
	local name=$1 port=$2 load=$3
	shift 3
	wanted "${name%@*}" || return 0
	GODEBUG=$godebug valgrind --tool=callgrind --callgrind-out-file="$work/cg.$name" "$@" >"$work/$name.log" 2>&1 &
	local vp=$!
	pids+=("$vp")
	local ok= host=()
	if [ "$load" = host ]; then host=(-H "Host: $host50"); fi
	if [ "$load" = origin ]; then host=(-H "Origin: $origin"); fi
	for _ in $(seq 120); do
		kill -0 "$vp" 2>/dev/null || died "$name" "before answering"
		if [ "$(curl -s -o /dev/null -w '%{http_code}' "${host[@]}" -H "Authorization: Bearer $token" "http://127.0.0.1:$port/api/items")" = 200 ]; then ok=1; break; fi
		sleep 0.5
	done
	[ -n "$ok" ] || { echo "bench/instr.sh: $name did not answer 200:" >&2; tail -5 "$work/$name.log" >&2; exit 1; }
	local args=(-t1 -c4 "${host[@]}" -H "Authorization: Bearer $token" "http://127.0.0.1:$port/api/items")
	if [ "$load" = distinct ]; then
		args=(-t1 -c4 -s bench/lua/rotate.lua "http://127.0.0.1:$port" -- "$work/distinct.txt" 1 0)
	fi
	local warm=("${args[@]}")
	if [ "$load" = dpop ]; then
		# Each proof once: the warm-up sends the first ones, the
		# measurement those from line 20,000 on.
		warm=(-t1 -c4 -s bench/lua/dpop.lua "http://127.0.0.1:$port" -- "$work/tokens/dpop.txt" 0)
		args=(-t1 -c4 -s bench/lua/dpop.lua "http://127.0.0.1:$port" -- "$work/tokens/dpop.txt" 20000)
	fi
	local out n
	out=$(wrk -d3s "${warm[@]}")
	if [ "$load" = distinct ]; then
		# The counted run goes on where the warm-up stopped: tokens the
		# warm-up sent (and idp-proxy cached) would be cache hits.
		n=$(awk '/requests in/{print $1}' <<<"$out")
		args[${#args[@]}-1]=${n:-0}
	fi
	callgrind_control -z "$vp" >/dev/null 2>&1
	out=$(wrk -d"${secs}s" "${args[@]}")
	kill -0 "$vp" 2>/dev/null || died "$name" "under load"
	callgrind_control -d "$vp" >/dev/null 2>&1
	n=$(awk '/requests in/{print $1}' <<<"$out")
	if grep -q 'Non-2xx' <<<"$out"; then
		echo "bench/instr.sh: $name answered non-2xx responses:" >&2
		echo "$out" >&2
		exit 1
	fi
	kill "$vp"
	wait "$vp" 2>/dev/null || true
	local ir
	ir=$(callgrind_annotate --auto=no "$work/cg.$name.1" 2>/dev/null | awk '/PROGRAM TOTALS/{gsub(",","",$1); print $1}')
	if ! [ "${n:-0}" -gt 0 ] 2>/dev/null || [ -z "$ir" ]; then
		echo "bench/instr.sh: $name: no requests or no instruction count (requests: '${n:-}', instructions: '${ir:-}'):" >&2
		echo "$out" >&2
		tail -5 "$work/$name.log" >&2
		exit 1
	fi
	echo "$name $n $((ir / n))" >>"$work/results"
}

# died NAME WHEN: the case's valgrind has exited; stop the run with why.
died() {
	echo "bench/instr.sh: $1: valgrind exited $2:" >&2
	tail -15 "$work/$1.log" >&2
	if grep -q 'Unrecognised instruction' "$work/$1.log"; then
		echo "bench/instr.sh: valgrind cannot run an instruction of this CPU that the Go runtime chose; GODEBUG was $godebug (a cpu.<feature>=off switch for the instruction above may help)" >&2
	fi
	exit 1
}

bare=$(free_port)
naive=$(free_port)
# measure runs in this shell (not in a command substitution), so that
# its exit ends the run at the first failed case.
: >"$work/results"
measure bare-proxy "$bare" repeated "$work/bareproxy" -listen "127.0.0.1:$bare" -upstream "http://127.0.0.1:$up"
measure idp-repeated "$idp" repeated "$work/idp-proxy" serve --config "$work/idp-proxy.yaml"
if [ -n "${INSTR_BASELINE:-}" ]; then
	measure "idp-repeated@$INSTR_BASELINE" "$idp" repeated "$work/idp-proxy-base" serve --config "$work/idp-proxy.yaml"
fi
measure idp-distinct "$idp" distinct "$work/idp-proxy" serve --config "$work/idp-proxy.yaml"
if [ -n "${INSTR_BASELINE:-}" ]; then
	measure "idp-distinct@$INSTR_BASELINE" "$idp" distinct "$work/idp-proxy-base" serve --config "$work/idp-proxy.yaml"
fi
measure idp-repeated-traced "$idp" repeated "$work/idp-proxy" serve --config "$work/idp-proxy-traced.yaml"
measure naive-distinct "$naive" distinct "$work/naiveproxy" -listen "127.0.0.1:$naive" -upstream "http://127.0.0.1:$up" -issuer "$provider/realms/bench"
measure idp-hosts50 "$idp" host "$work/idp-proxy" serve --config "$work/idp-proxy-hosts50.yaml"
measure idp-issuers3 "$idp" repeated "$work/idp-proxy" serve --config "$work/idp-proxy-issuers3.yaml"
measure idp-origin "$idp" origin "$work/idp-proxy" serve --config "$work/idp-proxy.yaml"
measure idp-cors "$idp" origin "$work/idp-proxy" serve --config "$work/idp-proxy-cors.yaml"
measure idp-exchange "$idp" repeated "$work/idp-proxy" serve --config "$work/idp-proxy-exchange.yaml"
measure idp-dpop "$idp" dpop "$work/idp-proxy" serve --config "$work/idp-proxy-dpop.yaml"
# es256_ir: the instructions of one ES256 verification (see idp-dpop).
es256_ir() {
	local k ir0 ir1
	for k in 0 2000; do
		GODEBUG=$godebug valgrind --tool=callgrind --callgrind-out-file="$work/cg.es256.$k" "$work/es256verify" -n "$k" >"$work/es256.$k.log" 2>&1
	done
	ir0=$(callgrind_annotate --auto=no "$work/cg.es256.0" 2>/dev/null | awk '/PROGRAM TOTALS/{gsub(",","",$1); print $1}')
	ir1=$(callgrind_annotate --auto=no "$work/cg.es256.2000" 2>/dev/null | awk '/PROGRAM TOTALS/{gsub(",","",$1); print $1}')
	echo $(((ir1 - ir0) / 2000))
}
mapfile -t results <"$work/results"
# ir_of NAME: the instructions per request of case NAME, empty if it did not run.
ir_of() { printf '%s\n' "${results[@]}" | awk -v n="$1" '$1 == n {print $3}'; }
# ratio A B TEXT: prints TEXT with A / B when both cases ran.
ratio() {
	local a b
	a=$(ir_of "$1")
	b=$(ir_of "$2")
	[ -n "$a" ] && [ -n "$b" ] || return 0
	awk -v a="$a" -v b="$b" -v t="$3" 'BEGIN { printf t "\n", a / b }'
}
base=$(ir_of bare-proxy)
naiveIR=$(ir_of naive-distinct)
if wanted idp-repeated-traced; then
	spans=$(curl -s "http://127.0.0.1:$sink/spans")
	[ "${spans:-0}" -gt 0 ] || { echo "bench/instr.sh: idp-repeated-traced exported no span to bench/otlpsink" >&2; exit 1; }
fi
echo "| case | requests | instructions/request | / bare-proxy | / naive-distinct |"
echo "|---|---|---|---|---|"
for r in "${results[@]}"; do
	read -r name n ir <<<"$r"
	awk -v name="$name" -v n="$n" -v ir="$ir" -v b="$base" -v nv="$naiveIR" \
		'BEGIN { printf "| %s | %d | %d | %s | %s |\n", name, n, ir, b ? sprintf("%.3f", ir / b) : "", nv ? sprintf("%.3f", ir / nv) : "" }'
done
echo
ratio idp-repeated bare-proxy "idp-repeated / bare-proxy: %.3f"
ratio idp-distinct naive-distinct "idp-distinct / naive-distinct: %.3f"
ratio idp-hosts50 idp-repeated "idp-hosts50 / idp-repeated: %.3f (50 upstreams chosen by host vs one upstream)"
ratio idp-issuers3 idp-repeated "idp-issuers3 / idp-repeated: %.3f (three issuers, a claims rule and two claim headers vs one issuer)"
ratio idp-cors idp-origin "idp-cors / idp-origin: %.3f (a CORS policy on the route vs none, the same requests from an allowed origin)"
ratio idp-repeated-traced idp-repeated "idp-repeated-traced / idp-repeated: %.3f (tracing on, every request sampled, vs off)"
ratio idp-exchange idp-repeated "idp-exchange / idp-repeated: %.3f (credential exchange, the exchanged token cached, vs forward)"
if [ -n "${INSTR_BASELINE:-}" ]; then
	ratio idp-repeated "idp-repeated@$INSTR_BASELINE" "idp-repeated / idp-repeated@$INSTR_BASELINE: %.4f"
	ratio idp-distinct "idp-distinct@$INSTR_BASELINE" "idp-distinct / idp-distinct@$INSTR_BASELINE: %.4f"
fi
dp=$(ir_of idp-dpop)
rep=$(ir_of idp-repeated)
if [ -n "$dp" ] && [ -n "$rep" ]; then
	es=$(es256_ir)
	awk -v d="$dp" -v r="$rep" -v e="$es" 'BEGIN {
		printf "idp-dpop / idp-repeated: %.3f; one ES256 verification: %d instructions; idp-dpop - idp-repeated = %d = %.2f ES256 verifications + %.1f %% of idp-repeated; budget (one verification + 15 %%): %d, %s\n",
			d / r, e, d - r, (d - r) / e, ((d - r) - e) * 100 / r, e + 0.15 * r, (d - r <= e + 0.15 * r) ? "within" : "OVER" }'
fi
