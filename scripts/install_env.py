"""Install the course into a Python environment, with the torch build that suits this machine.

    .venv/bin/python scripts/install_env.py [--torch auto|cpu|cuda|system] [--extra test] [--package DIR]

Run it with the environment's own python. `make lab` and `make test` call it (TORCH=... picks the mode). Why not a
plain `pip install -e .`: on Linux, PyPI's torch wheel is the CUDA build (plus the nvidia-* wheels it pulls in,
gigabytes in all), which a laptop without an NVIDIA GPU downloads for nothing (each build's size: docs/install.md).
pip has no way to choose a torch build per machine, so this script does, then lets pip install everything else from
pyproject.toml as usual.

Modes (TORCH=):
- auto (default): Linux without an NVIDIA driver gets PyTorch's CPU wheel from
  https://download.pytorch.org/whl/cpu; if that index cannot be reached, it says so and falls back to the default
  index. Linux with an NVIDIA driver gets PyPI's default build (CUDA). macOS and Windows get PyPI's default build
  (CPU, and MPS on Apple silicon), which is already small.
- cpu / cuda: that build, whatever the machine has (cuda: PyPI's default Linux build; TORCH_INDEX=URL picks
  another index, such as https://download.pytorch.org/whl/cu126).
- system: an environment that already has a torch you want to keep (your own CUDA build, a cluster module, a
  GPU image): `make test-gpu VENV=/path/to/env TORCH=system`. Nothing already installed is replaced: torch and
  every package the environment already has stay as they are (a version other than the course's pin is
  reported), and only the missing ones are installed, with pip's usual resolution.
"""
from __future__ import annotations

import argparse
import importlib.metadata
import os
import platform
import re
import shutil
import subprocess
import sys
import tomllib
import urllib.request
from pathlib import Path
from typing import Callable

CPU_INDEX = "https://download.pytorch.org/whl/cpu"
PIP = [sys.executable, "-m", "pip", "install", "--disable-pip-version-check"]
# The installer: uv's pip interface, itself installed by pip from the same index. It installs the course's ~140
# packages faster than pip, which unpacks and compiles on one core (the figures: docs/benchmarks.md, Set-up).
# When uv cannot be installed or fails, pip does the same install (INSTALLER=pip: pip only).
UV = "uv==0.13.9"
# pip's settings (pip.conf, PIP_* variables) that uv must honour too, as uv's options; pip reads them itself.
UV_OPTIONS = {"index-url": "--index-url", "extra-index-url": "--extra-index-url", "find-links": "--find-links",
              "constraint": "--constraint", "trusted-host": "--allow-insecure-host"}
UV_ENVIRONMENT = {"cert": "SSL_CERT_FILE", "proxy": "HTTPS_PROXY", "timeout": "UV_HTTP_TIMEOUT",
                  "default-timeout": "UV_HTTP_TIMEOUT"}


def pins(package_dir: Path, extras: list[str]) -> list[str]:
    """The `name==version` requirements of pyproject.toml: dependencies plus the named optional groups."""
    project = tomllib.loads((package_dir / "pyproject.toml").read_text())["project"]
    wanted = list(project["dependencies"])
    for extra in extras:
        wanted += project.get("optional-dependencies", {}).get(extra, [])
    return wanted


def has_nvidia_driver() -> bool:
    """True when this Linux machine has an NVIDIA driver loaded (so a CUDA build of torch can use a GPU)."""
    return Path("/proc/driver/nvidia/version").exists() or shutil.which("nvidia-smi") is not None


def reachable(url: str, seconds: float = 8) -> bool:
    """True when `url` answers within `seconds` (pip itself would retry for minutes before giving up)."""
    try:
        with urllib.request.urlopen(url, timeout=seconds):
            return True
    except Exception:
        return False


def torch_build(mode: str, system: str) -> str:
    """'cpu', 'default' or 'system': which torch to install, from the mode and the operating system."""
    if mode == "auto":
        return "cpu" if system == "Linux" and not has_nvidia_driver() else "default"
    return {"cpu": "cpu" if system == "Linux" else "default", "cuda": "default", "system": "system"}[mode]


def installed_version(requirement: str) -> str | None:
    """The version of the requirement's distribution installed in this environment, or None."""
    name = re.split(r"[=<>!~\[ ]", requirement, maxsplit=1)[0]
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def run(command: list[str]) -> None:
    print("+", " ".join(command), flush=True)
    subprocess.run(command, check=True)


def pip_settings(listed: str) -> tuple[list[str], dict[str, str]]:
    """(uv options, environment variables) for the settings `pip config list` printed (lines `scope.key='value'`,
    the PIP_* variables among them as `:env:.key`): the package index, extra indexes, find-links, constraints,
    trusted hosts, certificate, proxy and time-out that pip would use, so that uv installs from the same places."""
    options: list[str] = []
    environment: dict[str, str] = {}
    for line in listed.splitlines():
        key, _, value = line.partition("=")
        key, value = key.rpartition(".")[2], value.strip().strip("'\"")
        if key in UV_OPTIONS:
            for item in value.split():
                if (UV_OPTIONS[key], item) not in zip(options, options[1:]):  # pip.conf and PIP_* may say it twice
                    options += [UV_OPTIONS[key], item]
        elif key == "no-index" and value.lower() in ("1", "true", "yes", "on"):
            options.append("--no-index")
        elif key in UV_ENVIRONMENT:
            environment[UV_ENVIRONMENT[key]] = value
    return options, environment


