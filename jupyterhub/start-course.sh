#!/usr/bin/env bash
# Runs at every start of a student's server (Jupyter Docker Stacks run /usr/local/bin/before-notebook.d/*): on the
# first start, copy the course (landing page, lectures, utils) into the student's home. Later starts change nothing,
# so the student's own notebooks and fetched exercises are never overwritten.
course=${COURSE:-/opt/course}
home=${COURSE_HOME:-$HOME}
if [ ! -e "$home/index.ipynb" ]; then
    mode=$(stat -c %a "$home")        # cp -p would give the home the course folder's mode (readable by all)
    cp -rp "$course"/. "$home"/        # -p keeps the image's timestamps: older than the install stamp
    chmod "$mode" "$home"
    chmod -R u+w "$home"
    mkdir -p "$home/release"
fi
# On the class hub (scripts/class_hub.py) it is the command of every user's server: then start that server.
if [ $# -gt 0 ]; then exec "$@"; fi
