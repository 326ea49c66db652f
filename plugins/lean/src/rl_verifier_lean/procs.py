"""Resident memory of a process tree, read from /proc (Linux; 0 elsewhere)."""

from __future__ import annotations

import contextlib
import os
from collections import defaultdict


def children_map() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = defaultdict(list)
    with contextlib.suppress(OSError):
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            with contextlib.suppress(OSError, IndexError, ValueError):
                with open(f"/proc/{name}/stat", "rb") as fh:
                    ppid = int(fh.read().rsplit(b")", 1)[1].split()[1])
                kids[ppid].append(int(name))
    return kids


def rss_kb(pid: int) -> int:
    with contextlib.suppress(OSError, ValueError, IndexError), open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def tree_rss_mb(root: int) -> float:
    """VmRSS summed over ``root`` and all its descendants, in MiB."""
    kids = children_map()
    total, todo, seen = 0, [root], set()
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        total += rss_kb(pid)
        todo += kids.get(pid, [])
    return total / 1024
