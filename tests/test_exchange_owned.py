"""autograder/exchange/collect.py's collect by owner, on files owned by real accounts (`nobody`, `daemon`): what it takes,
what it leaves out and why. As root (it gives files away); the class hub's test tries the same as students."""
from __future__ import annotations

import os
import pwd
import shutil
import tempfile
from pathlib import Path

import pytest

from autograder.exchange import Skip, copy_owned, read_entry
from scripts.class_hub import ClassError, ClassHub, apply_listening_options, check_clone_private, check_ports
from scripts.student_jail import Limits

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="gives files to other accounts: needs root")
A = "07_models_optimizers"
WHEN = "2026-01-01 00:00:00.000000 UTC"


def owned(path: Path, account: str) -> Path:
    entry = pwd.getpwnam(account)
    os.chown(path, entry.pw_uid, entry.pw_gid, follow_symlinks=False)
    return path


def entry(inbound: Path, name: str, account: str) -> Path:
    folder = inbound / name
    folder.mkdir(parents=True)
    return owned(folder, account)


def test_an_entry_belongs_to_the_account_that_owns_it(tmp_path):
    mine = entry(tmp_path, f"nobody+{A}+{WHEN}+x", "nobody")
    assert read_entry(str(mine), A, None)["username"] == "nobody"
    claimed = entry(tmp_path, f"daemon+{A}+{WHEN}+y", "nobody")
    with pytest.raises(Skip, match="made by nobody, not by daemon"):
        read_entry(str(claimed), A, None)
    for name, why in ((f"nobody+{A}+not-a-time", "is not a time"), ("nobody+no-plus-signs", "malformed name")):
        with pytest.raises(Skip, match=why):
            read_entry(str(entry(tmp_path, name, "nobody")), A, None)
    (tmp_path / f"nobody+{A}+{WHEN}+link").symlink_to(mine)
    with pytest.raises(Skip, match="not a folder"):
        read_entry(str(tmp_path / f"nobody+{A}+{WHEN}+link"), A, None)


def test_only_the_owners_regular_files_within_the_limits_are_copied(tmp_path):
    source = entry(tmp_path / "inbound", f"nobody+{A}+{WHEN}+x", "nobody")
    (source / f"{A}.ipynb").write_text("{}")
    owned(source / f"{A}.ipynb", "nobody")
    (source / "link.ipynb").symlink_to("/etc/shadow")
    os.mkfifo(source / "pipe")
    owned(source / "pipe", "nobody")
    (source / "theirs.txt").write_text("planted")
    owned(source / "theirs.txt", "daemon")
    (source / "big.bin").write_bytes(b"0" * 2000)
    owned(source / "big.bin", "nobody")
    (source / "sub").mkdir()
    owned(source / "sub", "nobody")
    (source / "sub" / "notes.txt").write_text("ok")
    owned(source / "sub" / "notes.txt", "nobody")
    left_out = copy_owned(str(source), str(tmp_path / "dest"), pwd.getpwnam("nobody").pw_uid, max_file=1000,
                          max_total=10_000, ignore=[".ipynb_checkpoints"])
    copied = sorted(str(p.relative_to(tmp_path / "dest")) for p in (tmp_path / "dest").rglob("*"))
    assert copied == [f"{A}.ipynb", "sub", "sub/notes.txt"], copied
    assert left_out == ["big.bin: 0.0 MB, over the 0 MB limit for a file", "link.ipynb: a symbolic link",
                        "pipe: not a regular file (a FIFO, socket or device)",
                        "theirs.txt: owned by daemon, not the submitter"], left_out
    with pytest.raises(Skip, match="over the 0 MB left"):
        copy_owned(str(source), str(tmp_path / "dest2"), pwd.getpwnam("nobody").pw_uid, max_file=5000, max_total=100,
                   ignore=[])


def test_ports_a_student_could_bind_and_a_readable_clone_are_refused(tmp_path):
    hub = ClassHub(prefix=str(tmp_path), students=[], staff=[], instructor="prof", port=8000)
    with pytest.raises(ClassError, match="the hub's public port 8000: at 1024 or above"):
        check_ports(hub)
    for port in (601, 636):    # below 1024, but Chromium answers ERR_UNSAFE_PORT: no student could log in
        with pytest.raises(ClassError, match=f"public port {port} is one browsers refuse"):
            check_ports(ClassHub(prefix=str(tmp_path), students=[], staff=[], instructor="prof", port=port))
    check_ports(ClassHub(prefix=str(tmp_path), students=[], staff=[], instructor="prof", port=443))
    clone = Path(tempfile.mkdtemp(dir="/var/tmp"))   # /var/tmp: every account may pass (pytest's tmp_path is 0700)
    try:
        (clone / "source").mkdir()
        for folder in (clone, clone / "source"):
            folder.chmod(0o755)
        with pytest.raises(ClassError, match=f"chmod 700 {clone}"):
            check_clone_private(clone)
        clone.chmod(0o700)
        check_clone_private(clone)
    finally:
        shutil.rmtree(clone)


def test_a_second_run_changes_the_port_only_when_given(tmp_path, capsys):
    hub = ClassHub(prefix=str(tmp_path), students=[], staff=[], instructor="prof")
    unset = {"ip": None, "port": None, "internal_ports": None, "domain": None, "idle_timeout": None, "max_age": None}
    apply_listening_options(hub, type("Args", (), unset)())
    assert (hub.port, hub.hub_port, hub.domain, hub.idle_timeout) == (80, 801, "localhost", 3600)
    apply_listening_options(hub, type("Args", (), {**unset, "port": 443, "internal_ports": "901,902,903",
                                                   "domain": "hub.example.edu"})())
    assert (hub.port, hub.hub_port, hub.proxy_api_port, hub.service_port) == (443, 901, 902, 903)
    assert "port: 80 -> 443" in capsys.readouterr().out
    # each server on its own origin (issue #46): the hub, a user's server, Formgrader
    assert hub.public_url == "http://hub.example.edu:443"
    assert hub.origin("/user/ada/lab") == "http://ada.hub.example.edu:443"
    assert hub.origin("/services/cs336-primitives/formgrader") == "http://cs336-primitives--service.hub.example.edu:443"
    assert hub.origin("/hub/login") == hub.public_url
    assert Limits.parse("memory=4G,disk=512M") == Limits(memory=4 << 30, disk=512 << 20)
