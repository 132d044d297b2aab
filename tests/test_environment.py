"""environment.yml (conda) and pyproject.toml (pip) ask for the same packages at the same versions."""
import subprocess
import sys
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


def install_env():
    """scripts/install_env.py as a module (it is a script, not part of the installed package)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("install_env", REPO / "scripts" / "install_env.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_torch_build_suits_the_machine(monkeypatch):
    env = install_env()
    for driver, system, mode, build in [(False, "Linux", "auto", "cpu"), (True, "Linux", "auto", "default"),
                                        (False, "Darwin", "auto", "default"), (False, "Windows", "auto", "default"),
                                        (True, "Linux", "cpu", "cpu"), (False, "Linux", "cuda", "default"),
                                        (False, "Darwin", "cpu", "default"), (True, "Linux", "system", "system")]:
        monkeypatch.setattr(env, "has_nvidia_driver", lambda driver=driver: driver)
        assert env.torch_build(mode, system) == build, (driver, system, mode)


def test_the_cpu_index_is_used_when_it_answers_and_skipped_with_a_message_when_not(capsys):
    env = install_env()
    reached = env.install_commands(REPO, "cpu", ["test"], None, lambda url: True)
    assert reached[0][-3:] == ["torch==2.13.0", "--index-url", env.CPU_INDEX]
    assert reached[1][-1] == f"{REPO}[test]"
    offline = env.install_commands(REPO, "cpu", [], None, lambda url: False)
    assert len(offline) == 1 and offline[0][-1] == str(REPO)
    assert "cannot be reached" in capsys.readouterr().out
    cuda = env.install_commands(REPO, "default", [], "https://download.pytorch.org/whl/cu126", lambda url: True)
    assert cuda[0][-1] == "https://download.pytorch.org/whl/cu126"
    assert len(env.install_commands(REPO, "default", [], None, lambda url: True)) == 1  # PyPI's own build


def test_uv_installs_from_where_pip_would_and_pip_steps_in_when_uv_cannot():
    env = install_env()
    listed = ("global.extra-index-url='file:///opt/a/simple https://mirror.example/simple'\n"
              "global.find-links='/opt/wheels'\n:env:.find-links='/opt/wheels'\n"
              "global.constraint='/etc/xdg/pip/constraints.txt'\nglobal.index-url='https://pypi.example/simple'\n"
              "global.cert='/etc/ssl/certs/ca.crt'\n:env:.default-timeout='180'\nglobal.no-index='true'\n"
              "global.trusted-host='pypi.example'\nglobal.no-cache-dir='1'\n")
    options, environment = env.pip_settings(listed)
    assert options == ["--extra-index-url", "file:///opt/a/simple", "--extra-index-url", "https://mirror.example/simple",
                       "--find-links", "/opt/wheels", "--constraint", "/etc/xdg/pip/constraints.txt",
                       "--index-url", "https://pypi.example/simple", "--no-index", "--allow-insecure-host", "pypi.example"]
    assert environment == {"SSL_CERT_FILE": "/etc/ssl/certs/ca.crt", "UV_HTTP_TIMEOUT": "180"}
    assert env.pip_settings("") == ([], {})


def test_a_failed_uv_install_is_done_again_by_pip(monkeypatch, capsys):
    env = install_env()
    ran = []

    def fake_run(command, **kwargs):
        ran.append(command)
        return subprocess.CompletedProcess(command, 1 if "uv" in command else 0)
    monkeypatch.setattr(env.subprocess, "run", fake_run)
    pip_command = env.PIP + ["--quiet", "-e", str(REPO)]
    env.run_install(pip_command, (["uv", "pip", "install", "--python", "py"], {}))
    assert ran == [["uv", "pip", "install", "--python", "py", "--quiet", "-e", str(REPO)], pip_command]
    assert "pip installs the same instead" in capsys.readouterr().out
    monkeypatch.setenv("INSTALLER", "pip")
    assert env.uv_install() is None


def test_both_makefiles_install_through_the_script():
    for makefile in (REPO / "Makefile", REPO / "autograder" / "student" / "Makefile"):
        text = makefile.read_text()
        assert "scripts/install_env.py --torch $(TORCH)" in text and "VENV   ?= .venv" in text


def test_nbformat_imports_without_the_slow_iri_grammar():
    """The jsonschema pin keeps rfc3987-syntax (slow to import: docs/benchmarks.md) out of every process that reads a
    notebook."""
    code = "import sys, nbformat; print('rfc3987_syntax' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "False", done.stdout + done.stderr
