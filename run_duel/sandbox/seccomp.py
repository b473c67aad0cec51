"""A seccomp filter for agents in bubblewrap, comparable to Docker's default profile for a container
without capabilities: the system calls Docker refuses there are refused here (``EPERM``).

Refused: kernel keyrings (``keyctl``, ``add_key``, ``request_key``), ``bpf``, ``perf_event_open``,
``userfaultfd``, ``io_uring_*``, mounting and namespaces (``mount``, the new mount API, ``umount2``,
``pivot_root``, ``unshare``, ``setns``), modules, ``kexec``, ``reboot``, swap, clocks, ``acct``,
``quotactl``, NUMA policy, ``move_pages``, ``kcmp``, ``process_vm_readv/writev``, file handles
(``open_by_handle_at``), ``syslog``, ``vhangup``, obsolete calls, and every x32 system call. ``clone3``
answers ``ENOSYS`` as under Docker (its flags cannot be filtered; the C library falls back to ``clone``).
Another architecture than the host's is killed.

The program is classic BPF (``struct sock_filter``, what ``bwrap --seccomp FD`` reads), built here for
x86_64 and aarch64; ``program()`` is ``None`` on other machines (the sandbox then says it runs without).
"""

from __future__ import annotations

import errno
import os
import platform
import struct

# BPF instruction classes and fields (linux/filter.h, linux/seccomp.h, linux/audit.h).
_LD_W_ABS = 0x00 | 0x00 | 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ_K = 0x05 | 0x10 | 0x00  # BPF_JMP | BPF_JEQ | BPF_K
_JGE_K = 0x05 | 0x30 | 0x00  # BPF_JMP | BPF_JGE | BPF_K
_RET_K = 0x06 | 0x00  # BPF_RET | BPF_K
RET_ALLOW = 0x7FFF0000
RET_KILL_PROCESS = 0x80000000
RET_ERRNO = 0x00050000
_OFFSET_NR = 0  # struct seccomp_data: int nr; __u32 arch; ...
_OFFSET_ARCH = 4
X32_SYSCALL_BIT = 0x40000000

#: The refused system calls, by name (the same for every architecture; a name an architecture lacks is
#: skipped).
REFUSED = [
    "acct",
    "add_key",
    "bpf",
    "clock_adjtime",
    "clock_settime",
    "create_module",
    "delete_module",
    "finit_module",
    "get_kernel_syms",
    "get_mempolicy",
    "init_module",
    "ioperm",
    "iopl",
    "kcmp",
    "kexec_file_load",
    "kexec_load",
    "keyctl",
    "lookup_dcookie",
    "mbind",
    "mount",
    "move_pages",
    "name_to_handle_at",
    "nfsservctl",
    "open_by_handle_at",
    "perf_event_open",
    "pivot_root",
    "process_vm_readv",
    "process_vm_writev",
    "query_module",
    "quotactl",
    "quotactl_fd",
    "reboot",
    "request_key",
    "set_mempolicy",
    "setns",
    "settimeofday",
    "swapon",
    "swapoff",
    "sysfs",
    "_sysctl",
    "umount2",
    "unshare",
    "uselib",
    "userfaultfd",
    "ustat",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "move_mount",
    "open_tree",
    "mount_setattr",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "syslog",
    "vhangup",
    "afs_syscall",
    "tuxcall",
    "security",
    "vserver",
    "getpmsg",
    "putpmsg",
]
#: Answered ENOSYS rather than EPERM (the C library then uses an older call).
NOT_IMPLEMENTED = ("clone3",)

