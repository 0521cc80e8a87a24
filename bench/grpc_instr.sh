#!/usr/bin/env bash
# bench/grpc_instr.sh: user-space instructions per unary gRPC call of
# idp-proxy and of a bare h2c httputil.ReverseProxy (bench/grpcload bare),
# in one run, counted by valgrind's callgrind as bench/instr.sh counts
# requests: each proxy runs under callgrind in front of the same gRPC
# upstream (bench/grpcload upstream, h2c); bench/grpcload load (one
# connection, 4 concurrent unary calls, a valid token) warms it up for 3 s,
# then the counters are zeroed, the load runs again and the counters are
# dumped: instructions / calls made. Also prints calls/s under callgrind
# (only their ratio means anything) and natively (no valgrind, same load).
#
#   bench/grpc_instr.sh                     # 10 s of counted load per case
#   INSTR_SECONDS=20 bench/grpc_instr.sh
#   INSTR_KEEP=1 bench/grpc_instr.sh     # keep the callgrind files and logs
#
# Needs valgrind (apt-get install valgrind).
set -euo pipefail
cd "$(dirname "$0")/.."

for c in valgrind callgrind_control callgrind_annotate; do
	command -v "$c" >/dev/null || { echo "bench/grpc_instr.sh: $c not found (apt-get install valgrind)" >&2; exit 1; }
