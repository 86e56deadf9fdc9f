"""Text-overlap scores: token_f1, bleu_score, rouge_score, chrf_score."""

from __future__ import annotations

import json
import math
from collections import Counter
from typing import Any

from engine.scoring.validators.base import (
    Outcome,
    PackError,
    ValidatorCall,
    config_bool,
    config_float,
    register,
    strict_keys,
)
from engine.scoring.validators.textnorm import (
    collapse_whitespace,
    remove_articles,
    simple_normalize,
    strip_punctuation,
)

METHOD1_EPSILON = 0.1


def token_f1_score(prediction: list[str], truth: list[str]) -> float:
    if not prediction and not truth:
        return 1.0
    if not prediction or not truth:
        return 0.0
    same = sum((Counter(prediction) & Counter(truth)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(prediction), same / len(truth)
    return 2 * precision * recall / (precision + recall)


@register("token_f1")
def token_f1(call: ValidatorCall) -> Outcome:
    config = call.config
    strict_keys(config, {"threshold", "normalize", "remove_articles", "remove_punctuation"})
    threshold = config_float(config, "threshold", 0.5, lo=0.0, hi=1.0)
    flags = {name: config_bool(config, name) for name in ("normalize", "remove_articles", "remove_punctuation")}

    def prepare(text: str) -> list[str]:
        if flags["normalize"]:
            text = text.casefold()
        if flags["remove_punctuation"]:
            text = strip_punctuation(text)
        if flags["remove_articles"]:
            text = remove_articles(text)
        if any(flags.values()):
            text = collapse_whitespace(text).strip()
        return text.split()

    actual, expected = call.actual(), call.expected()
    score = token_f1_score(prepare(actual), prepare(expected))
    return Outcome(score >= threshold, score, f"token F1 {score:.3f} (threshold {threshold:g})", expected, actual)


def references_of(expected: str) -> list[str]:
    """``expected`` may be a JSON array of reference strings."""
    stripped = expected.strip()
    if stripped.startswith("["):
        try:
            parsed = json.loads(stripped)
        except ValueError:
            return [expected]
        if isinstance(parsed, list) and parsed and all(isinstance(r, str) for r in parsed):
            return parsed
    return [expected]


def ngrams(tokens: list[str] | str, n: int) -> Counter[tuple[str, ...]]:
    return Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))


def bleu(candidate: list[str], references: list[list[str]], max_ngram: int, smoothing: str) -> float:
    if not candidate:
        return 0.0
    orders = min(max_ngram, len(candidate))
    log_sum = 0.0
    for n in range(1, orders + 1):
        counts = ngrams(candidate, n)
        max_ref: Counter[tuple[str, ...]] = Counter()
        for ref in references:
            max_ref |= ngrams(ref, n)
        clipped = sum(min(c, max_ref[g]) for g, c in counts.items())
        total = sum(counts.values())
        if clipped == 0:
            if smoothing != "method1":
                return 0.0
            log_sum += math.log(METHOD1_EPSILON / total)
        else:
            log_sum += math.log(clipped / total)
    c = len(candidate)
    r = min((abs(len(ref) - c), len(ref)) for ref in references)[1]
    brevity = 1.0 if c > r else math.exp(1 - r / c)
    return brevity * math.exp(log_sum / orders)


def _common(call: ValidatorCall, allowed: set[str]) -> tuple[str, str, float, bool, bool]:
    strict_keys(call.config, allowed)
    threshold = config_float(call.config, "threshold", 0.3, lo=0.0, hi=1.0)
    return (call.actual(), call.expected(), threshold, config_bool(call.config, "case_insensitive"), config_bool(call.config, "normalize"))


