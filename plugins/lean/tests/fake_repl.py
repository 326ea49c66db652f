"""A fake Lean 4 toolchain for the tests: the REPL, `lean --json` and a kernel-replay checker.

One self-contained file (it is copied into fake Lake projects as `repl`, `bin/lean` and
`bin/leanchecker`). The personality comes from the program name, or from the first argument
when run as ``fake_repl.py [repl|lean|leanchecker] ...`` (default: repl).

Where each answer's format comes from (read with the search tools, not copied):

* REPL protocol, leanprover-community/repl: ``REPL/Main.lean`` (a request is JSON ended by a
  blank line; a command without ``env`` starts from its imports, with ``env`` it runs on that
  snapshot, whose whole command state, scopes included, is restored; ``env`` ids count up from
  0; an unknown ``env`` answers ``{"message": "Unknown environment."}``; some builds print
  ``Processing incremental state [pos: a..b]:`` and the command text itself before the answer,
  with byte positions); ``REPL/JSON.lean`` (``messages``/``sorries`` only when non-empty;
  message fields pos, endPos, severity ``info|warning|error``, data; sorry fields goal,
  proofState, pos, endPos); ``test/dup_sorries.expected.out`` (a sorry gives a ``sorries``
  entry and the warning ``declaration uses `sorry``` at the declaration's name; older Lean
  spells it ``declaration uses 'sorry'``); ``test/def_eval.expected.out`` (env numbering).
* ``#print axioms``, leanprover/lean4 ``src/Lean/Elab/Print.lean`` (``'X' does not depend on
  any axioms`` or ``'X' depends on axioms: [..]`` with the list sorted by ``Name.lt``, which
  compares prefixes first: ``[propext, Classical.choice, Quot.sound]``); long lines wrap at
  Lean's width of 120 (as in ``#print axioms`` logs of public projects).
* Instance choice, ``src/Lean/Meta/SynthInstance.lean`` (instances sorted by priority, stable,
  tried from the last: highest priority first, the newest first among equals; erased
  instances, ``attribute [-instance]``, are skipped); priorities default 1000, low 100, mid
  500, high 10000; numerals default through ``@[default_instance]`` (``instOfNatNat`` has 100).
* Name resolution, ``src/Lean/ResolveName.lean`` (a declaration in the current namespace or
  its parents wins alone; otherwise root declarations, ``open`` namespaces and ``export``
  aliases together, several of them being "ambiguous, possible interpretations").
* `lean --json FILE`: one JSON message per line (``src/Lean/Message.lean``, ``SerialMessage``:
  fileName, pos, endPos, severity ``information|warning|error``, caption, data), exit code 1
  after an error; ``-o FILE`` writes the module's .olean, ``-R DIR`` the root its module name
  is computed from (``src/Lean/Shell``: "--root=dir"; Lake's ``compileLeanModule``).
* Kernel replay, leanprover/lean4checker (``Main.lean``; now shipped as ``leanchecker``, lean4
  PR 11887): ``leanchecker MODULE`` finds MODULE's .olean on LEAN_PATH, rebuilds the
  environment of its imports and adds every constant of the module through the kernel; on a
  problem it prints ``lean4checker found a problem in MODULE`` and ``uncaught exception:
  (kernel) ...`` and exits 1 (``Lean4CheckerTests/*.expected.out``); success is silent, exit 0.

What the fake models of Lean (and what it does not): it does not prove anything; a proof is
accepted unless its text carries a marker below. It does model what a proposition *means* in
an environment: operators and numerals resolve to the winning instance for their type
(instances, priorities, ``attribute [instance]``/``[-instance]``, ``@[default_instance]``,
``scoped`` instances activated by ``open``), casts ``(x : T)`` to the winning coercion
instance, identifiers by Lean's resolution rules (namespaces, ``open``, ``export``, ambiguity),
and ``by simp`` inside a statement to the current simp set. A ``def X : Prop := P`` keeps the
meaning P had when it was defined; ``theorem T : X := @C`` is a type mismatch when C's
statement means something else. Metaprograms (``#eval``, ``run_cmd``/``run_meta``/``run_elab``,
a ``@[command_elab]``/``@[commandElab]`` handler, run at the next command) that ``addDecl`` or
``modifyEnv`` a name literal forge that constant without the kernel (``False`` when the text
says so); one whose text mentions ``rlv_stmt`` rewrites every such statement definition to
``True``. Such constants are recorded as not kernel-checked, which is what replay reports.

Markers: ``sorry``/``admit`` -> sorry warning + ``sorries`` (backtick spelling with
``FAKE_NEW_SORRY``); ``bogus`` -> unknown identifier; ``FAKE_UNSOLVED`` -> unsolved goals;
``FAKE_PARSE`` -> parse error; ``native_decide`` -> ``Lean.ofReduceBool`` (with
``FAKE_NEW_NATIVE``: ``NAME._native.native_decide.ax_1_1``); ``sorryAx`` -> axiom sorryAx;
``Classical`` -> the three standard axioms; ``simp`` -> propext; ``exact X``/``apply X``/``@X``/
``X ..`` need ``X`` declared (its axioms are inherited); ``FAKE_INFO``/``FAKE_LINT`` add an
info/linter message; ``FAKE_HANG`` sleeps, ``FAKE_CRASH`` exits 1 (``lean``: 134), ``FAKE_EOF``
closes stdout, ``FAKE_OOM`` allocates until memory runs out then panics like Lean;
``FAKE_NOISE`` prints non-JSON lines first; ``FAKE_PROBE ["/a", ...]`` reports what the process
sees (uid, variable names, network interfaces, address-space limit, readable paths). A header
sleeps ``--header-s`` seconds; with LEAN_PATH set, ``import M.N`` needs ``M/N.olean`` there.
``--echo`` makes the REPL print the incremental-state echo some builds print.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Any

# ---------------------------------------------------------------------------------------------
# Lexing (independent of the plugin's lexer; same Lean rules)

_ID_RANGES = (
    "A-Za-z0-9_'!?\u0391-\u03a9\u03b1-\u03c9\u03ca-\u03fb\u1f00-\u1ffe\u2100-\u214f\u2080-\u209c"
)
_ID = re.compile(rf"(?:«[^»]*»|[A-Za-z_\u0391-\u03a9\u03b1-\u03c9\u2100-\u214f][{_ID_RANGES}]*)")
_SYMBOLS = (":=", "=>", "@[", "≤", "≥", "≠", "→", "↔", "∧", "∨", "¬", "∀", "∃", "↑", "⟨", "⟩")


@dataclass
class Tok:
    kind: str  # id, cmd, num, str, sym
    text: str
    start: int
    end: int


def scan(text: str) -> list[Tok]:
    toks: list[Tok] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif text.startswith("--", i):
            i = n if (j := text.find("\n", i)) < 0 else j
        elif text.startswith("/-", i):
            depth, i = 1, i + (3 if text[i + 2 : i + 3] in ("-", "!") else 2)
            while i < n and depth:
                if text.startswith("-/", i):
                    depth, i = depth - 1, i + 2
                elif text.startswith("/-", i):
                    depth, i = depth + 1, i + 2
                else:
                    i += 1
        elif (
            c == "r"
            and (m := re.match(r'r(#*)"', text[i:]))
            and not (i and re.match(rf"[{_ID_RANGES}]", text[i - 1]))
        ):
            close = '"' + m.group(1)
            j = text.find(close, i + len(m.group(0)))
            j = n if j < 0 else j + len(close)
            toks.append(Tok("str", text[i:j], i, j))
            i = j
        elif c == '"':
            interpolated = bool(toks) and toks[-1].text in ("s!", "m!", "f!")
            j = _string_end(text, i + 1, interpolated)
            toks.append(Tok("str", text[i:j], i, j))
            i = j
        elif c == "'" and not text.startswith("''", i):
            m = re.match(r"'(\\(x..|u....|.)|[^\\])'", text[i:], re.S)
            j = i + (len(m.group(0)) if m else 1)
            toks.append(Tok("str" if m else "sym", text[i:j], i, j))
            i = j
        elif m := _ID.match(text, i):
            j = m.end()
            while (m2 := re.match(r"\.(«[^»]*»|[A-Za-z_][\w'!?]*)", text[j:])) is not None:
                j += len(m2.group(0))
            word = text[i:j]
            toks.append(Tok("id", word.replace("«", "").replace("»", ""), i, j))
            i = j
        elif c == "#" and (m := re.match(r"#[A-Za-z_][\w!?]*", text[i:])):
            toks.append(Tok("cmd", m.group(0), i, i + len(m.group(0))))
            i += len(m.group(0))
        elif c.isdigit():
            m = re.match(r"\d+(\.\d+)?", text[i:])
            assert m is not None
            toks.append(Tok("num", m.group(0), i, i + len(m.group(0))))
            i += len(m.group(0))
        else:
            width = next((len(s) for s in _SYMBOLS if text.startswith(s, i)), 1)
            toks.append(Tok("sym", text[i : i + width], i, i + width))
            i += width
    return toks


def _string_end(text: str, i: int, interpolated: bool) -> int:
    while i < len(text):
        if text[i] == "\\":
            i += 2
        elif text[i] == '"':
            return i + 1
        elif interpolated and text[i] == "{":
            depth = 1
            i += 1
            while i < len(text) and depth:
                if text[i] == '"':
                    i = _string_end(text, i + 1, False)
                    continue
                depth += {"{": 1, "}": -1}.get(text[i], 0)
                i += 1
        else:
            i += 1
    return len(text)


# ---------------------------------------------------------------------------------------------
# The environment

PRIO = {"default": 1000, "low": 100, "mid": 500, "high": 10000}
NUMERIC = ("Nat", "Int", "Real", "Rat")
TYPE_ALIASES = {"ℕ": "Nat", "ℤ": "Int", "ℝ": "Real", "ℚ": "Rat"}
OPS = {
    "+": ("HAdd", "Add"), "*": ("HMul", "Mul"), "-": ("HSub", "Sub"), "/": ("HDiv", "Div"),
    "%": ("HMod", "Mod"), "^": ("HPow", "Pow"), "<": ("", "LT"), ">": ("", "LT"),
    "≤": ("", "LE"), "≥": ("", "LE"),
}  # fmt: skip
COERCIONS = ("NatCast", "IntCast", "Coe", "CoeTail", "CoeHead", "CoeOut", "CoeHTCT", "CoeT")
STANDARD = ["propext", "Classical.choice", "Quot.sound"]
BUILTIN = {"rfl", "trivial", "True.intro", "Nat.le_refl", "le_refl", "id"}
LIBRARY_NAMESPACES = {"Nat", "Int", "Real", "Rat", "List", "Fin", "Classical", "Function", "Eq"}


@dataclass
class Decl:
    kind: str
    serial: int
    meaning: str | None = None  # what a theorem proves / what a Prop definition unfolds to
    type_text: str = ""  # the declared type, as written
    axioms: list[str] = field(default_factory=list)
    kernel_ok: bool = True  # False: put in the environment without the kernel
    module: str = ""
    type_ref: str | None = None  # a theorem stated by a Prop definition: its name
    checked: str | None = None  # the meaning it was checked against
    source: str = ""  # a Prop definition's text


@dataclass
class Inst:
    name: str
    cls: str
    types: list[str]  # ["*"]: any type (instHAdd from Add ...)
    prio: int
    serial: int
    default: bool = False
    scope: str | None = None  # a scoped instance's namespace
    module: str = ""


def _core_instances() -> list[Inst]:
    found = [Inst(f"inst{h}", h, ["*"], 1000, 0) for h, _ in OPS.values() if h]
    for t in NUMERIC:
        for _, cls in OPS.values():
            found.append(Inst(f"inst{cls}{t}", cls, [t], 1000, 0))
        nat = t == "Nat"  # instOfNatNat is @[default_instance 100]
        found.append(Inst(f"instOfNat{t}", "OfNat", [t], 100 if nat else 1000, 0, nat))
    found += [Inst("instNatCastInt", "NatCast", ["Int"], 1000, 0)]
    found += [Inst("Real.instNatCast", "NatCast", ["Real"], 1000, 0)]
    found += [Inst("Real.instIntCast", "IntCast", ["Real"], 1000, 0)]
    return found


@dataclass
class Env:
    decls: dict[str, Decl] = field(default_factory=dict)
    instances: list[Inst] = field(default_factory=_core_instances)
    erased: set[str] = field(default_factory=set)
    simp: int = 0  # serial of the last simp-set change (0: the library's)
    aliases: dict[str, list[str]] = field(default_factory=dict)
    scopes: list[tuple[str, str, list[str]]] = field(default_factory=list)  # kind, name, opens
    opens: list[str] = field(default_factory=list)
    serial: int = 1
    skip_kernel: bool = False
    handler: str | None = None  # a command elaborator waiting for the next command
    module: str = ""
    imports: list[str] = field(default_factory=list)

    def copy(self) -> Env:
        return Env(
            {k: Decl(**asdict(v)) for k, v in self.decls.items()},
            [Inst(**asdict(i)) for i in self.instances],
            set(self.erased), self.simp, {k: list(v) for k, v in self.aliases.items()},
            [(k, n, list(o)) for k, n, o in self.scopes], list(self.opens), self.serial,
            self.skip_kernel, self.handler, self.module, list(self.imports),
        )  # fmt: skip

    def next(self) -> int:
        self.serial += 1
        return self.serial

    def namespace(self) -> list[str]:
        return [part for k, n, _ in self.scopes if k == "namespace" for part in n.split(".")]

    def full(self, written: str) -> str:
        if written.startswith("_root_."):
            return written[len("_root_.") :]
        return ".".join([*self.namespace(), written])


class LeanError(Exception):
    pass


def norm_type(text: str) -> str:
    text = text.strip()
    return TYPE_ALIASES.get(text, text)


def name_key(name: str) -> tuple[Any, ...]:
    """Lean's ``Name.lt``: ``Name.cmp`` compares the prefix first, then the last part."""
    key: tuple[Any, ...] = ()
    for part in name.split("."):
        key = (key, part)
    return key