def uv_install() -> tuple[list[str], dict[str, str]] | None:
    """(uv's install command for this environment, its environment) once uv is installed here, or None when it
    cannot be (no network for it, INSTALLER=pip): then pip installs."""
    if os.environ.get("INSTALLER") == "pip" or subprocess.run(PIP + ["--quiet", UV]).returncode != 0:
        return None
    listed = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True).stdout
    options, environment = pip_settings(listed)
    # unsafe-best-match: the best version across every index, as pip chooses (uv's default takes the first index's)
    return ([sys.executable, "-m", "uv", "pip", "install", "--python", sys.executable, "--compile-bytecode",
             "--index-strategy", "unsafe-best-match", *options], {**os.environ, **environment})


def run_install(command: list[str], uv: tuple[list[str], dict[str, str]] | None) -> None:
    """Run a pip install command through uv when there is one, and through pip when uv fails."""
    if uv is not None:
        with_uv = uv[0] + command[len(PIP):]
        print("+", " ".join(with_uv), flush=True)
        if subprocess.run(with_uv, env=uv[1]).returncode == 0:
            return
        print("uv failed (above); pip installs the same instead", flush=True)
    run(command)


def install(package_dir: Path, mode: str, extras: list[str], without: tuple[str, ...] = (),
            also: tuple[str, ...] = ()) -> None:
    requirements = [r for r in pins(package_dir, extras) if re.split(r"[=<>!~\[ ]", r, maxsplit=1)[0] not in without]
    requirements += list(also)
    build = torch_build(mode, platform.system())
    quiet = ["--quiet"]
    if build == "system":
        missing = []
        for requirement in requirements:
            version = installed_version(requirement)
            if version is None:
                missing.append(requirement)
            elif requirement.split("==")[-1] != version.split("+")[0]:
                print(f"keeping {requirement.split('==')[0]} {version} (the course pins {requirement})")
        run(PIP + quiet + ["--no-deps", "-e", str(package_dir)])
        if missing and subprocess.run(PIP + quiet + missing).returncode != 0:
            # One at a time, so that one package pip cannot get (an offline GPU box without playwright, say)
            # leaves the rest installed and is named; only a package the course itself imports is fatal.
            required = set(pins(package_dir, []))
            failed = [r for r in missing if subprocess.run(PIP + quiet + [r]).returncode != 0]
            if failed:
                print(f"could not install: {', '.join(failed)}")
            if set(failed) & required:
                sys.exit("the course needs these; install them into this environment and run again")
        return
    uv = uv_install()
    for command in install_commands(package_dir, build, extras, os.environ.get("TORCH_INDEX"), reachable, also):
        run_install(command, uv)


def install_commands(package_dir: Path, build: str, extras: list[str], torch_index: str | None,
                     can_reach: Callable[[str], bool] = reachable, also: tuple[str, ...] = ()) -> list[list[str]]:
    """The pip commands for a 'cpu' or 'default' build: torch from its index first (when one applies and answers),
    then the course (with the `also` requirements), whose `torch==` pin the installed torch then satisfies
    (2.13.0+cpu counts as 2.13.0)."""
    torch_pin = next(r for r in pins(package_dir, extras) if r.startswith("torch=="))
    index = torch_index or (CPU_INDEX if build == "cpu" else None)
    commands = []
    if index and can_reach(index.rstrip("/") + "/torch/"):
        commands.append(PIP + ["--quiet", torch_pin, "--index-url", index])
    elif index:
        print(f"{index} cannot be reached; installing {torch_pin} from the default index instead (on Linux that is "
              "the large CUDA build, unless pip finds a local wheel).")
    target = str(package_dir) + (f"[{','.join(extras)}]" if extras else "")
    commands.append(PIP + ["--quiet", *also, "-e", target])
    return commands


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--torch", default=os.environ.get("TORCH", "auto"),
                        choices=["auto", "cpu", "cuda", "system"], help="which torch build (default: auto)")
    parser.add_argument("--extra", action="append", default=[], help="optional dependency group, e.g. test")
    parser.add_argument("--without", action="append", default=[],
                        help="a pinned package not to install (the GPU session: playwright, which it cannot use)")
    parser.add_argument("--package", type=Path, default=Path(__file__).resolve().parent.parent,
                        help="folder holding pyproject.toml (default: this repository)")
    parser.add_argument("--also", action="append", default=[],
                        help="a requirement to install with the course (the class hub: its jupyterhub== pin)")
    args = parser.parse_args(argv)
    install(args.package, args.torch, args.extra, tuple(args.without), tuple(args.also))


if __name__ == "__main__":
    main()
