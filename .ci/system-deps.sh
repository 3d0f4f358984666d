#!/usr/bin/env bash
# Install the system packages Kit's demo and tests use (Debian), and start a
# single-node SLURM for the tests. `system-deps.sh demo` installs only what the
# demo needs. Idempotent. Without root or apt it says so and returns 0: the
# tests that need these then skip with that reason (CI runs as root).
set -euo pipefail
MODE=${1:-test}

# flite, espeak-ng, sox: the spoken corpus of the decoding example (demo and tests).
# chromium: Debian's browser, driven by playwright in the report and notebook tests.
PACKAGES=(flite espeak-ng sox)
if [ "$MODE" != demo ]; then
    PACKAGES+=(slurm-wlm munge openssl chromium fonts-dejavu-core)
    # sctk: NIST's sclite, which the decoding tests check Kit's error counts against.
    PACKAGES+=(sctk)
    # gcc: builds kit/asr/_align.c, the compiled alignment the tests require in CI.
    PACKAGES+=(gcc libc6-dev)
    # alsa-utils: eight spoken channel names (real speech) the decoding tests read where
    # the package installs them; nothing of them is copied into the repository.
    PACKAGES+=(alsa-utils)
    # npm: configurable-http-proxy (from npm) in front of the JupyterHub test's hub. Only
    # where there is no npm at all: a Node.js of another source already brings its own.
    command -v npm >/dev/null || PACKAGES+=(nodejs npm)
fi

if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    echo "system-deps: not root or no apt-get: skipping ${PACKAGES[*]} (tests needing them will skip)"
    exit 0
fi

missing=()
for pkg in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "system-deps: installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ "$MODE" != demo ]; then
    "$(dirname "$0")/slurm-up.sh"
fi
