#!/usr/bin/env bash
# Browser tests drive Debian's chromium through chromium-driver. Install both when missing
# (as root, from Debian's packages); otherwise say what to install and let the browser tests
# report themselves as skipped.
set -euo pipefail
if command -v chromedriver >/dev/null 2>&1 && { command -v chromium >/dev/null 2>&1 \
        || command -v chromium-browser >/dev/null 2>&1 || command -v google-chrome >/dev/null 2>&1; }; then
    exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "Installing chromium and chromium-driver for the browser tests..."
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
else
    echo "chromium/chromedriver not found: install Debian's 'chromium' and 'chromium-driver'" \
         "to run the browser tests (they will be skipped)." >&2
fi
