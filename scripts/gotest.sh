#!/usr/bin/env bash
# scripts/gotest.sh COMMAND...: runs COMMAND (`go test ...`) and exits with
# its status. Tests that skip for want of their environment record it
# (internal/testneed, in the file $IDP_TEST_SKIPS); go test still prints
# "ok" for their packages, so after the run one line says which suites did
# not run and what to set.
set -uo pipefail
skips=$(mktemp)
trap 'rm -f "$skips"' EXIT
IDP_TEST_SKIPS=$skips "$@"
rc=$?
if [ -s "$skips" ]; then
	# need, hint, package directory, test → one clause per need, in the
	# order first met: "N tests in PKG, PKG need NAME (HINT)".
	awk -F'\t' -v root="$PWD/" '
		!($1 in hint) { order[++n] = $1; hint[$1] = $2 }
		{
			pkg = $3; if (index(pkg "/", root) == 1) pkg = "./" substr(pkg, length(root) + 1)
			if (!(($1, pkg) in seen)) { seen[$1, pkg] = 1; pkgs[$1] = pkgs[$1] (pkgs[$1] == "" ? "" : " ") pkg }
			if (!(($1, $3, $4) in counted)) { counted[$1, $3, $4] = 1; tests[$1]++ }
		}
		END {
			line = "SKIPPED, although their packages say ok:"
			for (i = 1; i <= n; i++) {
				k = order[i]
				line = line (i > 1 ? ";" : "") sprintf(" %d test%s in %s need%s %s (%s)", tests[k], tests[k] == 1 ? "" : "s", pkgs[k], tests[k] == 1 ? "s" : "", k, hint[k])
			}
			print line
		}' "$skips"
fi
exit "$rc"