# ---------------------------------------------------------------------------------------------
# Meaning of propositions


@dataclass
class Ctx:
    env: Env
    extra_opens: list[str] = field(default_factory=list)

    @property
    def opens(self) -> list[str]:
        return self.env.opens + self.extra_opens


def active(ctx: Ctx) -> list[Inst]:
    ns = ".".join(ctx.env.namespace())
    found = []
    for inst in ctx.env.instances:
        if inst.name in ctx.env.erased:
            continue
        inside = (ns + ".").startswith(f"{inst.scope}.")
        if inst.scope and inst.scope not in ctx.opens and not inside:
            continue
        found.append(inst)
    return found


def winner(cands: list[Inst]) -> Inst:
    return max(cands, key=lambda i: (i.prio, i.serial))


def ident(inst: Inst) -> str:
    return f"{inst.name}#{inst.serial}" if inst.serial else inst.name


def op_identity(op: str, carrier: str | None, ctx: Ctx) -> str:
    """The instance an operator elaborates to on ``carrier``: the heterogeneous class (HAdd)
    first, through the generic instHAdd to the homogeneous one (Add) when that wins."""
    hcls, cls = OPS[op]
    insts = active(ctx)

    def of(c: str) -> list[Inst]:
        return [i for i in insts if i.cls == c and (i.types == ["*"] or i.types[:1] == [carrier])]

    if carrier not in NUMERIC and not any(i.types != ["*"] for i in of(hcls) + of(cls)):
        return op  # a local instance binder or a library type
    base = [i for i in of(cls) if i.types != ["*"]]
    if not hcls:
        if not base:
            raise LeanError(f"failed to synthesize\n  {cls} {carrier}")
        return f"{op}[{ident(winner(base))}]"
    top = of(hcls)
    if not top:
        raise LeanError(f"failed to synthesize\n  {hcls} {carrier} {carrier} ?m.5")
    win = winner(top)
    if win.types != ["*"]:
        return f"{op}[{ident(win)}]"
    if not base:
        raise LeanError(f"failed to synthesize\n  {cls} {carrier}")
    return f"{op}[{win.name}/{ident(winner(base))}]"


