#!/usr/bin/env bash
# Make sure a headless-capable Chromium is installed for tests/test_browser.py (`make test` runs this first).
# It comes from the system's packages (Debian/Ubuntu: apt-get install chromium); Playwright drives it and never
# downloads a browser of its own. Without root or password-less sudo it only says what to do: the browser test
# is then skipped (and fails where REQUIRE_BROWSER=1 says it must run).
set -u
if [ -n "${CHROMIUM:-}" ] && [ -x "${CHROMIUM}" ]; then exit 0; fi
for name in chromium chromium-browser google-chrome google-chrome-stable; do
    if command -v "$name" >/dev/null 2>&1; then exit 0; fi
done
if bash "$(dirname "$0")/apt_install.sh" Chromium tests/test_browser.py chromium; then
    echo "make test: installed $(chromium --version 2>/dev/null)"
fi
exit 0
