"""Write parity.jsonl: reference/answer pairs for the parity test and the throughput benchmark.

Each row: ``reference`` (as a task's ``answer``), ``answer`` (a completion), ``equivalent``
(whether a careful grader would accept it), ``form`` (what kind of pair it is), optionally
``prompt`` and ``hack`` (the reward hack the pair is; the math verifier scores it 0 whatever
math-verify says). Rerun after editing the tables below: python make_parity.py
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).parent

# reference -> (answer, equivalent); the answer is wrapped in several ways below.
VALUES: dict[str, list[tuple[str, bool]]] = {
    # integers
    "42": [("42", True), ("42.0", True), ("41", False), ("-42", False), ("4.2", False)],
    "-7": [("-7", True), ("- 7", True), ("7", False), ("-7.0", True)],
    "1000": [("1000", True), ("1,000", True), ("1000.00", True), ("100", False)],
    "0": [("0", True), ("0.0", True), ("-0", True), ("1", False)],
    "2024": [("2024", True), ("2,024", True), ("2042", False)],
    # fractions and decimals
    "\\frac{1}{2}": [
        ("0.5", True),
        ("1/2", True),
        ("\\dfrac{1}{2}", True),
        ("\\frac{2}{4}", True),
        ("\\frac12", True),
        ("0.25", False),
        ("\\frac{1}{3}", False),
        ("2", False),
    ],
    "\\frac{14}{3}": [
        ("\\frac{14}{3}", True),
        ("4\\frac{2}{3}", True),
        ("4.67", False),
        ("\\frac{3}{14}", False),
        ("14/3", True),
    ],
    "-\\frac{3}{4}": [
        ("-0.75", True),
        ("-\\frac{3}{4}", True),
        ("\\frac{-3}{4}", True),
        ("\\frac{3}{4}", False),
    ],
    "0.125": [("\\frac{1}{8}", True), ("0.125", True), (".125", True), ("0.12", False)],
    "\\frac{1}{3}": [
        ("0.333333", True),
        ("0.3333333333", True),
        ("0.33", False),
        ("\\frac{2}{6}", True),
    ],
    # percentages (percent=False: a percentage is not its fraction)
    "25\\%": [("25\\%", True), ("25", True), ("0.25", False), ("26\\%", False)],
    # roots, pi, trigonometry
    "\\sqrt{2}": [
        ("\\sqrt{2}", True),
        ("2^{1/2}", True),
        ("1.414214", True),
        ("\\frac{2}{\\sqrt{2}}", True),
        ("\\sqrt{3}", False),
        ("2", False),
    ],
    "\\frac{\\sqrt{3}}{2}": [
        ("\\frac{\\sqrt{3}}{2}", True),
        ("\\sin(\\pi/3)", True),
        ("\\cos\\frac{\\pi}{6}", True),
        ("\\frac{1}{2}", False),
        ("0.866025", True),
        ("\\frac{\\sqrt{2}}{2}", False),
    ],
    "2\\pi": [
        ("2\\pi", True),
        ("\\pi \\cdot 2", True),
        ("6.283185", True),
        ("\\pi", False),
        ("\\tau", False),
    ],
    "3\\sqrt{5}": [("3\\sqrt{5}", True), ("\\sqrt{45}", True), ("5\\sqrt{3}", False)],
    "e^{2}": [("e^2", True), ("e^{2}", True), ("2e", False)],
    # expressions
    "x^2+2x+1": [
        ("(x+1)^2", True),
        ("x^2+2x+1", True),
        ("1+2x+x^2", True),
        ("x^2+2x+2", False),
        ("(x-1)^2", False),
    ],
    "2x+1": [("1+2x", True), ("2x+1", True), ("2(x+\\frac{1}{2})", True), ("2x-1", False)],
    "\\frac{x}{x+1}": [
        ("\\frac{x}{x+1}", True),
        ("1-\\frac{1}{x+1}", True),
        ("\\frac{x+1}{x}", False),
    ],
    "a^2-b^2": [("(a-b)(a+b)", True), ("(a+b)(a-b)", True), ("a^2+b^2", False)],
    "3n+2": [("3n+2", True), ("2+3n", True), ("3m+2", False)],
    "\\ln 2": [("\\ln 2", True), ("\\log(2)", True), ("0.693147", True), ("\\ln 3", False)],
    # intervals
    "[1,3)": [("[1,3)", True), ("[1, 3)", True), ("(1,3)", False), ("[1,3]", False)],
    "(-\\infty, 2]": [("(-\\infty,2]", True), ("(-\\infty, 2)", False), ("[2, \\infty)", False)],
    "(0,1) \\cup (2,3)": [("(0,1)\\cup(2,3)", True), ("(2,3)\\cup(0,1)", True), ("(0,3)", False)],
    # sets and tuples
    "\\{1,2,3\\}": [
        ("\\{1,2,3\\}", True),
        ("\\{3,2,1\\}", True),
        ("\\{1,2\\}", False),
        ("1,2,3", True),
    ],
    "(1,2)": [("(1,2)", True), ("(1, 2)", True), ("(2,1)", False)],
    "(1,-2,3)": [("(1,-2,3)", True), ("(1,2,3)", False), ("(3,-2,1)", False)],
    # equations
    "x=3": [("3", True), ("x=3", True), ("x = 3", True), ("x=4", False)],
    "y=2x+1": [("y=2x+1", True), ("y=1+2x", True), ("y=2x-1", False)],
    # units (stripped by default)
    "10": [("10\\text{ cm}", True), ("10\\,\\text{m}", True), ("11\\text{ cm}", False)],
    "\\$ 5": [("5", True), ("\\$5", True), ("\\$5.00", True), ("\\$6", False)],
    # degrees
    "90^\\circ": [("90^\\circ", True), ("90", True), ("45^\\circ", False)],
}

WRAPPERS = [
    ("boxed", "The final result is therefore $\\boxed{{{}}}$."),
    ("answer_line", "Working done.\nAnswer: ${}$"),
    ("final_answer", "So the final answer is ${}$. I hope it is correct."),
]

GSM8K = [  # reference as a GSM8K row has it, completion in GSM8K style
    (
        "Natalia sold 48/2 = <<48/2=24>>24 clips in May.\n#### 72",
        "She sold 72 clips.\n#### 72",
        True,
    ),
    ("#### 72", "48 + 24 = 72, so she sold 72 clips in all.", True),
    ("#### 72", "The answer is 71.", False),
    ("#### 1,250", "The total is 1250 dollars.", True),
    ("#### 1,250", "The total is \\$1,250.", True),
    ("#### 18", "Janet makes 16 - 3 - 4 = 9 eggs a day, 9 * 2 = 18 dollars.\n#### 18", True),
    ("#### 18", "She earns $9 \\times 2 = 18$ dollars every day.", True),
    ("#### 18", "She earns 19 dollars.", False),
    ("#### 3", "It takes 2 + 1 = 3 bolts.", True),
    ("#### 3", "Answer: 2", False),
]

HACKS = [  # (reference, answer, prompt, hack)
    ("2", "\\boxed{1} \\boxed{2} \\boxed{3}", None, "several boxed"),
    ("3", "It is \\boxed{2} or maybe \\boxed{3}", None, "several boxed"),
    ("\\{1,2\\}", "\\boxed{1} and \\boxed{2}", None, "several boxed"),
    ("2", "\\boxed{1 \\text{ or } 2 \\text{ or } 3}", None, "answer list"),
    ("3", "x = 1, 2, 3, ...", None, "answer list"),
    ("3", "The answer is 1, 2, or 3.", None, "answer list"),
    ("1", "The answer is 1, 2, or 3.", None, "answer list"),
    ("2", "Answer: 1 or 2", None, "answer list"),
    ("4", "\\boxed{x = 1, 2, 3, 4, \\ldots}", None, "answer list"),
    ("7", "\\boxed{3+4}", "What is $3+4$?", "unevaluated"),
    ("1147", "\\boxed{37 \\times 31}", "Compute $37 \\times 31$.", "unevaluated"),
    ("1024", "\\boxed{2^{10}}", "What is $2^{10}$?", "unevaluated"),
    ("120", "Answer: 5!", "What is $5!$?", "unevaluated"),
    ("1000", "\\boxed{10^3}", "How many grams are in a kilogram?", "unevaluated"),
    ("72", "\\boxed{48 + 48/2}", "How many clips did Natalia sell?", "unevaluated"),
    ("2x+1", "\\boxed{(x+1)^2 - x^2}", "Simplify $(x+1)^2 - x^2$.", "unevaluated"),
    ("\\frac{1}{2}", "\\boxed{\\frac{4}{8}}", "Simplify $\\frac{4}{8}$.", "unevaluated"),
    ("7", "\\boxed{\\text{8}}", None, "text wrapper"),
    ("7", "\\boxed{\\mathrm{8}}", None, "text wrapper"),
    ("7", "\\boxed{\\text{not } 7}", None, "text wrapper"),
    ("7", "\\boxed{\\textbf{eight}}", None, "text wrapper"),
    ("7", "\\boxed{\\text{7}\\text{8}}", None, "text wrapper"),
    ("7", "\\def\\x{7}\\boxed{\\x}", None, "macro"),
    ("7", "\\newcommand{\\seven}{8}\\boxed{7}", None, "macro"),
    ("7", "\\renewcommand{\\frac}[2]{#1}\\boxed{\\frac{7}{2}}", None, "macro"),
    ("7", "\\let\\eight=7 \\boxed{7}", None, "macro"),
    ("7", "\\boxed{9^{9^{9}}}", None, "giant"),
    ("7", "\\boxed{2^{2^{2^{2^{2^{2}}}}}}", None, "giant"),
    ("7", "\\boxed{10^{10^{10}} - 10^{10^{10}} + 7}", None, "giant"),
    ("7", "\\boxed{100000!}", None, "giant"),
    ("7", "\\boxed{" + "+".join(["1"] * 600) + "}", None, "giant"),
]


def rows() -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for reference, answers in VALUES.items():
        for answer, equivalent in answers:
            for form, template in WRAPPERS:
                out.append(
                    {
                        "reference": reference,
                        "answer": template.format(answer),
                        "equivalent": equivalent,
                        "form": form,
                    }
                )
    for reference, answer, equivalent in GSM8K:
        out.append(
            {"reference": reference, "answer": answer, "equivalent": equivalent, "form": "gsm8k"}
        )
    for reference, answer, prompt, hack in HACKS:
        row: dict[str, object] = {
            "reference": reference,
            "answer": answer,
            "equivalent": False,
            "form": "hack",
            "hack": hack,
        }
        if prompt:
            row["prompt"] = prompt
        out.append(row)
    return [{"id": f"p{i:03d}", **row} for i, row in enumerate(out)]


def main() -> None:
    data = rows()
    with open(HERE / "parity.jsonl", "w") as f:
        for row in data:
            f.write(json.dumps(row) + "\n")
    print(f"wrote {len(data)} pairs to {HERE / 'parity.jsonl'}")


if __name__ == "__main__":
    main()
