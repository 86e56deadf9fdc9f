"""Pack test data: the real catalog/example files and small hand-written bundles."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from packs import services
from packs.models import PackVersion

PACKS_DIR = Path(__file__).resolve().parent.parent
LIBRARY_FILES = sorted((PACKS_DIR / "library").glob("*.yaml"))
EXAMPLE_FILES = sorted((PACKS_DIR / "tests" / "data" / "examples").glob("*.yaml"))
INVALID_EXAMPLES = {"cli-smoke-ruff.yaml"}
VALID_EXAMPLE_FILES = [f for f in EXAMPLE_FILES if f.name not in INVALID_EXAMPLES]
CORPUS_FILES = LIBRARY_FILES + VALID_EXAMPLE_FILES


def bundle_yaml(
    *, slug: str = "tiny", name: str = "Tiny pack", family: str = "reasoning", number: int = 1, cases: int = 2, tools: str = ""
) -> str:
    """A small valid prompt_eval bundle (or native with composed tools when ``tools`` is given)."""
    case_lines = "".join(
        f"""      - challenge_key: add
        case_key: case-{i}
        payload: {{a: {i}, b: 1}}
        expectations:
          - key: sum
            kind: text
            value: "{i + 1}"
"""
        for i in range(cases)
    )
    mode = "native" if tools else "prompt_eval"
    sandbox = "  sandbox:\n    network_access: false\n  tool_policy:\n    allowed_tool_kinds: [network]\n" if tools else ""
    return f"""pack:
  slug: {slug}
  name: {name}
  family: {family}
  description: A tiny pack for tests.
version:
  number: {number}
  execution_mode: {mode}
{sandbox}  evaluation_spec:
    name: tiny
    version_number: 1
    judge_mode: deterministic
    validators:
      - key: exact
        type: exact_match
        target: final_output
        expected_from: case.expectations.sum
    scorecard:
      strategy: weighted
      dimensions:
        - key: correctness
          source: validators
          validators: [exact]
          weight: 1.0
{tools}challenges:
  - key: add
    title: Add two numbers
    category: math
    difficulty: easy
    instructions: Add {{{{a}}}} and {{{{b}}}}.
input_sets:
  - key: default
    name: Default
    cases:
{case_lines}"""


MOCK_UNDER_VERSION = "  tools:\n    custom:\n      - name: ping\n        implementation: {type: mock}\n"


def warned_bundle_yaml(**kwargs: Any) -> str:
    """``bundle_yaml`` as a native pack whose mock tool (no response) sits under ``version:``: valid,
    with two warnings, ``version.tools`` (line 9) and ``version.tools.custom[0].implementation`` (line 12)."""
    return bundle_yaml(**kwargs).replace("execution_mode: prompt_eval\n", "execution_mode: native\n" + MOCK_UNDER_VERSION)


COMPOSED_TOOLS = """tools:
  custom:
    - name: lookup_weather
      description: Weather for a city.
      parameters:
        type: object
        properties:
          city: {type: string, description: City name}
        required: [city]
      implementation:
        primitive: http_request
        args:
          method: GET
          url: "https://api.example.com/weather?q=${query:city}"
          headers:
            Authorization: "Bearer ${secrets.WEATHER_API_KEY}"
"""


def publish(workspace: Any, user: Any = None, source: str | None = None, **kwargs: Any) -> PackVersion:
    return services.pack_publish(workspace=workspace, user=user, source=source or bundle_yaml(**kwargs))
