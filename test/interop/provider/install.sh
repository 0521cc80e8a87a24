#!/bin/sh
# Installs the npm dependencies of the interop OIDC provider (oidc-provider, pinned
# in package-lock.json). Idempotent and quiet: runs `npm ci` only when
# node_modules is missing or older than package-lock.json.
set -eu
cd "$(dirname "$0")"

if ! command -v node >/dev/null 2>&1; then
  echo "test/interop/provider: node is not installed (Node.js >= 18 is needed, e.g. apt-get install nodejs npm)" >&2
  exit 1
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "test/interop/provider: npm is not installed (e.g. apt-get install npm)" >&2
  exit 1
fi
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 18 ]; then
  echo "test/interop/provider: Node.js $(node -v) is too old, >= 18 is needed" >&2
  exit 1
fi

# npm ci writes node_modules/.package-lock.json; it is newer than the lock file
# after a successful install and matches the lock file's package set.
stamp=node_modules/.package-lock.json
if [ -f "$stamp" ] && [ -d node_modules/oidc-provider ] && [ ! package-lock.json -nt "$stamp" ]; then
  exit 0
fi

if ! out=$(npm ci --no-audit --no-fund --loglevel=error 2>&1); then
  echo "$out" >&2
  echo "test/interop/provider: npm ci failed" >&2
  exit 1
fi