def default_numeral(ctx: Ctx) -> str:
    defaults = [i for i in active(ctx) if i.cls == "OfNat" and i.default]
    return winner(defaults).types[0] if defaults else "Nat"


def numeral_identity(lit: str, carrier: str, ctx: Ctx) -> str:
    cands = [i for i in active(ctx) if i.cls == "OfNat" and i.types[:1] == [carrier]]
    return f"{lit}[{ident(winner(cands))}]" if cands else f"{lit}:{carrier}"


def coe_identity(src: str, dst: str, ctx: Ctx) -> str:
    def route(i: Inst) -> tuple[str, str] | None:
        if i.cls == "NatCast":
            return ("Nat", i.types[0])
        if i.cls == "IntCast":
            return ("Int", i.types[0])
        if i.cls in COERCIONS and len(i.types) >= 2:
            return (i.types[-2], i.types[-1])
        return None

    cands = [i for i in active(ctx) if route(i) == (src, dst)]
    if not cands:
        raise LeanError(f"type mismatch: no coercion from {src} to {dst}")
    return f"↑[{ident(winner(cands))}]"


def is_library(name: str) -> bool:
    return name.split(".")[0] in LIBRARY_NAMESPACES or name in BUILTIN


def resolve(name: str, ctx: Ctx) -> str:
    env = ctx.env
    if name.startswith("_root_."):
        name = name[len("_root_.") :]
        return f"{name}#{env.decls[name].serial}" if name in env.decls else name
    ns = env.namespace()
    for k in range(len(ns), 0, -1):
        local = ".".join([*ns[:k], name])
        if local in env.decls:
            return f"{local}#{env.decls[local].serial}"
    alternatives = [name] if name in env.decls else []
    alternatives += [f"{o}.{name}" for o in ctx.opens if f"{o}.{name}" in env.decls]
    alternatives += [t for t in env.aliases.get(name, []) if t in env.decls]
    if is_library(name) and name not in alternatives and alternatives:
        alternatives.append(name)
    alternatives = list(dict.fromkeys(alternatives))
    if len(alternatives) > 1:
        listed = "\n  \n  ".join(alternatives)
        raise LeanError(f"ambiguous, possible interpretations \n  {listed}")
    if alternatives and alternatives[0] in env.decls:
        return f"{alternatives[0]}#{env.decls[alternatives[0]].serial}"
    return name


