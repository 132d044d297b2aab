"""Starts the class hub's Formgrader: run by JupyterHub as root (the service's command), it

1. moves itself into Formgrader's own cgroup (<class group>/staff.formgrader, student_jail.Cgroup), so that everything
   Formgrader starts can be found and stopped with it (scripts/class_hub.py kills that cgroup when the hub stops and
   before it starts, and end-term removes it);
2. binds Formgrader's loopback port below 1024 (only root may) and leaves the listening socket open across exec;
3. becomes the grader account with no capability in any set, no way to gain one (an empty bounding set, no new
   privileges) and execs the rest of its command line, telling Formgrader the socket's descriptor
   (autograder/handed_socket.py takes it).

    python3 formgrader_launch.py GROUP PORT GRADER -- COMMAND...

scripts/class_hub.py copies it into the hub's state folder (root's alone), beside student_jail.py.
"""
import os
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import student_jail

CGROUP = "staff.formgrader"   # not a roster id: those match [a-z_][a-z0-9_-]*
LIMITS = student_jail.Limits(memory=os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"), tasks=4096)


def main(argv: list[str]) -> None:
    group, port, grader, rest = argv[0], int(argv[1]), argv[2], argv[argv.index("--") + 1:]
    cgroup = student_jail.Cgroup(group, CGROUP)
    cgroup.create(LIMITS)
    cgroup.join(os.getpid())
    listening = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listening.bind(("127.0.0.1", port))
    listening.listen(128)
    listening.set_inheritable(True)
    os.environ["FORMGRADER_LISTEN_FD"] = str(listening.fileno())
    os.execvp("setpriv", ["setpriv", "--reuid", grader, "--regid", grader, "--init-groups", "--inh-caps=-all",
                          "--ambient-caps=-all", "--bounding-set=-all", "--no-new-privs", "--", *rest])


if __name__ == "__main__":
    main(sys.argv[1:])
