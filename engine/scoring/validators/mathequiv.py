"""math_equivalence: compare final answers as small algebraic expressions (runtime.md §5.4).

Expressions are normalised from LaTeX/unicode, parsed into a tiny AST, and compared as
canonical polynomials with rational coefficients; anything outside that algebra (sqrt,
fractional powers, division by a symbol) falls back to numeric evaluation when allowed.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Any

from engine.scoring.validators.base import (
    EvaluatorError,
    Outcome,
    PackError,
    ValidatorCall,
    binary,
    config_bool,
    config_float,
    register,
    strict_keys,
)

TOKEN = re.compile(r"\s*(?:(\d+\.?\d*|\.\d+)|([A-Za-z]+)|(.))")
LATEX_WRAPPERS = ("\\boxed", "\\text", "\\mathrm")


class NotParsable(Exception):
    pass


class NotSymbolic(Exception):
    pass


def _replace_braced(text: str, command: str, arity: int, template: str) -> str:
    while True:
        start = text.find(command + "{")
        if start < 0:
            return text
        args, pos = [], start + len(command)
        for _ in range(arity):
            if pos >= len(text) or text[pos] != "{":
                return text
            depth, end = 0, pos
            while end < len(text):
                depth += {"{": 1, "}": -1}.get(text[end], 0)
                if depth == 0:
                    break
                end += 1
            args.append(text[pos + 1 : end])
            pos = end + 1
        text = text[:start] + template.format(*args) + text[pos:]


def normalise(text: str) -> str:
    text = text.strip().replace("$", "")
    for wrapper in LATEX_WRAPPERS:
        text = _replace_braced(text, wrapper, 1, "({0})")
    for frac in ("\\dfrac", "\\tfrac", "\\frac"):
        text = _replace_braced(text, frac, 2, "(({0})/({1}))")
    text = _replace_braced(text, "\\sqrt", 1, "sqrt({0})")
    for old, new in (
        ("\\left", ""),
        ("\\right", ""),
        ("\\cdot", "*"),
        ("\\times", "*"),
        ("×", "*"),
        ("\\div", "/"),
        ("÷", "/"),
        ("−", "-"),
        ("\\pi", "pi"),
        (",", ""),
        ("{", "("),
        ("}", ")"),
        ("\\", ""),
        ("**", "^"),
    ):
        text = text.replace(old, new)
    if "=" in text:
        text = text.rsplit("=", 1)[1]
    return text.strip().rstrip(".").strip()


def tokenize(text: str) -> list[tuple[str, str]]:
    tokens: list[tuple[str, str]] = []
    for number, name, other in TOKEN.findall(text):
        if number:
            tokens.append(("num", number))
        elif name:
            tokens.append(("name", name))
        elif other.strip():
            if other not in "+-*/^()":
                raise NotParsable(f"unexpected character {other!r}")
            tokens.append(("op", other))
    # implicit multiplication: 2x, 2(x), )(, x(…) for non-functions
    out: list[tuple[str, str]] = []
    for token in tokens:
        if out:
            prev = out[-1]
            prev_value_end = prev[0] in ("num", "name") or prev == ("op", ")")
            starts_value = token[0] in ("num", "name") or token == ("op", "(")
            if prev_value_end and starts_value and not (prev == ("name", "sqrt") and token == ("op", "(")):
                out.append(("op", "*"))
        out.append(token)
    return out


# An expression tree: ("num", Fraction), ("sym", name) or (operator, operand, …).
Node = tuple[Any, ...]


class Parser:
    def __init__(self, text: str):
        self.tokens = tokenize(text)
        self.pos = 0
        if not self.tokens:
            raise NotParsable("empty expression")

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self) -> tuple[str, str]:
        token = self.peek()
        if token is None:
            raise NotParsable("unexpected end of expression")
        self.pos += 1
        return token

    def parse(self) -> Node:
        node = self.expr()
        extra = self.peek()
        if extra is not None:
            raise NotParsable(f"unexpected token {extra[1]!r}")
        return node

    def expr(self) -> Node:
        node = self.term()
        while self.peek() in (("op", "+"), ("op", "-")):
            op = self.take()[1]
            node = ("add" if op == "+" else "sub", node, self.term())
        return node

    def term(self) -> Node:
        node = self.unary()
        while self.peek() in (("op", "*"), ("op", "/")):
            op = self.take()[1]
            node = ("mul" if op == "*" else "div", node, self.unary())
        return node

    def unary(self) -> Node:
        if self.peek() in (("op", "-"), ("op", "+")):
            sign = self.take()[1]
            operand = self.unary()
            return ("neg", operand) if sign == "-" else operand
        return self.power()

    def power(self) -> Node:
        base = self.atom()
        if self.peek() == ("op", "^"):
            self.take()
            return ("pow", base, self.unary())
        return base

    def atom(self) -> Node:
        kind, value = self.take()
        if kind == "num":
            return ("num", Fraction(value))
        if kind == "name":
            if value == "sqrt":
                if self.take() != ("op", "("):
                    raise NotParsable("sqrt needs parentheses")
                inner = self.expr()
                if self.take() != ("op", ")"):
                    raise NotParsable("unbalanced parentheses")
                return ("sqrt", inner)
            return ("sym", value)
        if value == "(":
            inner = self.expr()
            if self.take() != ("op", ")"):
                raise NotParsable("unbalanced parentheses")
            return inner
        raise NotParsable(f"unexpected token {value!r}")


Monomial = tuple[tuple[str, int], ...]  # (symbol, exponent) pairs, sorted
Poly = dict[Monomial, Fraction]


def _poly_mul(a: Poly, b: Poly) -> Poly:
    out: Poly = {}
    for ma, ca in a.items():
        for mb, cb in b.items():
            powers = dict(ma)
            for sym, exp in mb:
                powers[sym] = powers.get(sym, 0) + exp
            mono = tuple(sorted(powers.items()))
            out[mono] = out.get(mono, Fraction(0)) + ca * cb
    return {m: c for m, c in out.items() if c != 0}


def _poly_add(a: Poly, b: Poly, sign: int = 1) -> Poly:
    out = dict(a)
    for mono, coef in b.items():
        out[mono] = out.get(mono, Fraction(0)) + sign * coef
    return {m: c for m, c in out.items() if c != 0}


def symbolic(node: Node) -> Poly:
    kind = node[0]
    if kind == "num":
        return {(): node[1]} if node[1] != 0 else {}
    if kind == "sym":
        return {((node[1], 1),): Fraction(1)}
    if kind == "neg":
        return {m: -c for m, c in symbolic(node[1]).items()}
    if kind in ("add", "sub"):
        return _poly_add(symbolic(node[1]), symbolic(node[2]), 1 if kind == "add" else -1)
    if kind == "mul":
        return _poly_mul(symbolic(node[1]), symbolic(node[2]))
    if kind == "div":
        divisor = symbolic(node[2])
        if set(divisor) - {()} or not divisor:
            raise NotSymbolic("division by a non-constant")
        return {m: c / divisor[()] for m, c in symbolic(node[1]).items()}
    if kind == "pow":
        exponent = symbolic(node[2])
        if set(exponent) - {()}:
            raise NotSymbolic("symbolic exponent")
        power = exponent.get((), Fraction(0))
        if power.denominator != 1 or power < 0 or power > 64:
            raise NotSymbolic("non-integer exponent")
        result: Poly = {(): Fraction(1)}
        base = symbolic(node[1])
        for _ in range(int(power)):
            result = _poly_mul(result, base)
        return result
    raise NotSymbolic(f"{kind} is not symbolic")


def numeric(node: Node) -> float:
    kind = node[0]
    if kind == "num":
        return float(node[1])
    if kind == "sym":
        if node[1] in ("pi", "e"):
            return math.pi if node[1] == "pi" else math.e
        raise NotParsable(f"symbol {node[1]!r} has no numeric value")
    if kind == "neg":
        return -numeric(node[1])
    if kind == "sqrt":
        return math.sqrt(numeric(node[1]))
    a, b = numeric(node[1]), numeric(node[2])
    if kind == "add":
        return a + b
    if kind == "sub":
        return a - b
    if kind == "mul":
        return a * b
    if kind == "div":
        return a / b
    return float(a**b)


def canonical(poly: Poly) -> str:
    return " + ".join(f"{c}*{'*'.join(f'{s}^{e}' for s, e in m) or '1'}" for m, c in sorted(poly.items())) or "0"


def extract_answer(text: str, delimiter: str) -> str:
    return text.rsplit(delimiter, 1)[1] if delimiter and delimiter in text else text


@register("math_equivalence")
def math_equivalence(call: ValidatorCall) -> Outcome:
    config = call.config
    strict_keys(config, {"extract_answer", "answer_delimiter", "comparison_mode", "numeric_fallback", "tolerance"})
    mode = config.get("comparison_mode") or "symbolic"
    if mode not in ("symbolic", "numeric"):
        raise PackError('config.comparison_mode must be "symbolic" or "numeric"')
    tolerance = config_float(config, "tolerance", 1e-6, lo=0.0, hi=math.inf)
    fallback = config_bool(config, "numeric_fallback", True)
    actual_raw, expected_raw = call.actual(), call.expected()
    actual_text = actual_raw
    if config_bool(config, "extract_answer"):
        actual_text = extract_answer(actual_raw, str(config.get("answer_delimiter") or "####"))
    try:
        expected_ast = Parser(normalise(expected_raw)).parse()
    except (NotParsable, ZeroDivisionError, OverflowError) as exc:
        raise PackError(f"expected answer is not parsable: {exc}") from exc
    try:
        actual_ast = Parser(normalise(actual_text)).parse()
    except NotParsable as exc:
        raise EvaluatorError(f"answer is not parsable: {exc}") from exc
    if mode == "symbolic":
        try:
            a, e = canonical(symbolic(actual_ast)), canonical(symbolic(expected_ast))
            return binary(a == e, f"canonical forms {a!r} vs {e!r}", expected_raw, actual_text)
        except (NotSymbolic, ZeroDivisionError):
            if not fallback:
                raise EvaluatorError("expression is outside the symbolic subset and numeric_fallback is off") from None
    try:
        a_num, e_num = numeric(actual_ast), numeric(expected_ast)
    except (NotParsable, ZeroDivisionError, OverflowError, ValueError) as exc:
        raise EvaluatorError(f"numeric evaluation failed: {exc}") from exc
    passed = abs(a_num - e_num) <= tolerance
    return binary(passed, f"numeric {a_num:g} vs {e_num:g} (tolerance {tolerance:g})", expected_raw, actual_text)
