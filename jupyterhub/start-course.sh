#!/usr/bin/env bash
# Runs at every start of a student's server (Jupyter Docker Stacks run /usr/local/bin/before-notebook.d/*; on the
# class hub it is the server's command): brings the course (landing page, lectures, utils) into the student's home
# without ever overwriting their own work. The first start copies it all. A later start, after the course was
# updated mid-term (the class hub: `make hub` again; an image: a new build), brings each changed or new file:
#   - a file the student never changed is replaced by the new version;
#   - a file the student changed is kept as it is, and the new version is put beside it as NAME.course-update.EXT;
#   - a file the student deleted stays deleted unless it changed in the course;
#   - release/ (exercises come through the exchange) and everything of the student's own are never touched.
# What was given last is remembered in ~/.course-manifest.json (path -> sha256). nbgitpuller, the ecosystem's way,
# clones a git repository into a folder of its own; the course lives in the home's root, where it cannot clone,
# and students keep their work beside the lectures: hence these few lines.
course=${COURSE:-/opt/course}
home=${COURSE_HOME:-$HOME}
python3 - "$course" "$home" <<'EOF'
import hashlib, json, os, shutil, sys
from pathlib import Path

course, home = Path(sys.argv[1]), Path(sys.argv[2])
manifest = home / ".course-manifest.json"
given = json.loads(manifest.read_text()) if manifest.exists() else {}
digest = lambda path: hashlib.sha256(path.read_bytes()).hexdigest()
changes = []
for source in sorted(course.rglob("*")):
    name = source.relative_to(course).as_posix()
    if not source.is_file() or source.is_symlink() or name.startswith("release/"):
        continue
    new, target = digest(source), home / name
    if given.get(name) == new:
        continue                                   # unchanged in the course since it was given (or deleted by them)
    if target.is_file() and digest(target) in (given.get(name), new):
        action = "updated"                         # the student's copy is the one given: take the new one
    elif target.exists():
        target = target.with_name(f"{target.stem}.course-update{target.suffix}")
        action = f"kept yours; the new version is {target.name}"
    elif name in given:
        action = "added again (it changed in the course)"
    else:
        action = "added"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(source, target)                   # keeps the course's times: older than `make progress`'s stamp
    target.chmod(0o755 if source.stat().st_mode & 0o100 else 0o644)
    given[name] = new
    changes.append(f"{name}: {action}")
if changes:
    (home / "release").mkdir(exist_ok=True)
    manifest.write_text(json.dumps(given, indent=0))
    print(f"course: {len(changes)} files brought in ({sum('kept yours' in c for c in changes)} of them beside your own "
          "version)" + "".join(f"\n  {c}" for c in changes if "added" != c.split(": ")[1]), file=sys.stderr)
EOF
# On the class hub (scripts/class_hub.py) it is the command of every user's server: then start that server.
if [ $# -gt 0 ]; then exec "$@"; fi
