from __future__ import annotations

import json

from engine.scoring.validators.overlap import bleu, chrf, rouge
from engine.tests.scoring.helpers import validate


def test_token_f1_is_squad_style():
    result = validate("token_f1", "the cat sat", "literal:the cat sat down")
    assert abs(result.normalized_score - 2 * (1 * 0.75) / 1.75) < 1e-9
    assert result.verdict == "pass"


def test_token_f1_flags_normalise_before_scoring():
    config = {"normalize": True, "remove_articles": True, "remove_punctuation": True}
    assert validate("token_f1", "The Cat!", "literal:cat", config=config).normalized_score == 1.0


def test_token_f1_empty_sides():
    # An answer with no tokens against a reference with none agrees...
    config = {"normalize": True, "remove_punctuation": True}
    assert validate("token_f1", "!!!", "literal:", config=config).normalized_score == 1.0
    assert validate("token_f1", "!!!", "literal:x", config=config).normalized_score == 0.0
    # ...but an empty answer is no answer: the agent did not deliver (issue 22), whatever the reference.
    empty = validate("token_f1", "", "literal:")
    assert (empty.normalized_score, empty.verdict) == (0.0, "fail") and "final output is empty" in empty.reason


def test_token_f1_rejects_out_of_range_threshold():
    assert validate("token_f1", "a", "literal:a", config={"threshold": 2}).outcome_class == "pack_error"


def test_bleu_is_one_for_an_identical_sentence_and_zero_without_overlap():
    assert abs(bleu("a b c d e".split(), ["a b c d e".split()], 4, "none") - 1.0) < 1e-9
    assert bleu("x y z".split(), ["a b c".split()], 4, "none") == 0.0


def test_bleu_method1_smoothing_gives_partial_credit():
    assert 0 < bleu("a b x y".split(), ["a b c d".split()], 4, "method1") < 1


def test_bleu_score_accepts_a_json_array_of_references():
    refs = json.dumps(["completely different", "the quick brown fox"])
    assert validate("bleu_score", "the quick brown fox", "literal:" + refs).normalized_score > 0.99


def test_bleu_score_rejects_unknown_smoothing():
    assert validate("bleu_score", "a", "literal:a", config={"smoothing": "method7"}).outcome_class == "pack_error"


def test_rouge_variants():
    assert rouge("a b c".split(), "a b c".split(), "rouge-1", 1.0) == 1.0
    assert rouge("a c".split(), "a b c".split(), "rouge-2", 1.0) == 0.0
    assert abs(rouge("a c".split(), "a b c".split(), "rouge-l", 1.0) - 0.8) < 1e-9


def test_rouge_score_picks_the_best_reference_and_rejects_bad_variant():
    refs = json.dumps(["nothing here", "a b c"])
    assert validate("rouge_score", "a b c", "literal:" + refs).normalized_score == 1.0
    assert validate("rouge_score", "a", "literal:a", config={"variant": "rouge-9"}).outcome_class == "pack_error"


def test_chrf_ignores_whitespace_and_scores_partial_overlap():
    assert chrf("ab c", "abc", 6, 2.0) == 1.0
    assert 0 < chrf("abcd", "abxy", 6, 2.0) < 1


def test_chrf_score_threshold_and_bad_config():
    assert validate("chrf_score", "hello world", "literal:hello world").verdict == "pass"
    assert validate("chrf_score", "a", "literal:a", config={"char_order": 0}).outcome_class == "pack_error"