def split_top(toks: list[Tok], stop: str) -> tuple[list[Tok], list[Tok]] | None:
    depth = 0
    for k, t in enumerate(toks):
        if t.text in ("(", "[", "{", "⟨", "⦃"):
            depth += 1
        elif t.text in (")", "]", "}", "⟩", "⦄"):
            depth -= 1
        elif t.text == stop and depth == 0:
            return toks[:k], toks[k + 1 :]
    return None


def binder_groups(toks: list[Tok]) -> list[tuple[list[str], list[Tok]]]:
    groups, k = [], 0
    pairs = {"(": ")", "{": "}", "[": "]", "⦃": "⦄"}
    while k < len(toks):
        opener = toks[k].text
        if opener not in pairs:
            k += 1
            continue
        depth, j = 0, k
        while j < len(toks):
            depth += (toks[j].text in pairs) - (toks[j].text in pairs.values())
            if depth == 0:
                break
            j += 1
        inner = toks[k + 1 : j]
        parts = split_top(inner, ":")
        if parts and parts[0] and all(t.kind == "id" for t in parts[0]):
            groups.append(([t.text for t in parts[0]], parts[1]))
        else:
            groups.append(([], inner))
        k = j + 1
    return groups


def meaning(toks: list[Tok], ctx: Ctx) -> str:
    """The elaborated proposition: ``binders : concl`` or ``∀ binders, concl`` (nested ``∀``s
    flattened, binder names replaced by positions: alpha-equivalent statements agree)."""
    binders: list[Tok] = []
    concl = toks
    if toks and toks[0].text != "∀" and (parts := split_top(toks, ":")):
        binders, concl = parts
    groups = binder_groups(binders)
    while concl and concl[0].text == "∀" and (parts := split_top(concl[1:], ",")):
        groups += binder_groups(parts[0])
        concl = parts[1]
    local: dict[str, tuple[int, str]] = {}
    shown = []
    for names, type_toks in groups:
        type_m = term(type_toks, local, ctx)
        for name in names or ["_"]:
            local[name] = (len(local), norm_type("".join(t.text for t in type_toks)))
            shown.append(f"({type_m})")
    body = term(concl, local, ctx)
    return f"∀ {' '.join(shown)}, {body}" if shown else body


def term(toks: list[Tok], local: dict[str, tuple[int, str]], ctx: Ctx) -> str:
    types = [t for _, t in local.values()]
    carrier = next((t for t in types if t in NUMERIC), None) or next(
        (t for t in types if t not in ("Prop", "Type*", "Type", "Sort*")), None
    )
    if carrier is None and any(t.kind == "num" for t in toks):
        carrier = default_numeral(ctx)
    if len(toks) == 1 and toks[0].kind == "id" and toks[0].text not in local:
        target = resolve(toks[0].text, ctx).split("#")[0]
        decl = ctx.env.decls.get(target)
        if decl is not None and decl.kind == "def" and decl.meaning is not None:
            return decl.meaning  # a Prop definition unfolds to the meaning it was given
    out, k = [], 0
    while k < len(toks):
        t = toks[k]
        window = [x.text for x in toks[k : k + 5]]
        if window[:1] == ["("] and len(window) == 5 and window[2] == ":" and window[4] == ")":
            name, dst = window[1], norm_type(window[3])
            if name in local and local[name][1] != dst:
                out.append(f"{coe_identity(local[name][1], dst, ctx)} ${local[name][0]}")
                k += 5
                continue
        if t.kind == "id" and t.text == "simp":
            out.append(f"simp[{ctx.env.simp}]")
        elif t.kind == "id" and t.text in TYPE_ALIASES:
            out.append(TYPE_ALIASES[t.text])
        elif t.kind == "id" and t.text in local:
            out.append(f"${local[t.text][0]}")
        elif t.kind == "id" and t.text not in ("fun", "by", "if", "then", "else", "let", "in"):
            out.append(resolve(t.text, ctx))
        elif t.kind == "num":
            out.append(numeral_identity(t.text, carrier or "Nat", ctx))
        elif t.kind == "sym" and t.text in OPS:
            out.append(op_identity(t.text, carrier, ctx))
        else:
            out.append(t.text)
        k += 1
    return " ".join(out)


# ---------------------------------------------------------------------------------------------
# Commands

HEADS = frozenset((
    "theorem", "lemma", "def", "abbrev", "example", "instance", "structure", "class",
    "inductive", "axiom", "opaque", "namespace", "section", "end", "export", "variable",
    "universe", "attribute", "notation", "infix", "infixl", "infixr", "prefix", "postfix",
    "macro", "macro_rules", "syntax", "elab", "elab_rules", "initialize", "deriving", "mutual",
    "include", "omit", "import", "run_cmd", "run_meta", "run_elab",
))  # fmt: skip
LINE_HEADS = {"open", "set_option"}  # also term/tactic-level: a command only at a line start
MODIFIERS = {"private", "protected", "noncomputable", "partial", "unsafe", "local", "scoped"}
REF_RE = re.compile(
    r"(?:exact|apply)\s+@?([A-Za-z_][\w.']*)|@([A-Za-z_][\w.']*)|([A-Za-z_][\w.']*)\s+\.\."
)


@dataclass
class Command:
    head: str
    toks: list[Tok]  # after modifiers and attributes
    text: str  # the whole command, modifiers included
    base: int  # offset of ``text`` in the source
    line: int
    attrs: list[str]
    mods: set[str]
    prefix_opens: list[str]

    def after(self, tok: Tok) -> str:
        """The command's text from ``tok`` on."""
        return self.text[tok.start - self.base :]