done
secs=${INSTR_SECONDS:-10}
godebug=asyncpreemptoff=1
if [ "$(go env GOARCH)" = amd64 ]; then godebug+=,cpu.rdtscp=off; fi
work=$(mktemp -d /tmp/idp-grpc-instr.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	if [ -n "${INSTR_KEEP:-}" ]; then echo "bench/grpc_instr.sh: kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT

for p in bench/grpcload bench/provider cmd/idp-proxy; do
	go build -o "$work/$(basename "$p")" "./$p"
done
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
up=$(free_port)
"$work/grpcload" upstream -listen "127.0.0.1:$up" >"$work/upstream.log" 2>&1 &
pids+=($!)
mkdir "$work/tokens"
"$work/provider" -n 1 -invalid 0 -out "$work/tokens" >"$work/provider.log" 2>&1 &
pids+=($!)
for _ in $(seq 120); do grep -q '"url"' "$work/provider.log" 2>/dev/null && break; sleep 0.5; done
provider=$(sed -n 's/.*"url":"\([^"]*\)".*/\1/p' "$work/provider.log")
[ -n "$provider" ] || { echo "bench/grpc_instr.sh: the provider did not start:" >&2; cat "$work/provider.log" >&2; exit 1; }
token=$(head -1 "$work/tokens/valid.txt")

idp=$(free_port)
cat >"$work/idp-proxy.yaml" <<EOC
listen: "127.0.0.1:$idp"
metrics_listen: ""
server: {h2c: true, drain_delay: 1ms}
upstream:
  url: "http://127.0.0.1:$up"
  protocol: h2c
idp:
  server_url: "$provider"
  realm: bench
  client_id: bench
  optional_audiences: [account]
routes:
  - match: /grpc.testing.TestService/
    roles: [bench-user]
default_policy: deny
log: {format: json, level: warn}
EOC
bare=$(free_port)

# measure NAME PORT CMD...: prints NAME CALLS INSTRUCTIONS/CALL CALLS/S.
measure() {
	local name=$1 port=$2
	shift 2
	GODEBUG=$godebug valgrind --tool=callgrind --callgrind-out-file="$work/cg.$name" "$@" >"$work/$name.log" 2>&1 &
	local vp=$!
	pids+=("$vp")
	local ok=
	for _ in $(seq 120); do
		kill -0 "$vp" 2>/dev/null || { echo "bench/grpc_instr.sh: $name: valgrind exited:" >&2; tail -15 "$work/$name.log" >&2; exit 1; }
		if "$work/grpcload" load -addr "127.0.0.1:$port" -token "$token" -d 0 2>/dev/null; then ok=1; break; fi
		sleep 0.5
	done
	[ -n "$ok" ] || { echo "bench/grpc_instr.sh: $name never answered a call:" >&2; tail -5 "$work/$name.log" >&2; exit 1; }
	"$work/grpcload" load -addr "127.0.0.1:$port" -token "$token" -d 3s >/dev/null
	callgrind_control -z "$vp" >/dev/null 2>&1
	local n
	n=$("$work/grpcload" load -addr "127.0.0.1:$port" -token "$token" -d "${secs}s") ||
		{ echo "bench/grpc_instr.sh: $name: the load failed; its log:" >&2; tail -15 "$work/$name.log" >&2; exit 1; }
	callgrind_control -d "$vp" >/dev/null 2>&1
	kill "$vp"
	wait "$vp" 2>/dev/null || true
	local ir
	ir=$(callgrind_annotate --auto=no "$work/cg.$name.1" 2>/dev/null | awk '/PROGRAM TOTALS/{gsub(",","",$1); print $1}')
	[ "${n:-0}" -gt 0 ] && [ -n "$ir" ] || { echo "bench/grpc_instr.sh: $name: no calls or no count ('${n:-}', '${ir:-}')" >&2; exit 1; }
	echo "$name $n $((ir / n)) $((n / secs))"
}

# native NAME PORT CMD...: calls/s without valgrind, the same load.
native() {
	local name=$1 port=$2
	shift 2
	"$@" >"$work/$name-native.log" 2>&1 &
	local p=$!
	pids+=("$p")
	for _ in $(seq 60); do "$work/grpcload" load -addr "127.0.0.1:$port" -token "$token" -d 0 2>/dev/null && break; sleep 0.2; done
	"$work/grpcload" load -addr "127.0.0.1:$port" -token "$token" -d 1s >/dev/null
	local n
	n=$("$work/grpcload" load -addr "127.0.0.1:$port" -token "$token" -d 5s)
	kill "$p"
	wait "$p" 2>/dev/null || true
	echo "$((n / 5))"
}

b=$(measure bare-h2c "$bare" "$work/grpcload" bare -listen "127.0.0.1:$bare" -upstream "http://127.0.0.1:$up")
i=$(measure idp-proxy "$idp" "$work/idp-proxy" serve --config "$work/idp-proxy.yaml")
nb=$(native bare-h2c "$bare" "$work/grpcload" bare -listen "127.0.0.1:$bare" -upstream "http://127.0.0.1:$up")
ni=$(native idp-proxy "$idp" "$work/idp-proxy" serve --config "$work/idp-proxy.yaml")
nb2=$(native bare-h2c "$bare" "$work/grpcload" bare -listen "127.0.0.1:$bare" -upstream "http://127.0.0.1:$up")
ni2=$(native idp-proxy "$idp" "$work/idp-proxy" serve --config "$work/idp-proxy.yaml")
read -r _ bn bir bcs <<<"$b"
read -r _ in iir ics <<<"$i"
echo "| case | calls counted | instructions/call | / bare-h2c | calls/s native (2 rounds) |"
echo "|---|---|---|---|---|"
awk -v n="$bn" -v ir="$bir" -v a="$nb" -v b="$nb2" 'BEGIN { printf "| bare-h2c | %d | %d | 1.000 | %d · %d |\n", n, ir, a, b }'
awk -v n="$in" -v ir="$iir" -v base="$bir" -v a="$ni" -v b="$ni2" 'BEGIN { printf "| idp-proxy | %d | %d | %.3f | %d · %d |\n", n, ir, ir / base, a, b }'
awk -v i="$ni" -v i2="$ni2" -v b="$nb" -v b2="$nb2" 'BEGIN { printf "\nidp-proxy / bare-h2c calls/s native: %.3f\n", (i + i2) / (b + b2) }'
