"""Fault injection for the tests: run a command with some system calls failing, as on a kernel that lacks them.

`denying({"unshare": errno.EPERM})` is a `preexec_fn` for subprocess: in the child, before it runs the command, it
installs a seccomp filter (inherited by everything the command starts) under which those calls fail with that errno,
as they do where user namespaces are turned off (EPERM) or where the kernel predates Landlock (ENOSYS). Written by
hand in classic BPF because the filter is tiny and Python's standard library has no seccomp binding; x86-64 only
(`SYSCALLS` has its numbers; elsewhere, or where no filter may be installed, `supported()` is False and the
tests skip).
"""
from __future__ import annotations

import ctypes
import os
import platform

SYSCALLS = {"unshare": 272, "landlock_create_ruleset": 444, "landlock_add_rule": 445, "landlock_restrict_self": 446}
AUDIT_ARCH_X86_64 = 0xC000003E
PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO = 0x7FFF0000, 0x00050000
LOAD_WORD, JUMP_IF_EQUAL, RETURN = 0x20, 0x15, 0x06  # BPF_LD|BPF_W|BPF_ABS, BPF_JMP|BPF_JEQ|BPF_K, BPF_RET|BPF_K


class Instruction(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(Instruction))]


def supported() -> bool:
    """x86-64 Linux where this process may install a filter (tried in a forked child, which then exits)."""
    if platform.system() != "Linux" or platform.machine() != "x86_64":
        return False
    pid = os.fork()
    if pid == 0:
        try:
            denying({"landlock_add_rule": 38})()
            os._exit(0)
        except BaseException:  # any failure: not supported here
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


def program(denied: dict[str, int]) -> list[tuple[int, int, int, int]]:
    """The filter: other architectures and calls pass; each denied call returns its errno."""
    calls = list(denied.items())
    n = len(calls)
    code = [(LOAD_WORD, 0, 0, 4),                                   # seccomp_data.arch
            (JUMP_IF_EQUAL, 0, n + 1, AUDIT_ARCH_X86_64),           # another arch: over the n tests to ALLOW
            (LOAD_WORD, 0, 0, 0)]                                   # seccomp_data.nr
    for name, _ in calls:  # call i matches: over the n - i - 1 tests left and ALLOW, and i returns, to its errno
        code.append((JUMP_IF_EQUAL, n, 0, SYSCALLS[name]))
    code.append((RETURN, 0, 0, SECCOMP_RET_ALLOW))
    code += [(RETURN, 0, 0, SECCOMP_RET_ERRNO | errno) for _, errno in calls]
    return code


def denying(denied: dict[str, int]):
    """A preexec_fn installing the filter of `program(denied)` in the child."""
    code = program(denied)

    def install() -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        instructions = (Instruction * len(code))(*[Instruction(*i) for i in code])
        prog = Program(len(code), instructions)
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 or \
                libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "could not install the seccomp filter")
    return install
