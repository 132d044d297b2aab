"""A pytest plugin: the CPU each test file costs, written where `--cpu-log PREFIX` says (`make test` loads it).

    python -m pytest -p tests.cpu_cost --cpu-log test-artifacts/timings/units tests

On a machine whose cores are all busy (the 2-core CI machine), what a test costs is its CPU, not its wall time: a
test that sleeps lets the other worker run. For each test file this counts, in seconds, the CPU of the process that
ran it (a pytest worker, or pytest itself) and of every process it started and waited for, from getrusage(2): a
grading run with its zygote and notebook processes, an nbgrader command, nbval's kernel. A server that outlives its
parent and is re-parented to init (Chromium's helpers, JupyterHub's single-user servers) is not counted here;
bench/suite_cpu.py counts everything. Each process appends `seconds<TAB>file` lines to PREFIX.<pid>.cpu;
scripts/test_times.py adds them up at the end of `make test`.
"""
from __future__ import annotations

import os
import resource
import sys

import pytest


def pytest_addoption(parser):
    parser.addoption("--cpu-log", default=None, metavar="PREFIX",
                     help="append each test file's CPU seconds to PREFIX.<pid>.cpu (tests/cpu_cost.py)")


def cpu_seconds() -> float:
    """User and system CPU seconds of this process and of the children it has waited for, with the commands it ran
    warm (tests/warm.py: forks of its server, which waits for them)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    warm = sys.modules.get("tests.warm")
    forked = warm.forked_cpu_seconds() if warm is not None else 0.0
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime + forked


class FileCost:
    """Counts from the first test of a file to the first test of the next: a module fixture's teardown runs in its
    file's last test, so it counts there."""

    def __init__(self, prefix: str):
        self.path = f"{prefix}.{os.getpid()}.cpu"
        os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
        self.file: str | None = None
        self.started = 0.0

    def switch(self, file: str | None) -> None:
        now = cpu_seconds()
        if self.file is not None:
            with open(self.path, "a") as log:
                log.write(f"{now - self.started:.2f}\t{self.file}\n")
        self.file, self.started = file, now


_COST = pytest.StashKey[FileCost]()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    cost = item.config.stash.get(_COST, None)
    file = item.nodeid.split("::", 1)[0]
    if cost is not None and cost.file != file:
        cost.switch(file)


def pytest_configure(config):
    prefix = config.getoption("--cpu-log")
    if prefix:
        config.stash[_COST] = FileCost(prefix)


def pytest_sessionfinish(session):
    cost = session.config.stash.get(_COST, None)
    if cost is not None:
        cost.switch(None)
