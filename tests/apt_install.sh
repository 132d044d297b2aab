#!/usr/bin/env bash
# Install Debian packages a test needs, as root or with password-less sudo, for tests/ensure_chromium.sh and
# tests/ensure_slurm.sh (one place for how to get root and wait for apt):
#     tests/apt_install.sh WHAT TEST [APT-OPTION...] PACKAGE...
#     e.g. tests/apt_install.sh Chromium tests/test_browser.py chromium
# Without apt-get, root or sudo it only says what to do, and the test is skipped. Services are not started
# (RUNLEVEL=1: Debian's invoke-rc.d starts nothing). Exit status 0 when installed, 1 when not (said why).
set -u
what=$1 test=$2
shift 2
how="apt-get update && apt-get install -y $*"
if ! command -v apt-get >/dev/null 2>&1; then
    echo "make test: no $what found and no apt-get here; install it ($*) to run $test; it is skipped until then."
    exit 1
fi
if [ "$(id -u)" = 0 ]; then
    sudo=""
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo="sudo -n"
else
    echo "make test: no $what found; as root run: $how  ($test is skipped until then)."
    exit 1
fi
echo "make test: installing $what for $test ($how) ..."
# apt-get waits up to 5 minutes for another apt-get's lock.
if $sudo apt-get -o DPkg::Lock::Timeout=300 update -qq \
        && $sudo env DEBIAN_FRONTEND=noninteractive RUNLEVEL=1 apt-get -o DPkg::Lock::Timeout=300 install -y -qq \
            "$@" >/dev/null; then
    exit 0
fi
echo "make test: could not install $what; $test will be skipped."
exit 1