def _is_head(toks: list[Tok], k: int, text: str) -> bool:
    t = toks[k]
    if t.kind == "cmd" or (t.kind == "id" and t.text in HEADS):
        return True
    if t.kind == "id" and t.text in LINE_HEADS:
        return text[text.rfind("\n", 0, t.start) + 1 : t.start].strip() == ""
    return False


def commands(text: str) -> list[Command]:
    toks = scan(text)
    starts: list[int] = []
    pending = False  # inside modifiers/attributes that belong to the next head
    k = 0
    while k < len(toks):
        t = toks[k]
        after_open = k > 0 and toks[k - 1].text == "open"
        is_mod = t.kind == "id" and t.text in MODIFIERS and not after_open
        is_attr = t.text == "@["
        if is_mod or is_attr or _is_head(toks, k, text):
            if not pending:
                starts.append(k)
            pending = is_mod or is_attr
            if is_attr or t.text in ("attribute", "deriving"):  # names in brackets are not heads
                depth = 0
                while k < len(toks):
                    depth += (toks[k].text in ("@[", "[")) - (toks[k].text == "]")
                    if depth == 0 and toks[k].text == "]":
                        break
                    k += 1
                if t.text == "deriving":
                    k += 1
        k += 1
    found = []
    for idx, s in enumerate(starts):
        end = starts[idx + 1] if idx + 1 < len(starts) else len(toks)
        part = toks[s:end]
        attrs, mods, j = [], set(), 0
        while j < len(part) and (part[j].text == "@[" or part[j].text in MODIFIERS):
            if part[j].text == "@[":
                close = j + 1
                while close < len(part) and part[close].text != "]":
                    close += 1
                attrs.append(" ".join(x.text for x in part[j + 1 : close]))
                j = close + 1
            else:
                mods.add(part[j].text)
                j += 1
        body = part[j:]
        if not body:
            continue
        base = part[0].start
        stop = toks[end].start if end < len(toks) else len(text)
        line = text.count("\n", 0, body[0].start) + 1
        found.append(Command(body[0].text, body, text[base:stop], base, line, attrs, mods, []))
    # `open X in` applies X to the next command only
    merged: list[Command] = []
    pending_opens: list[str] = []
    for cmd in found:
        if cmd.head == "open" and cmd.toks[-1].text == "in":
            names = [t.text for t in cmd.toks[1:-1] if t.kind == "id" and t.text != "scoped"]
            pending_opens += names
            continue
        cmd.prefix_opens, pending_opens = pending_opens, []
        merged.append(cmd)
    return merged


def msg(severity: str, data: str, line: int = 1) -> dict[str, Any]:
    return {
        "severity": severity,
        "pos": {"line": line, "column": 0},
        "endPos": {"line": line, "column": 5},
        "data": data,
    }


PROOF_STATES = [0]  # the REPL numbers proof states across its whole life (REPL/Main.lean)


