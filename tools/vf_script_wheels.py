"""Download, at set-up, the wheels of the uv script that verifiers 0.4's chat harnesses run
(their PEP 723 ``dependencies``), so that tests run it with ``UV_NO_INDEX`` from this
folder and nothing is downloaded at test time.

    python tools/vf_script_wheels.py .venv/wheels/vf-chat
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

BLOCK = re.compile(r"^# /// script\n((?:#.*\n)*?)# ///$", re.M)


def script_dependencies() -> list[str]:
    """The ``dependencies`` of v1's chat program, read from the program itself."""
    from verifiers.v1.harnesses.utils.launch import CHAT_PROGRAM_SOURCE

    found = BLOCK.search(CHAT_PROGRAM_SOURCE)
    if found is None:
        raise SystemExit("verifiers' chat program has no PEP 723 block")
    text = "".join(line[2:] + "\n" for line in found.group(1).splitlines())
    return list(tomllib.loads(text)["dependencies"])


def main() -> None:
    folder = Path(sys.argv[1])
    folder.mkdir(parents=True, exist_ok=True)
    wanted = script_dependencies()
    command = [sys.executable, "-m", "pip", "download", "-q", "--only-binary=:all:"]
    subprocess.run([*command, "-d", str(folder), *wanted], check=True)
    (folder / "requirements.txt").write_text("\n".join(wanted) + "\n")


if __name__ == "__main__":
    main()
