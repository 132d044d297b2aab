"""environment.yml (conda) and pyproject.toml (pip) ask for the same packages at the same versions."""
import tomllib
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent


def pins_from_pyproject() -> set[str]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    return set(project["dependencies"]) | set(project["optional-dependencies"]["test"])


def pins_from_environment() -> set[str]:
    spec = yaml.safe_load((REPO / "environment.yml").read_text())
    pip_lists = [d["pip"] for d in spec["dependencies"] if isinstance(d, dict) and "pip" in d]
    return set(pip_lists[0])


def test_same_packages_and_versions():
    assert pins_from_environment() == pins_from_pyproject()


def test_every_package_is_pinned_and_torch_is_the_quick_cpu_installable_release():
    pins = pins_from_pyproject()
    assert all("==" in pin for pin in pins)
    assert "torch==2.13.0" in pins
    names = {pin.split("==")[0] for pin in pins}
    assert {"jupyterlab", "torch", "einops", "jaxtyping", "nbgrader", "matplotlib", "nbval"} <= names


def test_ci_runs_exactly_the_readme_test_command():
    ci = (REPO / ".ci" / "run").read_text()
    assert ci.strip().splitlines()[-1] == "make test"
    assert "make test" in (REPO / "README.md").read_text()