class Session:
    """Elaborates commands against an environment, collecting messages and sorries."""

    def __init__(self, env: Env) -> None:
        self.env = env
        self.messages: list[dict[str, Any]] = []
        self.sorries: list[dict[str, Any]] = []

    def run(self, text: str, line_offset: int = 0) -> None:
        for cmd in commands(text):
            line = cmd.line + line_offset
            if self.env.handler is not None:  # a command elaborator runs on the next command
                handler, self.env.handler = self.env.handler, None
                self.metaprogram(handler)
            try:
                self.command(cmd, line)
            except LeanError as exc:
                self.messages.append(msg("error", str(exc), line))

    # -- dispatch --------------------------------------------------------------------------

    def command(self, cmd: Command, line: int) -> None:
        env, head, toks = self.env, cmd.head, cmd.toks
        ctx = Ctx(env, cmd.prefix_opens)
        if head == "import":
            raise LeanError(
                "invalid 'import' command, it must be used in the beginning of the file"
            )
        if head in ("namespace", "section"):
            name = toks[1].text if len(toks) > 1 and toks[1].kind == "id" else ""
            env.scopes.append((head, name, list(env.opens)))
        elif head == "end":
            if not env.scopes:
                raise LeanError("invalid 'end', insufficient scopes")
            _, _, env.opens = env.scopes.pop()
        elif head == "open":
            names = [t.text for t in toks[1:] if t.kind == "id" and t.text != "scoped"]
            ns = env.namespace()
            for name in names:
                nested = ".".join([*ns, name])
                known = any(d.startswith(nested + ".") for d in env.decls)
                env.opens.append(nested if known else name)
        elif head == "export":
            target = toks[1].text
            for t in toks[2:]:
                if t.kind == "id":
                    env.aliases.setdefault(t.text, []).append(f"{target}.{t.text}")
        elif head == "set_option":
            if len(toks) > 2 and toks[1].text == "debug.skipKernelTC" and toks[2].text == "true":
                env.skip_kernel = True
        elif head == "attribute":
            self.attribute(toks)
        elif head in ("#eval", "#eval!", "run_cmd", "run_meta", "run_elab"):
            self.metaprogram(cmd.text)
        elif head == "elab":
            env.handler = cmd.text
        elif head == "#print" and len(toks) > 2 and toks[1].text == "axioms":
            self.print_axioms(toks[2].text, line)
        elif head == "#print" and len(toks) > 1 and toks[1].kind == "str":
            self.messages.append(msg("info", toks[1].text.strip('"'), line))
        elif head == "instance":
            self.instance(cmd, ctx)
        elif head in ("def", "abbrev", "theorem", "lemma", "example", "opaque", "axiom"):
            self.declaration(cmd, ctx, line)
        elif head in ("structure", "inductive", "class"):
            name = env.full(toks[1].text)
            env.decls[name] = Decl("inductive", env.next(), module=env.module)
            for k, t in enumerate(toks):
                if t.text == "|" and k + 1 < len(toks) and toks[k + 1].kind == "id":
                    ctor = Decl("ctor", env.next(), module=env.module)
                    env.decls[f"{name}.{toks[k + 1].text}"] = ctor

    def attribute(self, toks: list[Tok]) -> None:
        """``attribute [instance] x``, ``attribute [-instance] x``, ``attribute [simp] x``."""
        close = next((k for k, t in enumerate(toks) if t.text == "]"), len(toks))
        names = [t.text for t in toks[2:close] if t.kind == "id"]
        erase = any(t.text == "-" for t in toks[2:close])
        target = next((t.text for t in toks[close + 1 :] if t.kind == "id"), "")
        if "instance" in names:
            if erase:
                self.env.erased.add(target)
            elif (decl := self.env.decls.get(self.env.full(target))) is not None:
                self.add_instance(target, decl.type_text, None, False)
        if "simp" in names:
            self.env.simp = self.env.next()

    # -- declarations ----------------------------------------------------------------------

    def instance(self, cmd: Command, ctx: Ctx) -> None:
        toks = cmd.toks[1:]
        prio = None
        if len(toks) > 1 and toks[0].text == "(" and toks[1].text == "priority":
            close = next(k for k, t in enumerate(toks) if t.text == ")")
            prio = toks[close - 1].text
            toks = toks[close + 1 :]
        name = ""
        if toks and toks[0].kind == "id":
            name = toks[0].text
            toks = toks[1:]
        sig = split_top(toks, ":=") or split_top(toks, "where") or (toks, [])
        type_part = split_top(sig[0], ":")
        type_toks = type_part[1] if type_part else sig[0]
        type_text = " ".join(t.text for t in type_toks)
        default = next((a for a in cmd.attrs if a.startswith("default_instance")), None)
        if default is not None:
            prio = default.split()[1] if len(default.split()) > 1 else "default"
        scope = ".".join(self.env.namespace()) if "scoped" in cmd.mods else None
        auto = "inst" + "".join(t.text for t in type_toks if t.kind == "id")
        self.add_instance(name or auto, type_text, prio, default is not None, scope)

    def add_instance(
        self, name: str, type_text: str, prio: str | None, default: bool, scope: str | None = None
    ) -> None:
        words = [w for w in type_text.replace("(", " ").replace(")", " ").split() if w != "→"]
        if not words:
            return
        cls, types = words[0], [norm_type(w) for w in words[1:]]
        value = PRIO.get(prio or "default", int(prio) if prio and prio.isdigit() else 1000)
        env = self.env
        serial = env.next()
        env.instances.append(Inst(name, cls, types, value, serial, default, scope, env.module))
        env.decls[env.full(name)] = Decl("instance", serial, type_text=type_text, module=env.module)

    def declaration(self, cmd: Command, ctx: Ctx, line: int) -> None:
        env, toks = self.env, cmd.toks
        kind = {"lemma": "theorem", "abbrev": "def"}.get(cmd.head, cmd.head)
        rest = toks[1:]
        written = ""
        if kind != "example" and rest and rest[0].kind == "id":
            written, rest = rest[0].text, rest[1:]
        name = env.full(written) if written else ""
        parts = split_top(rest, ":=")
        sig, body_toks = parts if parts else (rest, [])
        body = cmd.after(body_toks[0]) if body_toks else ""
        type_split = split_top(sig, ":")
        type_text = " ".join(t.text for t in type_split[1]) if type_split else ""
        decl = Decl(kind, env.next(), type_text=type_text, module=env.module)
        if kind == "axiom":
            decl.axioms = [name]
            env.decls[name] = decl
            return
        if kind == "def":
            if type_text == "Prop":
                decl.meaning = meaning(body_toks, ctx)
                decl.source = body
            if any(a.split()[0] in ("command_elab", "commandElab") for a in cmd.attrs if a):
                env.handler = body
            if "instance" in [a.split()[0] for a in cmd.attrs if a]:
                self.add_instance(written, type_text, None, False)
        elif kind in ("theorem", "example", "opaque"):
            stated = meaning(sig, ctx)
            if type_split and len(type_split[1]) == 1 and not type_split[0]:
                target = resolve(type_split[1][0].text, ctx).split("#")[0]
                if target in env.decls and env.decls[target].kind == "def":
                    decl.type_ref = target
            decl.meaning = decl.checked = stated
            self.check_reference(body, stated, ctx)
        axioms = self.judge_proof(name, body, cmd.text, line)
        if axioms is None:
            return
        decl.axioms = axioms
        decl.kernel_ok = not env.skip_kernel
        if any(a.split()[0] == "simp" for a in cmd.attrs if a):
            env.simp = env.next()
        if kind != "example" and name:
            env.decls[name] = decl

    def check_reference(self, body: str, stated: str, ctx: Ctx) -> None:
        """``:= @X`` / ``:= X`` for a theorem X: its statement must mean the same."""
        m = re.fullmatch(r"\s*@?([\w.'«»]+)\s*", body)
        if not m:
            return
        target = resolve(m.group(1), ctx).split("#")[0]
        decl = self.env.decls.get(target)
        if decl is None or decl.kind != "theorem" or decl.meaning is None:
            return
        if decl.meaning != stated:
            raise LeanError(
                f"type mismatch\n  @{target}\nhas type\n  {decl.meaning} : Prop\n"
                f"but is expected to have type\n  {stated} : Prop"
            )

    def judge_proof(self, name: str, body: str, cmd: str, line: int) -> list[str] | None:
        """Axioms of the proof, or None after adding an error."""
        axioms: set[str] = set()
        if "FAKE_PARSE" in body:
            raise LeanError("unexpected token 'at'; expected term")
        if re.search(r"\bbogus\b", body):
            raise LeanError("unknown identifier 'bogus'")
        if "FAKE_UNSOLVED" in body:
            raise LeanError("unsolved goals\n⊢ False")
        for match in REF_RE.finditer(body):
            ref = next(g for g in match.groups() if g)
            found = resolve(ref, Ctx(self.env)).split("#")[0]
            if found in self.env.decls:
                axioms.update(self.env.decls[found].axioms)
            elif "." not in ref and ref not in BUILTIN:
                raise LeanError(f"unknown identifier '{ref}'")
        for word in re.findall(r"[A-Za-z_][\w']*(?:\.[A-Za-z_][\w']*)+", body):
            base = resolve(word.rsplit(".", 1)[0], Ctx(self.env)).split("#")[0]
            if base in self.env.decls:  # `h.elim`, `forged.elim`: uses the constant
                axioms.update(self.env.decls[base].axioms)
        if re.search(r"\b(sorry|admit)\b", body):
            quote = "`sorry`" if "FAKE_NEW_SORRY" in cmd else "'sorry'"
            self.messages.append(msg("warning", f"declaration uses {quote}", line))
            self.sorries.append(
                {
                    "proofState": PROOF_STATES[0],
                    "pos": {"line": line, "column": 0},
                    "goal": "⊢ False",
                    "endPos": {"line": line, "column": 5},
                }
            )
            PROOF_STATES[0] += 1
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
        return sorted(axioms, key=name_key)

    # -- metaprograms and axioms -----------------------------------------------------------

    def metaprogram(self, text: str) -> None:
        """Environment hacking: constants put in without the kernel."""
        env = self.env
        if not re.search(r"\b(addDecl|modifyEnv)\b", text):
            return
        if "rlv_stmt" in text:  # re-elaborates each statement definition here, in place
            for decl in env.decls.values():
                if decl.kind == "def" and decl.source:
                    decl.meaning = meaning(scan(decl.source), Ctx(env))
        for forged in re.findall(r"`([A-Za-z_][\w.']*)", text):
            claim = "False" if "False" in text else "True"
            env.decls[env.full(forged)] = Decl(
                "theorem", env.next(), meaning=claim, kernel_ok=False, module=env.module
            )

    def print_axioms(self, target: str, line: int) -> None:
        found = resolve(target, Ctx(self.env)).split("#")[0]
        if found not in self.env.decls:
            raise LeanError(f"unknown constant '{found}'")
        axioms = sorted(self.env.decls[found].axioms, key=name_key)
        if not axioms:
            self.messages.append(msg("info", f"'{found}' does not depend on any axioms", line))
            return
        text = f"'{found}' depends on axioms: [{', '.join(axioms)}]"
        if len(text) > 120:  # Lean's format width: the list breaks one item per line
            text = f"'{found}' depends on axioms: [{(',' + chr(10) + ' ').join(axioms)}]"
        self.messages.append(msg("info", text, line))


