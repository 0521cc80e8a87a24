#!/bin/sh
# Installs the npm dependencies of the browser driver (playwright-core, pinned in
# package-lock.json; it downloads no browser: the tests use Debian's
# /usr/bin/chromium). Idempotent and quiet: runs `npm ci` only when node_modules
# is missing or older than package-lock.json.
set -eu
cd "$(dirname "$0")"

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "test/interop/browser: node and npm are needed (Node.js >= 20)" >&2
  exit 1
fi
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 20 ]; then
  echo "test/interop/browser: Node.js $(node -v) is too old, playwright-core needs >= 20" >&2
  exit 1
fi

stamp=node_modules/.package-lock.json
if [ -f "$stamp" ] && [ -d node_modules/playwright-core ] && [ ! package-lock.json -nt "$stamp" ]; then
  exit 0
fi

if ! out=$(PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error 2>&1); then
  echo "$out" >&2
  echo "test/interop/browser: npm ci failed" >&2
  exit 1
fi
