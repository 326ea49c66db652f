"""Lean 4 lexing by Lean's own rules: what is code, what is a comment, string or char literal.

Sources of the rules (Lean 4): ``src/Lean/Parser/Basic.lean`` (``whitespace`` and
``finishCommentBlock``: ``--`` to end of line, ``/-`` ... ``-/`` nested, ``/--`` and ``/-!`` doc
comments open with three characters; ``tokenFn``: a ``'`` at a token start that is not followed
by ``'`` starts a char literal; ``identFn``: dotted identifiers whose parts are ``«...»`` or
``isIdFirst isIdRest*``), ``src/Init/Meta.lean`` (``isIdFirst``; ``isIdRest`` includes ``'``,
``!`` and ``?``; ``isLetterLike``; ``isSubScriptAlnum``) and the language reference,
``Manual/BasicTypes/String/Literals.lean`` (escapes and gaps; ``s!``/``m!`` interpolation whose
``{...}`` holds code; raw strings ``r#"..."#`` with no escapes, ended by a quote and the same
number of ``#``).

Only a few syntaxes read a string as interpolated (``s!``, ``m!``, ``f!``; ``throwError`` and
others when it parses so), and plugins can add more. A string after anything else is read
both ways; when the two readings end at different places, the text is ambiguous and reported
as a problem (the screen rejects it). When they agree, the braces are treated as code, which
only ever shows the screen more.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# Tokens after which a string literal can only be interpolated (`"s!" interpolatedStr(term)`).
# Others (`throwError`, `println!`, ...) take `interpolatedStr(term) <|> term`: Lean reads the
# string plain when it does not parse interpolated, so those go through the two-way check.
INTERPOLATING = frozenset({"s!", "m!", "f!"})
# Strings inside interpolation braces inside strings...: deeper than this is a lexing problem
# (the screen rejects it). Each level recurses, so without a bound a few hundred levels of
# `"{"{"{...` raised RecursionError.
MAX_INTERPOLATION_DEPTH = 16


@dataclass(frozen=True)
class Token:
    """A code token. ``kind``: ident, command (``#eval``), name (`` `x ``), number, symbol."""

    kind: str
    text: str  # identifiers: «» removed from each part
    start: int
    end: int
    in_string: bool = False  # inside a string's interpolation braces


@dataclass
class Lexed:
    tokens: list[Token] = field(default_factory=list)
    comments: list[tuple[int, int]] = field(default_factory=list)
    literals: list[tuple[int, int]] = field(default_factory=list)  # string/char text (not code)
    problems: list[str] = field(default_factory=list)  # unterminated, ambiguous, malformed


def is_letter_like(c: str) -> bool:
    v = ord(c)
    return (
        (0x3B1 <= v <= 0x3C9 and v != 0x3BB)
        or (0x391 <= v <= 0x3A9 and v not in (0x3A0, 0x3A3))
        or 0x3CA <= v <= 0x3FB
        or 0x1F00 <= v <= 0x1FFE
        or 0x2100 <= v <= 0x214F
        or 0x1D49C <= v <= 0x1D59F
    )


def is_subscript_alnum(c: str) -> bool:
    v = ord(c)
    return 0x2080 <= v <= 0x2089 or 0x2090 <= v <= 0x209C or 0x1D62 <= v <= 0x1D6A or v == 0x2C7C


def is_id_first(c: str) -> bool:
    return (c.isascii() and c.isalpha()) or c == "_" or is_letter_like(c)


def is_id_rest(c: str) -> bool:
    ascii_ok = (c.isascii() and c.isalnum()) or c in "_'!?"
    return ascii_ok or is_letter_like(c) or is_subscript_alnum(c)


class _Lexer:
    def __init__(self, text: str, out: Lexed, depth: int = 0, trial: bool = False) -> None:
        self.text = text
        self.n = len(text)
        self.out = out
        self.depth = depth  # interpolated strings this lexer's code is nested in
        # A trial reading is only asked whether it has a problem: it stops at the first one
        # (going on would lex the rest again at every level of nesting).
        self.trial = trial

    def stopped(self) -> bool:
        return self.trial and bool(self.out.problems)

    # Code ------------------------------------------------------------------------------

    def code(self, i: int, *, closing: bool, in_string: bool = False) -> int:
        """Lex code from ``i``; with ``closing``, stop at the ``}`` ending an interpolation
        (returning its index), else at the end of the text."""
        text, depth = self.text, 0
        while i < self.n:
            if self.stopped():
                return self.n
            c = text[i]
            if c.isspace():
                i += 1
            elif text.startswith("--", i):
                j = text.find("\n", i)
                j = self.n if j < 0 else j
                self.out.comments.append((i, j))
                i = j
            elif text.startswith("/-", i):
                i = self.block_comment(i)
            elif c == '"':
                i = self.string(i)
            elif c == "r" and self._raw_start(i):
                i = self.raw_string(i)
            elif c == "'" and self.text.startswith("'", i + 1) is False:
                i = self.char(i)
            elif c == "«" or is_id_first(c):
                i = self.ident(i, "ident", in_string)
            elif c == "`":
                j = i
                while j < self.n and text[j] == "`":
                    j += 1
                if j < self.n and (text[j] == "«" or is_id_first(text[j])):
                    i = self.ident(j, "name", in_string, start=i)
                else:
                    self.emit("symbol", text[i:j], i, j, in_string)
                    i = j
            elif c == "#" and i + 1 < self.n and is_id_first(text[i + 1]):
                j = i + 1
                while j < self.n and is_id_rest(text[j]):
                    j += 1
                self.emit("command", text[i:j], i, j, in_string)
                i = j
            elif c.isdigit():
                j = i + 1
                while j < self.n and (text[j].isalnum() or text[j] == "_"):
                    j += 1
                self.emit("number", text[i:j], i, j, in_string)
                i = j
            elif closing and c == "}" and depth == 0:
                return i
            else:
                two = text[i : i + 2]
                width = 2 if two in ("@[", ":=", "=>", "..", "::") else 1
                if c == "{":
                    depth += 1
                elif c == "}":
                    depth -= 1
                self.emit("symbol", text[i : i + width], i, i + width, in_string)
                i += width
        if closing:
            self.out.problems.append("unterminated string interpolation")
        return self.n

    def emit(self, kind: str, value: str, start: int, end: int, in_string: bool) -> None:
        self.out.tokens.append(Token(kind, value, start, end, in_string))

    def ident(self, i: int, kind: str, in_string: bool, start: int | None = None) -> int:
        """A dotted identifier whose parts are «quoted» or plain."""
        text, parts, begin = self.text, [], i if start is None else start
        while True:
            if i < self.n and text[i] == "«":
                j = text.find("»", i + 1)
                if j < 0:
                    self.out.problems.append("unterminated «quoted identifier»")
                    self.emit(kind, text[i:], begin, self.n, in_string)
                    return self.n
                parts.append(text[i + 1 : j])
                i = j + 1
            else:
                j = i + 1
                while j < self.n and is_id_rest(text[j]):
                    j += 1
                parts.append(text[i:j])
                i = j
            if (
                i + 1 < self.n
                and text[i] == "."
                and (text[i + 1] == "«" or is_id_first(text[i + 1]))
            ):
                i += 1
                continue
            self.emit(kind, ".".join(parts), begin, i, in_string)
            return i

    # Comments -------------------------------------------------------------------------

    def block_comment(self, i: int) -> int:
        """``/-`` ... ``-/`` with nesting, as Lean's ``finishCommentBlock`` reads it; doc
        comments (``/--``, ``/-!``) open with three characters."""
        text, start = self.text, i
        i += 3 if text[i + 2 : i + 3] in ("-", "!") else 2
        nesting = 1
        while i < self.n:
            if text[i] == "-" and text.startswith("/", i + 1):
                nesting -= 1
                i += 2
                if nesting == 0:
                    self.out.comments.append((start, i))
                    return i
            elif text[i] == "/" and text.startswith("-", i + 1):
                nesting += 1
                i += 2
            else:
                i += 1
        self.out.problems.append("unterminated comment")
        self.out.comments.append((start, self.n))
        return self.n

    # Literals -------------------------------------------------------------------------

    def _raw_start(self, i: int) -> bool:
        if i > 0 and is_id_rest(self.text[i - 1]):
            return False  # part of an identifier such as `bar"..."`
        j = i + 1
        while j < self.n and self.text[j] == "#":
            j += 1
        return j < self.n and self.text[j] == '"'

    def raw_string(self, i: int) -> int:
        text, j = self.text, i + 1
        while text[j] == "#":
            j += 1
        closing = '"' + "#" * (j - i - 1)
        end = text.find(closing, j + 1)
        if end < 0:
            self.out.problems.append("unterminated raw string")
            self.out.literals.append((i, self.n))
            return self.n
        end += len(closing)
        self.out.literals.append((i, end))
        return end

    def char(self, i: int) -> int:
        """A char literal: ``'c'`` or ``'\\n'``; anything else is Lean's parse error."""
        j = i + 1
        if j < self.n and self.text[j] == "\\":
            j = self._escape(j)
        elif j < self.n:
            j += 1
        if j < self.n and self.text[j] == "'":
            self.out.literals.append((i, j + 1))
            return j + 1
        self.out.problems.append("malformed char literal")
        return i + 1

    def _escape(self, j: int) -> int:
        """Index after the escape sequence starting at the backslash ``j``."""
        nxt = self.text[j + 1 : j + 2]
        if nxt == "x":
            return j + 4
        if nxt == "u":
            return j + 6
        if nxt == "\n":  # string gap: newline and the next line's leading whitespace
            k = j + 2
            while k < self.n and self.text[k] in " \t":
                k += 1
            return k
        return j + 2

    def string(self, i: int) -> int:
        previous = self.out.tokens[-1].text if self.out.tokens else ""
        if previous in INTERPOLATING:
            return self._interpolated(i, self.out)
        plain = self._plain_end(i)
        if "{" not in self.text[i:plain]:
            self.out.literals.append((i, plain))
            return plain
        if self.out.problems:
            # The text is already rejected: later strings are read plainly, so a text of many
            # ambiguous strings costs one trial reading, not one per string (quadratic).
            self.out.literals.append((i, plain))
            return plain
        trial = _Lexer(self.text, Lexed(), self.depth, trial=True)
        end = trial._interpolated(i, trial.out)
        if end != plain or trial.out.problems:
            self.out.problems.append("string read differently with and without interpolation")
            self.out.literals.append((i, plain))
            return plain
        # The trial is the interpolated reading (no token before the string is interpolating,
        # here or in the trial): keep it rather than lex the string again, so nested strings
        # cost one pass, not two per level.
        self.out.tokens += trial.out.tokens
        self.out.comments += trial.out.comments
        self.out.literals += trial.out.literals
        return end

    def _plain_end(self, i: int) -> int:
        j = i + 1
        while j < self.n:
            if self.text[j] == "\\":
                j = self._escape(j)
            elif self.text[j] == '"':
                return j + 1
            else:
                j += 1
        self.out.problems.append("unterminated string")
        return self.n

    def _interpolated(self, i: int, out: Lexed) -> int:
        if self.depth >= MAX_INTERPOLATION_DEPTH:
            out.problems.append(
                f"string interpolation nested deeper than {MAX_INTERPOLATION_DEPTH} levels"
            )
            out.literals.append((i, self.n))
            return self.n
        lexer = _Lexer(self.text, out, self.depth + 1, self.trial)
        j, piece = i + 1, i
        while j < self.n:
            if lexer.stopped():
                return self.n
            c = self.text[j]
            if c == "\\":
                j = lexer._escape(j)
            elif c == '"':
                out.literals.append((piece, j + 1))
                return j + 1
            elif c == "{":
                out.literals.append((piece, j + 1))
                j = lexer.code(j + 1, closing=True, in_string=True)
                piece = j
                j += 1
            else:
                j += 1
        out.problems.append("unterminated string")
        out.literals.append((piece, self.n))
        return self.n


def lex(text: str) -> Lexed:
    """Tokens of the code, comment and literal spans, and lexical problems."""
    out = Lexed()
    _Lexer(text, out).code(0, closing=False)
    return out


def blank(text: str, *, strings: bool) -> str:
    """Replace comments and, if asked, string and char literal text (not interpolated code)
    with spaces, keeping newlines and every offset, so positions map back to ``text``."""
    lexed = lex(text)
    out = list(text)
    spans = lexed.comments + (lexed.literals if strings else [])
    for start, end in spans:
        for k in range(start, min(end, len(out))):
            if out[k] != "\n":
                out[k] = " "
    return "".join(out)


def code_only(text: str) -> str:
    """The text with comments and literal text blanked."""
    return blank(text, strings=True)


def tokens(text: str) -> list[Token]:
    return lex(text).tokens


def normalise(text: str) -> str:
    """Comments and strings stripped, whitespace collapsed."""
    return " ".join(code_only(text).split())