# ---------------------------------------------------------------------------------------------
# Imports and .olean files (fake ones are JSON)


def search_path() -> list[str]:
    return [p for p in os.environ.get("LEAN_PATH", "").split(":") if p]


def find_olean(module: str) -> str | None:
    rel = module.replace(".", "/") + ".olean"
    return next(
        (os.path.join(p, rel) for p in search_path() if os.path.isfile(os.path.join(p, rel))), None
    )


def read_olean(path: str) -> dict[str, Any] | None:
    try:
        with open(path, "rb") as fh:
            if fh.read(15) != b'{"fake_olean": ':
                return None  # a real (binary) .olean: library contents the fake does not model
            data = json.loads(b'{"fake_olean": ' + fh.read())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("fake_olean") == 1 else None


def load_module(env: Env, module: str, seen: set[str]) -> None:
    if module in seen:
        return
    seen.add(module)
    path = find_olean(module)
    data = read_olean(path) if path else None
    if data is None:
        return
    for dep in data["imports"]:
        load_module(env, dep, seen)
    for name, decl in data["decls"].items():
        env.decls[name] = Decl(**decl)
    env.instances += [Inst(**inst) for inst in data["instances"]]
    env.serial = max(env.serial, data["serial"]) + 1


def split_imports(text: str) -> tuple[list[str], int]:
    """Modules imported at the top of ``text`` and the offset where the commands start."""
    modules, offset = [], 0
    for m in re.finditer(r"[^\n]*\n?", text):
        line = m.group(0)
        stripped = line.split("--")[0].strip()
        if stripped.startswith("import "):
            modules += stripped.split()[1:]
            offset = m.end()
        elif stripped:
            break
        else:
            offset = m.end() if not modules else offset
    return modules, offset if modules else 0


def missing_import(modules: list[str]) -> str | None:
    """Lean's error for the first import not found on LEAN_PATH (None: all found)."""
    search = search_path()
    if not search:
        return None
    for module in modules:
        top = module.split(".")[0]
        if top in ("Init", "Lean", "Std", "Lake"):
            continue  # the toolchain's own library, found through LEAN_SYSROOT
        if find_olean(module) is None:
            return (
                f"unknown module prefix '{top}'\n\nNo directory '{top}' or file "
                f"'{top}.olean' in the search path entries:\n" + "\n".join(search)
            )
    return None


# ---------------------------------------------------------------------------------------------
# Markers shared by the REPL and `lean`


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


def faults(cmd: str, crash_code: int = 1) -> None:
    if "FAKE_HANG" in cmd:
        time.sleep(3600)
    if "FAKE_CRASH" in cmd:
        sys.stderr.write("PANIC at fake crash\n")
        sys.exit(crash_code)
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


def extras(cmd: str, session: Session) -> None:
    if "FAKE_INFO" in cmd:
        session.messages.insert(0, msg("info", "Try this: exact foo"))
    if "FAKE_LINT" in cmd:
        session.messages.insert(
            0,
            msg(
                "warning",
                "unused variable `h`\nnote: this linter can be "
                "disabled with `set_option linter.unusedVariables false`",
            ),
        )


# ---------------------------------------------------------------------------------------------
# Personalities


