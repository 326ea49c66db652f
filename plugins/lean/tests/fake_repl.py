"""A fake Lean REPL speaking the leanprover-community/repl protocol, for tests.

Requests: one JSON object, ended by a blank line. Responses: pretty-printed JSON, ended by
a blank line. Malformed JSON makes the process exit. Tiny scripted semantics:

* a command is split into declarations (``theorem|lemma|def|axiom|opaque|instance NAME``);
* a proof is judged by its text: ``sorry``/``admit`` -> sorry warning + ``sorries``
  (backtick spelling when the command holds ``FAKE_NEW_SORRY``); ``bogus`` -> unknown
  identifier; ``FAKE_UNSOLVED`` -> unsolved goals; ``FAKE_PARSE`` -> parse error;
  ``native_decide`` -> ``Lean.ofReduceBool`` (with ``FAKE_NEW_NATIVE``:
  ``NAME._native.native_decide.ax_1_1``);
  ``sorryAx`` -> axiom sorryAx; ``Classical`` -> the three standard axioms; ``simp`` ->
  propext; ``exact X``/``apply X``/``@X``/``X ..`` need ``X`` declared in this env (its
  axioms are inherited); other tactics (trivial, decide, rfl, norm_num, omega, ...) succeed;
* ``FAKE_INFO`` / ``FAKE_LINT`` add an info / linter warning message;
* ``FAKE_HANG`` sleeps forever, ``FAKE_CRASH`` exits 1, ``FAKE_EOF`` closes stdout,
  ``FAKE_OOM`` allocates until memory runs out then panics like Lean;
* ``#print axioms X`` reports X's axioms in Lean's wording;
* a command without ``env`` (a header) sleeps ``--header-s`` seconds (default 0); when
  ``LEAN_PATH`` is set, each ``import M.N`` needs ``M/N.olean`` in one of its entries, else
  the answer carries Lean's "unknown module prefix" error;
* ``FAKE_NOISE`` prints non-JSON debug lines before the answer;
* ``FAKE_PROBE ["/a", ...]`` reports, as an info message, what the process sees: its uid,
  environment variable names, network interfaces, address-space limit, and which of the
  paths it can read.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from typing import Any

DECL_RE = re.compile(
    r"^(?:@\[[^\]]*\]\s*)?(?:private\s+|noncomputable\s+)*"
    r"(theorem|lemma|def|axiom|opaque|instance|example)\s*([^\s:({\[]*)",
    re.M,
)
REF_RE = re.compile(
    r"(?:exact|apply)\s+@?([A-Za-z_][\w.']*)|@([A-Za-z_][\w.']*)|"
    r"([A-Za-z_][\w.']*)\s+\.\."
)
STANDARD = ["propext", "Classical.choice", "Quot.sound"]
BUILTIN = {"rfl", "trivial", "True.intro", "Nat.le_refl", "le_refl", "id"}

envs: list[dict[str, list[str]]] = []  # env id -> declared name -> axioms


def pos(line: int, col: int = 0) -> dict[str, int]:
    return {"line": line, "column": col}


def msg(severity: str, data: str, line: int = 1) -> dict[str, Any]:
    return {"severity": severity, "pos": pos(line), "endPos": pos(line, 5), "data": data}


def judge_proof(
    name: str, body: str, decls: dict[str, list[str]], cmd: str, line: int, out: dict[str, Any]
) -> list[str] | None:
    """Axioms of the proof, or None after adding an error."""
    axioms: set[str] = set()
    if "FAKE_PARSE" in body:
        out["messages"].append(msg("error", "unexpected token 'at'; expected term", line))
        return None
    if "bogus" in body:
        out["messages"].append(msg("error", "unknown identifier 'bogus'", line))
        return None
    if "FAKE_UNSOLVED" in body:
        out["messages"].append(msg("error", "unsolved goals\n⊢ False", line))
        return None
    for match in REF_RE.finditer(body):
        ref = next(g for g in match.groups() if g)
        if ref in BUILTIN or ("." in ref and ref not in decls):  # library names
            continue
        if ref not in decls:
            out["messages"].append(msg("error", f"unknown identifier '{ref}'", line))
            return None
        axioms.update(decls[ref])
    if re.search(r"\b(sorry|admit)\b", body):
        quote = "`sorry`" if "FAKE_NEW_SORRY" in cmd else "'sorry'"
        out["messages"].append(msg("warning", f"declaration uses {quote}", line))
        out.setdefault("sorries", []).append(
            {"pos": pos(line), "endPos": pos(line, 5), "goal": "⊢ False", "proofState": 0}
        )
        axioms.add("sorryAx")
    if "sorryAx" in body:
        axioms.add("sorryAx")
    if "native_decide" in body:
        new = "FAKE_NEW_NATIVE" in cmd
        axioms.add(f"{name}._native.native_decide.ax_1_1" if new else "Lean.ofReduceBool")
    if "Classical" in body:
        axioms.update(STANDARD)
    if "simp" in body:
        axioms.add("propext")
    return sorted(axioms)


def probe(cmd: str) -> dict[str, Any]:
    paths = json.loads(cmd.split("FAKE_PROBE", 1)[1].strip().splitlines()[0])
    readable = {}
    for path in paths:
        try:
            with open(path, "rb") as fh:
                fh.read(1)
            readable[path] = True
        except OSError:
            readable[path] = False
    with open("/proc/net/dev") as fh:
        interfaces = sorted(line.split(":")[0].strip() for line in fh.readlines()[2:])
    import resource

    seen = {
        "uid": os.getuid(),
        "env": sorted(os.environ),
        "interfaces": interfaces,
        "address_space": resource.getrlimit(resource.RLIMIT_AS)[0],
    }
    return {**seen, "readable": readable}


def missing_import(cmd: str) -> str | None:
    """Lean's error for the first ``import`` not found on LEAN_PATH (None: all found)."""
    search = [p for p in os.environ.get("LEAN_PATH", "").split(":") if p]
    if not search:
        return None
    for module in re.findall(r"^import\s+(\S+)", cmd, re.M):
        rel = module.replace(".", "/") + ".olean"
        if not any(os.path.isfile(os.path.join(p, rel)) for p in search):
            top = module.split(".")[0]
            return (
                f"unknown module prefix '{top}'\n\nNo directory '{top}' or file "
                f"'{top}.olean' in the search path entries:\n" + "\n".join(search)
            )
    return None


