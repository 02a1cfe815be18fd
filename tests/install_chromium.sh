#!/bin/sh
# The browser tests (tests/browser, marked `browser`) drive Debian's Chromium through Playwright
# (`playwright install` cannot download browsers on these machines). Install it when it is missing.
set -eu
if [ -x "${LOOM_CHROMIUM:-/usr/bin/chromium}" ]; then
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "tests/install_chromium.sh: no ${LOOM_CHROMIUM:-/usr/bin/chromium} and no apt-get: install Chromium and set LOOM_CHROMIUM" >&2
    exit 1
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get install -y -q chromium >/dev/null 2>&1 || { $SUDO apt-get update -q >/dev/null && $SUDO apt-get install -y -q chromium >/dev/null; }
echo "tests/install_chromium.sh: installed $(/usr/bin/chromium --version 2>/dev/null || echo chromium)"
