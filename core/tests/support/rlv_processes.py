"""Processes and connections seen as a test sees them: verifier workers a process started
(from /proc), and a server's answer to a client that never finishes its headers."""

from __future__ import annotations

import os
import socket
from pathlib import Path


def processes() -> dict[int, tuple[int, bytes]]:
    """pid -> (parent pid, command line) of every live (not zombie) process."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] != "Z":
            found[int(entry.name)] = (int(fields[1]), cmdline)
    return found


def descendants(root: int) -> set[int]:
    """Every live process below ``root``."""
    table = processes()
    family, grew = {root}, True
    while grew:
        more = {pid for pid, (parent, _) in table.items() if parent in family} - family
        family |= more
        grew = bool(more)
    return family - {root}


def workers_of_this_process() -> set[int]:
    """Live verifier worker processes started by this process."""
    return {
        pid
        for pid, (parent, cmdline) in processes().items()
        if parent == os.getpid() and b"rl_verifier.execution.worker" in cmdline
    }


def answers_to_slow_headers(
    host: str, port: int, start: bytes, count: int, wait_s: float
) -> list[bytes]:
    """Open ``count`` connections that send ``start`` (part of a request line) and then
    nothing; what the server sent on each before closing it (``wait_s`` at most)."""
    held = [socket.create_connection((host, port)) for _ in range(count)]
    answers = []
    try:
        for connection in held:
            connection.sendall(start)
            connection.settimeout(wait_s)
        for connection in held:
            answer = b""
            while chunk := connection.recv(4096):
                answer += chunk
            answers.append(answer)
    finally:
        for connection in held:
            connection.close()
    return answers