def run_command(cmd: str, decls: dict[str, list[str]]) -> dict[str, Any]:
    if "FAKE_PROBE" in cmd:
        return {"messages": [msg("info", json.dumps(probe(cmd)))]}
    if "FAKE_HANG" in cmd:
        time.sleep(3600)
    if "FAKE_CRASH" in cmd:
        sys.stderr.write("PANIC at fake crash\n")
        sys.exit(1)
    if "FAKE_EOF" in cmd:
        sys.stdout.close()
        os._exit(0)
    if "FAKE_OOM" in cmd:
        hog = []
        try:
            while True:
                hog.append(bytearray(64 << 20))
        except MemoryError:
            hog.clear()
            sys.stderr.write("INTERNAL PANIC: out of memory\n")
            sys.stderr.flush()
            os._exit(1)
    out: dict[str, Any] = {"messages": []}
    if "FAKE_INFO" in cmd:
        out["messages"].append(msg("info", "Try this: exact foo"))
    if "FAKE_LINT" in cmd:
        out["messages"].append(
            msg(
                "warning",
                "unused variable `h`\nnote: this linter can be "
                "disabled with `set_option linter.unusedVariables false`",
            )
        )
    starts = list(DECL_RE.finditer(cmd))
    for index, m in enumerate(starts):
        kind, name = m.group(1), m.group(2)
        end = starts[index + 1].start() if index + 1 < len(starts) else len(cmd)
        text = cmd[m.start() : end].split("\n#print")[0]
        line = cmd[: m.start()].count("\n") + 1
        if kind == "axiom":
            decls[name] = [name]
            continue
        body = text.split(":=", 1)[1] if ":=" in text else ""
        axioms = judge_proof(name, body, decls, cmd, line, out)
        if axioms is not None and kind != "example":
            decls[name] = axioms
    for m in re.finditer(r"^#print axioms\s+(\S+)", cmd, re.M):
        target = m.group(1)
        line = cmd[: m.start()].count("\n") + 1
        if target not in decls:
            out["messages"].append(msg("error", f"unknown constant '{target}'", line))
        elif decls[target]:
            listed = ", ".join(decls[target])
            out["messages"].append(msg("info", f"'{target}' depends on axioms: [{listed}]", line))
        else:
            out["messages"].append(msg("info", f"'{target}' does not depend on any axioms", line))
    return out


def respond(answer: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(answer, indent=2, ensure_ascii=False) + "\n\n")
    sys.stdout.flush()


def main() -> None:
    header_s = float(sys.argv[sys.argv.index("--header-s") + 1]) if "--header-s" in sys.argv else 0
    buffer: list[str] = []
    for line in sys.stdin:
        if line.strip():
            buffer.append(line)
            continue
        if not buffer:
            continue
        text, buffer = "".join(buffer), []
        try:
            request = json.loads(text)
        except json.JSONDecodeError as exc:
            sys.stderr.write(f"uncaught exception: {exc}\n")
            sys.exit(1)
        if "env" in request and not (0 <= request["env"] < len(envs)):
            respond({"message": "Unknown environment."})
            continue
        decls = dict(envs[request["env"]]) if "env" in request else {}
        if "env" not in request:  # loading a header (Mathlib takes seconds for real)
            time.sleep(header_s)
        answer = run_command(str(request.get("cmd", "")), decls)
        if "env" not in request and (error := missing_import(str(request.get("cmd", "")))):
            answer = {"messages": [msg("error", error)]}  # Lean goes on with an empty env
        envs.append(decls)
        answer = {"env": len(envs) - 1, **answer}
        if not answer["messages"]:
            del answer["messages"]
        if "FAKE_NOISE" in str(request.get("cmd", "")):  # debug lines some REPL builds print
            sys.stdout.write("Processing incremental state [pos: 0..9]:\nby simp\n")
        respond(answer)


if __name__ == "__main__":
    main()