def _positive_int(config: dict[str, Any], name: str, default: int) -> int:
    value = config.get(name, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise PackError(f"config.{name} must be greater than 0")
    return value


@register("bleu_score")
def bleu_score(call: ValidatorCall) -> Outcome:
    actual, expected, threshold, ci, norm = _common(call, {"threshold", "max_ngram", "smoothing", "case_insensitive", "normalize"})
    max_ngram = _positive_int(call.config, "max_ngram", 4)
    smoothing = call.config.get("smoothing") or "none"
    if smoothing not in ("none", "method1"):
        raise PackError('config.smoothing must be "none" or "method1"')
    refs = [simple_normalize(r, case_insensitive=ci, normalize=norm).split() for r in references_of(expected)]
    score = bleu(simple_normalize(actual, case_insensitive=ci, normalize=norm).split(), refs, max_ngram, smoothing)
    return Outcome(score >= threshold, score, f"BLEU {score:.3f} (threshold {threshold:g})", expected, actual)


def f_beta(precision: float, recall: float, beta: float) -> float:
    if precision == 0 or recall == 0:
        return 0.0
    b2 = beta * beta
    return (1 + b2) * precision * recall / (recall + b2 * precision)


def lcs_length(a: list[str], b: list[str]) -> int:
    previous = [0] * (len(b) + 1)
    for x in a:
        current = [0]
        for j, y in enumerate(b, 1):
            current.append(previous[j - 1] + 1 if x == y else max(previous[j], current[j - 1]))
        previous = current
    return previous[-1]


def rouge(candidate: list[str], reference: list[str], variant: str, beta: float) -> float:
    if not candidate and not reference:
        return 1.0
    if variant == "rouge-l":
        overlap, cand_total, ref_total = lcs_length(candidate, reference), len(candidate), len(reference)
    else:
        n = 1 if variant == "rouge-1" else 2
        cand, ref = ngrams(candidate, n), ngrams(reference, n)
        overlap, cand_total, ref_total = sum((cand & ref).values()), sum(cand.values()), sum(ref.values())
    if not cand_total or not ref_total:
        return 0.0
    return f_beta(overlap / cand_total, overlap / ref_total, beta)


@register("rouge_score")
def rouge_score(call: ValidatorCall) -> Outcome:
    actual, expected, threshold, ci, norm = _common(call, {"threshold", "variant", "beta", "case_insensitive", "normalize"})
    variant = call.config.get("variant") or "rouge-l"
    if variant not in ("rouge-1", "rouge-2", "rouge-l"):
        raise PackError('config.variant must be "rouge-1", "rouge-2", or "rouge-l"')
    beta = config_float(call.config, "beta", 1.0, lo=1e-12, hi=math.inf)
    cand = simple_normalize(actual, case_insensitive=ci, normalize=norm).split()
    score = max(
        rouge(cand, simple_normalize(r, case_insensitive=ci, normalize=norm).split(), variant, beta) for r in references_of(expected)
    )
    return Outcome(score >= threshold, score, f"{variant.upper()} {score:.3f} (threshold {threshold:g})", expected, actual)


def chrf(candidate: str, reference: str, char_order: int, beta: float) -> float:
    hyp, ref = "".join(candidate.split()), "".join(reference.split())
    if not hyp and not ref:
        return 1.0
    precisions, recalls = [], []
    for n in range(1, char_order + 1):
        h, r = ngrams(hyp, n), ngrams(ref, n)
        if not h or not r:
            continue  # only orders both sides can have count (sacreBLEU's "effective order")
        overlap = sum((h & r).values())
        precisions.append(overlap / sum(h.values()))
        recalls.append(overlap / sum(r.values()))
    if not precisions:
        return 0.0
    return f_beta(sum(precisions) / len(precisions), sum(recalls) / len(recalls), beta)


@register("chrf_score")
def chrf_score(call: ValidatorCall) -> Outcome:
    actual, expected, threshold, ci, norm = _common(call, {"threshold", "char_order", "beta", "case_insensitive", "normalize"})
    char_order = _positive_int(call.config, "char_order", 6)
    beta = config_float(call.config, "beta", 2.0, lo=1e-12, hi=math.inf)
    cand = simple_normalize(actual, case_insensitive=ci, normalize=norm)
    score = max(chrf(cand, simple_normalize(r, case_insensitive=ci, normalize=norm), char_order, beta) for r in references_of(expected))
    return Outcome(score >= threshold, score, f"chrF {score:.3f} (threshold {threshold:g})", expected, actual)
