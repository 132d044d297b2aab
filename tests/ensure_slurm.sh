#!/usr/bin/env bash
# Make sure Slurm (Debian's slurm-wlm: slurmctld, slurmd, sbatch, ...) and munge are installed for
# tests/test_clusters.py (`make test` runs this after tests/ensure_chromium.sh). Only the packages are installed: no
# system service is started or configured; the test starts a one-node cluster of its own in a scratch folder, with its
# own slurm.conf and munge key, and stops it at the end. Without root or password-less sudo it only says what to do:
# the Slurm test is then skipped (and fails where REQUIRE_SLURM=1 or CI=true says it must run).
set -u
if command -v slurmctld >/dev/null 2>&1 && command -v slurmd >/dev/null 2>&1 && command -v sbatch >/dev/null 2>&1 \
        && command -v munged >/dev/null 2>&1; then
    exit 0
fi
if bash "$(dirname "$0")/apt_install.sh" "Slurm and munge" tests/test_clusters.py --no-install-recommends slurm-wlm munge; then
    echo "make test: installed slurm-wlm $(dpkg-query -W -f='${Version}' slurm-client 2>/dev/null) and $(munged --version 2>/dev/null | head -1)"
fi
exit 0
