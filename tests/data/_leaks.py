"""What a fault may leave behind in this process: child processes, shared-memory files,
memfds of shared tensors, and descriptors in general."""

import gc
import os
import time


def _helpers():
    """multiprocessing's own long-lived helpers (resource tracker, fork server): started once,
    on purpose, they are not left behind by a test."""
    from multiprocessing import forkserver, resource_tracker

    pids = {getattr(resource_tracker._resource_tracker, "_pid", None),
            getattr(forkserver._forkserver, "_forkserver_pid", None)}
    return pids - {None}


def children(exclude=()):
    """Processes whose parent is this one (zombies included: a child not reaped is left
    behind too)."""
    me, found, skip = os.getpid(), [], set(exclude) | _helpers()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in skip:
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:  # exited while we looked
            continue
        if int(fields[1]) == me:
            found.append(int(entry))
    return found


def _used_elsewhere(name):
    """Whether a process outside this one's tree maps /dev/shm/``name``: other programs on the
    machine (other test runs) use /dev/shm too, and their files are not ours."""
    ours = {os.getpid(), *children()}
    path = f"/dev/shm/{name}"
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in ours:
            continue
        try:
            with open(f"/proc/{entry}/maps") as maps:
                if path in maps.read():
                    return True
        except OSError:
            continue
    return False


def descriptors():
    """This process's open descriptors: {fd: what it points to}."""
    found = {}
    for fd in os.listdir("/proc/self/fd"):
        try:
            found[int(fd)] = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # the descriptor listdir itself used
            continue
    return found


def snapshot(exclude=(), collect=True):
    """The resources a fault test must give back: (children, memfd count, descriptor count,
    /dev/shm files)."""
    from multiprocessing import resource_tracker

    resource_tracker.ensure_running()  # once per process; its pipe is not a leak
    if collect:
        gc.collect()
    fds = descriptors()
    memfds = sum(1 for target in fds.values() if target.startswith("/memfd:"))
    shm = set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()
    return children(exclude), memfds, len(fds), shm


def assert_clean(before, exclude=(), timeout=10.0):
    """Wait (up to ``timeout`` s) until nothing is left over since ``before``; fail with what
    is left if it does not come to that."""
    deadline = time.monotonic() + timeout
    gc.collect()
    while True:
        now = snapshot(exclude, collect=False)
        left = {
            "child processes": sorted(set(now[0]) - set(before[0])),
            "memfds": now[1] - before[1] if now[1] > before[1] else 0,
            "descriptors": now[2] - before[2] if now[2] > before[2] else 0,
            "/dev/shm files": sorted(name for name in now[3] - before[3]
                                     if not _used_elsewhere(name)),
        }
        if not any(left.values()) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert not any(left.values()), f"left behind: {left}"
