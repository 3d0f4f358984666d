#!/usr/bin/env bash
# Install the system packages the tests use (Debian), and start a single-node SLURM.
# Idempotent. Without root or apt it says so and returns 0: the tests that need
# these then skip with that reason (CI runs as root, so there they run).
set -euo pipefail

# chromium: Debian's browser, driven by playwright in the report and notebook tests.
PACKAGES=(slurm-wlm munge openssl chromium fonts-dejavu-core)

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

"$(dirname "$0")/slurm-up.sh"
