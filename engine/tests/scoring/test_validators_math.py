from __future__ import annotations

from engine.tests.scoring.helpers import validate


def test_math_equivalence_matches_equal_polynomials():
    assert validate("math_equivalence", "2x + x*2", "literal:4*x").verdict == "pass"
    assert validate("math_equivalence", "(x+1)^2", "literal:x^2 + 2x + 1").verdict == "pass"


def test_math_equivalence_normalises_latex():
    assert validate("math_equivalence", "$\\boxed{\\frac{1}{2}}$", "literal:0.5").verdict == "pass"
    assert validate("math_equivalence", "3 \\times 4", "literal:12").verdict == "pass"
    assert validate("math_equivalence", "−3", "literal:-3").verdict == "pass"


def test_math_equivalence_falls_back_to_numeric_for_square_roots():
    assert validate("math_equivalence", "\\sqrt{2}", "literal:1.41421356").verdict == "pass"
    assert validate("math_equivalence", "\\sqrt{2}", "literal:1.41").verdict == "fail"
    result = validate("math_equivalence", "\\sqrt{4}", "literal:2")
    assert result.verdict == "pass"


def test_math_equivalence_extracts_the_answer_after_the_delimiter():
    output = "Work: 6*7 = 42\n#### 42"
    assert validate("math_equivalence", output, "literal:42", config={"extract_answer": True}).verdict == "pass"


def test_math_equivalence_numeric_mode_uses_tolerance():
    config = {"comparison_mode": "numeric", "tolerance": 0.01}
    assert validate("math_equivalence", "3.14159", "literal:3.14", config=config).verdict == "pass"


def test_math_equivalence_unequal_answers_fail():
    assert validate("math_equivalence", "43", "literal:42").verdict == "fail"


def test_math_equivalence_parse_failures_are_errors():
    assert validate("math_equivalence", "forty two!", "literal:42").outcome_class == "evaluator_error"
    assert validate("math_equivalence", "42", "literal:(((").outcome_class == "pack_error"
    assert validate("math_equivalence", "42", "literal:42", config={"comparison_mode": "vibes"}).outcome_class == "pack_error"
