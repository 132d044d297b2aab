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
how="apt-get update && apt-get install -y chromium"
if ! command -v apt-get >/dev/null 2>&1; then
    echo "make test: no Chromium found and no apt-get here; install Chromium and put 'chromium' on PATH" \
         "(or set CHROMIUM=/path/to/chrome) to run tests/test_browser.py; it is skipped until then."
    exit 0
fi
if [ "$(id -u)" = 0 ]; then
    sudo=""
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo="sudo -n"
else
    echo "make test: no Chromium found; as root run: $how  (tests/test_browser.py is skipped until then)."
    exit 0
fi
echo "make test: installing Chromium for the browser test ($how) ..."
if $sudo apt-get update -qq && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; then
    echo "make test: installed $(chromium --version 2>/dev/null)"
else
    echo "make test: could not install Chromium; tests/test_browser.py will be skipped (fails where REQUIRE_BROWSER=1)."
fi
exit 0