_X86_64 = {
    "acct": 163, "add_key": 248, "bpf": 321, "clock_adjtime": 305, "clock_settime": 227,
    "create_module": 174, "delete_module": 176, "finit_module": 313, "get_kernel_syms": 177,
    "get_mempolicy": 239, "init_module": 175, "ioperm": 173, "iopl": 172, "kcmp": 312,
    "kexec_file_load": 320, "kexec_load": 246, "keyctl": 250, "lookup_dcookie": 212, "mbind": 237,
    "mount": 165, "move_pages": 279, "name_to_handle_at": 303, "nfsservctl": 180,
    "open_by_handle_at": 304, "perf_event_open": 298, "pivot_root": 155, "process_vm_readv": 310,
    "process_vm_writev": 311, "query_module": 178, "quotactl": 179, "quotactl_fd": 443, "reboot": 169,
    "request_key": 249, "set_mempolicy": 238, "setns": 308, "settimeofday": 164, "swapon": 167,
    "swapoff": 168, "sysfs": 139, "_sysctl": 156, "umount2": 166, "unshare": 272, "uselib": 134,
    "userfaultfd": 323, "ustat": 136, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
    "move_mount": 429, "open_tree": 428, "mount_setattr": 442, "io_uring_setup": 425,
    "io_uring_enter": 426, "io_uring_register": 427, "syslog": 103, "vhangup": 153, "clone3": 435,
    "afs_syscall": 183, "tuxcall": 184, "security": 185, "vserver": 236, "getpmsg": 181, "putpmsg": 182,
}  # fmt: skip
_AARCH64 = {
    "acct": 89, "add_key": 217, "bpf": 280, "clock_adjtime": 266, "clock_settime": 112,
    "delete_module": 106, "finit_module": 273, "get_mempolicy": 236, "init_module": 105, "kcmp": 272,
    "kexec_file_load": 294, "kexec_load": 104, "keyctl": 219, "lookup_dcookie": 18, "mbind": 235,
    "mount": 40, "move_pages": 239, "name_to_handle_at": 264, "nfsservctl": 42, "open_by_handle_at": 265,
    "perf_event_open": 241, "pivot_root": 41, "process_vm_readv": 270, "process_vm_writev": 271,
    "quotactl": 60, "quotactl_fd": 443, "reboot": 142, "request_key": 218, "set_mempolicy": 237,
    "setns": 268, "settimeofday": 170, "swapon": 224, "swapoff": 225, "umount2": 39, "unshare": 97,
    "userfaultfd": 282, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433, "move_mount": 429,
    "open_tree": 428, "mount_setattr": 442, "io_uring_setup": 425, "io_uring_enter": 426,
    "io_uring_register": 427, "syslog": 116, "vhangup": 58, "clone3": 435,
}  # fmt: skip
#: machine -> (AUDIT_ARCH_* value, syscall numbers, whether the x32 bit must be refused)
_ARCHES = {
    "x86_64": (0xC000003E, _X86_64, True),
    "aarch64": (0xC00000B7, _AARCH64, False),
}


def _insn(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def program(machine: str | None = None) -> bytes | None:
    """The filter for ``machine`` (default: this one) as bytes, or ``None`` when unsupported."""
    arch = _ARCHES.get(machine or platform.machine())
    if arch is None:
        return None
    audit_arch, numbers, x32 = arch
    refused = sorted({numbers[name] for name in REFUSED if name in numbers})
    enosys = sorted({numbers[name] for name in NOT_IMPLEMENTED if name in numbers})
    body: list[tuple[int, int]] = [(nr, errno.EPERM) for nr in refused] + [
        (nr, errno.ENOSYS) for nr in enosys
    ]
    # Layout: arch check, load nr, [x32 check], one JEQ per call (to its return), ALLOW, then the returns.
    insns = [
        _insn(_LD_W_ABS, _OFFSET_ARCH),
        _insn(_JEQ_K, audit_arch, jt=1, jf=0),
        _insn(_RET_K, RET_KILL_PROCESS),
        _insn(_LD_W_ABS, _OFFSET_NR),
    ]
    checks = len(body) + (1 if x32 else 0)
    # After the checks: [ALLOW][RET EPERM][RET ENOSYS]
    if x32:
        insns.append(_insn(_JGE_K, X32_SYSCALL_BIT, jt=checks, jf=0))  # -> RET EPERM
    for index, (nr, err) in enumerate(body):
        position = index + (1 if x32 else 0)
        to_allow = checks - position - 1
        insns.append(_insn(_JEQ_K, nr, jt=to_allow + (1 if err == errno.EPERM else 2), jf=0))
    insns.append(_insn(_RET_K, RET_ALLOW))
    insns.append(_insn(_RET_K, RET_ERRNO | errno.EPERM))
    insns.append(_insn(_RET_K, RET_ERRNO | errno.ENOSYS))
    if checks + 2 > 255:
        raise ValueError("too many system calls for 8-bit BPF jump offsets")
    return b"".join(insns)


def program_fd() -> int | None:
    """A file descriptor (memfd, not inheritable) holding ``program()`` from its start, for
    ``bwrap --seccomp FD`` (pass it with ``pass_fds``); ``None`` when unsupported here."""
    data = program()
    if data is None:
        return None
    fd = os.memfd_create("rl-arena-seccomp", os.MFD_CLOEXEC)
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
