from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from engine.scoring.validators.similarity import levenshtein, similarity
from engine.tests.scoring.helpers import validate


def test_fuzzy_match_scores_similarity_and_applies_threshold():
    result = validate("fuzzy_match", "kitten", "literal:sitting", config={"threshold": 0.5})
    assert result.verdict == "pass"
    assert abs(result.normalized_score - (13 - 3) / 13) < 1e-9


def test_fuzzy_match_fails_below_threshold():
    assert validate("fuzzy_match", "abc", "literal:xyz").verdict == "fail"


def test_fuzzy_match_case_insensitive_and_normalize():
    result = validate("fuzzy_match", "  Hello   World ", "literal:hello world", config={"case_insensitive": True, "normalize": True})
    assert result.normalized_score == 1.0


def test_fuzzy_match_clamps_threshold_and_rejects_unknown_keys():
    assert validate("fuzzy_match", "a", "literal:a", config={"threshold": 7}).verdict == "pass"
    assert validate("fuzzy_match", "a", "literal:a", config={"tolerance": 1}).outcome_class == "pack_error"


@given(st.text(max_size=20), st.text(max_size=20))
def test_similarity_is_symmetric_and_bounded(a, b):
    assert similarity(a, b) == similarity(b, a)
    assert 0.0 <= similarity(a, b) <= 1.0
    assert levenshtein(a, a) == 0


def test_normalized_match_default_pipeline_trims_lowercases_and_collapses():
    assert validate("normalized_match", "  The   ANSWER ", "literal:the answer").verdict == "pass"


def test_normalized_match_custom_pipeline_steps():
    config = {"pipeline": ["strip_currency", "strip_formatting", "trim"]}
    assert validate("normalized_match", "$1,000 ", "literal:1000", config=config).verdict == "pass"
    config = {"normalizations": ["lowercase", "remove_articles", "collapse_whitespace", "trim", "sort_words"]}
    assert validate("normalized_match", "The cat a dog", "literal:dog cat", config=config).verdict == "pass"
    config = {"pipeline": ["strip_punctuation", "normalize_unicode"]}
    assert validate("normalized_match", "ﬁne!", "literal:fine", config=config).verdict == "pass"
    assert validate("normalized_match", "b\na", "literal:a\nb", config={"pipeline": ["sort_lines"]}).verdict == "pass"


def test_normalized_match_rejects_mixing_pipeline_and_normalizations():
    result = validate("normalized_match", "a", "literal:a", config={"pipeline": ["trim"], "normalizations": ["trim"]})
    assert result.outcome_class == "pack_error"


def test_normalized_match_rejects_unknown_steps():
    assert validate("normalized_match", "a", "literal:a", config={"pipeline": ["shout"]}).outcome_class == "pack_error"


def test_numeric_match_without_tolerance_is_exact():
    assert validate("numeric_match", " 42 ", "literal:42.0").verdict == "pass"
    assert validate("numeric_match", "42.0001", "literal:42").verdict == "fail"


def test_numeric_match_absolute_and_relative_tolerances():
    assert validate("numeric_match", "10.4", "literal:10", config={"absolute_tolerance": 0.5}).verdict == "pass"
    assert validate("numeric_match", "10.4", "literal:10", config={"relative_tolerance": 0.01}).verdict == "fail"
    assert validate("numeric_match", "10.05", "literal:10", config={"relative_tolerance": 0.01}).verdict == "pass"


def test_numeric_match_relative_tolerance_against_zero_is_exact_only():
    assert validate("numeric_match", "0.0001", "literal:0", config={"relative_tolerance": 0.5}).verdict == "fail"


def test_numeric_match_legacy_config_defaults_to_relative():
    assert validate("numeric_match", "1000.5", "literal:1000", config={"tolerance": 0.001}).verdict == "pass"
    assert validate("numeric_match", "1.5", "literal:1", config={"tolerance_mode": "absolute", "tolerance": 0.6}).verdict == "pass"


def test_numeric_match_extracts_numbers_from_currency_text():
    assert validate("numeric_match", "Total: $1,234.50 USD", "literal:1234.5", config={"extract_number": True}).verdict == "pass"


def test_numeric_match_rounds_to_significant_digits():
    assert validate("numeric_match", "3.14159", "literal:3.14", config={"significant_digits": 3}).verdict == "pass"


def test_numeric_match_fails_on_non_numeric_output_and_errors_on_mixed_config():
    assert validate("numeric_match", "many", "literal:3").verdict == "fail"
    result = validate("numeric_match", "3", "literal:3", config={"tolerance": 0.1, "absolute_tolerance": 1})
    assert result.outcome_class == "pack_error"
    assert validate("numeric_match", "3", "literal:three").outcome_class == "pack_error"
