#!/usr/bin/env bash
# Make sure Slurm (Debian's slurm-wlm: slurmctld, slurmd, sbatch, ...) and munge are installed for
# tests/test_clusters.py (`make test` runs this first, beside tests/ensure_chromium.sh). Only the packages are
# installed: no system service is started or configured (Debian's policy-rc.d, or RUNLEVEL=1 below, keeps apt from
# starting them); the test starts a one-node cluster of its own in a scratch folder, with its own slurm.conf and
# munge key, and stops it at the end. Without root or password-less sudo it only says what to do: the Slurm test
# is then skipped (and fails where REQUIRE_SLURM=1 says it must run).
set -u
if command -v slurmctld >/dev/null 2>&1 && command -v slurmd >/dev/null 2>&1 && command -v sbatch >/dev/null 2>&1 \
        && command -v munged >/dev/null 2>&1; then
    exit 0
fi
how="apt-get update && apt-get install -y slurm-wlm munge"
if ! command -v apt-get >/dev/null 2>&1; then
    echo "make test: no Slurm found and no apt-get here; install slurm-wlm and munge (slurmctld, slurmd, sbatch," \
         "munged on PATH) to run tests/test_clusters.py; it is skipped until then."
    exit 0
fi
if [ "$(id -u)" = 0 ]; then
    sudo=""
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo="sudo -n"
else
    echo "make test: no Slurm found; as root run: $how  (tests/test_clusters.py is skipped until then)."
    exit 0
fi
echo "make test: installing Slurm and munge for the Slurm test ($how) ..."
# apt-get waits up to 5 minutes for another apt-get (the Chromium install runs beside this one in `make test`).
if $sudo apt-get -o DPkg::Lock::Timeout=300 update -qq \
        && $sudo env DEBIAN_FRONTEND=noninteractive RUNLEVEL=1 apt-get -o DPkg::Lock::Timeout=300 install -y -qq \
            --no-install-recommends slurm-wlm munge >/dev/null; then
    echo "make test: installed slurm-wlm $(dpkg-query -W -f='${Version}' slurm-client 2>/dev/null) and $(munged --version 2>/dev/null | head -1)"
else
    echo "make test: could not install Slurm; tests/test_clusters.py will be skipped (fails where REQUIRE_SLURM=1)."
fi
exit 0