def repl_main(args: list[str]) -> None:
    header_s = float(args[args.index("--header-s") + 1]) if "--header-s" in args else 0
    echo = "--echo" in args
    snapshots: list[Env] = []
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
        cmd = str(request.get("cmd", ""))
        if "env" in request and not (0 <= request["env"] < len(snapshots)):
            respond({"message": "Unknown environment."})
            continue
        base = snapshots[request["env"]] if "env" in request else None
        answer = repl_command(cmd, base, header_s)
        snapshots.append(answer.pop("_env"))
        answer = {"env": len(snapshots) - 1, **answer}
        if echo:  # the REPL's debug print per command: byte positions, then the text itself
            bounds = [*[c.base for c in commands(cmd)][1:], len(cmd)]
            prev = 0
            for end in bounds:
                a, b = len(cmd[:prev].encode()), len(cmd[:end].encode())
                chunk = cmd[prev:end]
                sys.stdout.write(f"Processing incremental state [pos: {a}..{b}]:\n{chunk}\n")
                prev = end
        if "FAKE_NOISE" in cmd:
            sys.stdout.write("Processing incremental state [pos: 0..9]:\nby simp\n")
        respond(answer)


def repl_command(cmd: str, base: Env | None, header_s: float) -> dict[str, Any]:
    if "FAKE_PROBE" in cmd:
        return {"_env": base or Env(), "messages": [msg("info", json.dumps(probe(cmd)))]}
    faults(cmd)
    env = base.copy() if base is not None else Env()
    session = Session(env)
    if base is None:  # a header: imports first (Mathlib takes seconds for real)
        time.sleep(header_s)
        modules, offset = split_imports(cmd)
        if error := missing_import(modules):
            return {"_env": Env(), "messages": [msg("error", error)]}  # Lean goes on empty
        for module in modules:
            load_module(env, module, set())
        session.run(cmd[offset:], cmd.count("\n", 0, offset))
    else:
        session.run(cmd)
    extras(cmd, session)
    answer: dict[str, Any] = {"_env": env}
    if session.messages:
        answer["messages"] = session.messages
    if session.sorries:
        answer["sorries"] = session.sorries
    return answer


def respond(answer: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(answer, indent=2, ensure_ascii=False) + "\n\n")
    sys.stdout.flush()


def header_delay(args: list[str]) -> list[str]:
    """Sleep ``--header-s S`` seconds (a header's import), return the other arguments."""
    if "--header-s" not in args:
        return args
    k = args.index("--header-s")
    time.sleep(float(args[k + 1]))
    return args[:k] + args[k + 2 :]


def lean_main(args: list[str]) -> None:
    """`lean [--json] [-R ROOT] [-o OLEAN] FILE`; ``--header-s S`` simulates the import."""
    args = header_delay(args)
    path = args[-1]
    root = args[args.index("-R") + 1] if "-R" in args else os.getcwd()
    olean = args[args.index("-o") + 1] if "-o" in args else None
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    faults(text, crash_code=134)
    module = os.path.relpath(os.path.abspath(path), root)[: -len(".lean")].replace("/", ".")
    env = Env(module=module)
    session = Session(env)
    modules, offset = split_imports(text)
    if error := missing_import(modules):
        session.messages.append(msg("error", error))
    else:
        env.imports = modules
        for mod in modules:
            load_module(env, mod, set())
        session.run(text[offset:], text.count("\n", 0, offset))
    extras(text, session)
    severity = {"info": "information"}
    for m in session.messages:
        serial = {"fileName": path, **m, "severity": severity.get(m["severity"], m["severity"])}
        print(json.dumps({**serial, "caption": ""}, ensure_ascii=False))
    failed = any(m["severity"] == "error" for m in session.messages)
    if olean and not failed:
        own = {k: asdict(v) for k, v in env.decls.items() if v.module == module}
        insts = [asdict(i) for i in env.instances if i.module == module and i.serial]
        data = {"fake_olean": 1, "imports": env.imports, "decls": own, "instances": insts}
        os.makedirs(os.path.dirname(olean) or ".", exist_ok=True)
        with open(olean, "w", encoding="utf-8") as fh:
            json.dump({**data, "serial": env.serial}, fh)
    sys.exit(1 if failed else 0)


def checker_main(args: list[str]) -> None:
    """`leanchecker [--fresh] MODULE`: replay MODULE's constants through the (fake) kernel
    (``--header-s S`` simulates loading the imports)."""
    modules = [a for a in header_delay(args) if not a.startswith("-")]
    for module in modules:
        path = find_olean(module)
        if path is None:
            sys.stderr.write(f"uncaught exception: Could not find any oleans for: {module}\n")
            sys.exit(1)
        data = read_olean(path)
        if data is None:
            sys.stderr.write(f"uncaught exception: failed to read file '{path}'\n")
            sys.exit(1)
        env = Env()
        seen: set[str] = {module}
        for dep in data["imports"]:
            load_module(env, dep, seen)
        for name, raw in data["decls"].items():
            decl = Decl(**raw)
            problem = None
            if name in env.decls:
                problem = f"(kernel) constant has already been declared '{name}'"
            elif not decl.kernel_ok:
                problem = (
                    f"(kernel) declaration type mismatch, '{name}' has type\n  Prop\n"
                    f"but it is expected to have type\n  {decl.meaning}"
                )
            elif decl.type_ref is not None:
                stated = env.decls.get(decl.type_ref)
                if stated is None or stated.meaning != decl.checked:
                    problem = (
                        f"(kernel) declaration type mismatch, '{name}' has type\n  "
                        f"{decl.checked}\nbut it is expected to have type\n  {decl.type_ref}"
                    )
            if problem:
                sys.stderr.write(f"lean4checker found a problem in {module}\n")
                sys.stderr.write(f"uncaught exception: {problem}\n")
                sys.exit(1)
            env.decls[name] = decl
    sys.exit(0)


def main() -> None:
    program = os.path.basename(sys.argv[0])
    args = sys.argv[1:]
    if program in ("lean", "leanchecker", "lean4checker"):
        personality = program
    elif args and args[0] in ("repl", "lean", "leanchecker"):
        personality, args = args[0], args[1:]
    else:
        personality = "repl"
    if personality == "lean":
        lean_main(args)
    elif personality in ("leanchecker", "lean4checker"):
        checker_main(args)
    else:
        repl_main(args)


if __name__ == "__main__":
    main()
