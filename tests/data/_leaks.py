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


_NAMED_HERE = set()  # /dev/shm names this process chose (semaphores, shared_memory blocks)


def _record_names():
    """Wrap multiprocessing's name makers so that the leak check knows which /dev/shm files
    are ours: other programs on the machine (other test runs) use /dev/shm too."""
    from multiprocessing import shared_memory, synchronize

    if getattr(synchronize.SemLock._make_name, "_recorded", False):
        return

    def recorded(make, prefix):
        def make_and_record(*args):
            name = make(*args)
            _NAMED_HERE.add(prefix + name.lstrip("/"))
            return name
        make_and_record._recorded = True
        return make_and_record

    synchronize.SemLock._make_name = staticmethod(recorded(synchronize.SemLock._make_name,
                                                           "sem."))
    shared_memory._make_filename = recorded(shared_memory._make_filename, "")


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

    _record_names()
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
            "/dev/shm files": sorted((now[3] - before[3]) & _NAMED_HERE),
        }
        if not any(left.values()) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert not any(left.values()), f"left behind: {left}"
