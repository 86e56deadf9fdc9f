"""The publish errors and warnings of issues 22 and 26 reach authors where existing ones do: the
editor's Validate (errors with their lines, Publish disabled; warnings beside them), the API's
validate and publish answers, and the published version's page."""

from __future__ import annotations

import pytest
from django.urls import reverse

from packs.models import Pack, PackVersion
from packs.tests.factories import bundle_yaml

API = "/api/v1/workspaces/acme/packs"

EXEC_WITH_SECRET = """tools:
  custom:
    - name: curl
      parameters: {type: object, properties: {url: {type: string}}}
      implementation:
        primitive: exec
        args:
          command: [curl, -H, "Authorization: Bearer ${secrets.API_KEY}", "${url}"]
"""
NEVER_PASSES = """      - key: shape
        type: json_schema
        target: final_output
        expected_from: 'literal:{"type": "object"}'
      - key: word
        type: normalized_match
        target: final_output
        expected_from: literal:confidence
    scorecard:"""


def refused_source() -> str:
    """A native pack that passes a secret to exec and puts one in a sandbox env var."""
    env = '    network_access: false\n    env_vars:\n      TOKEN: "${secrets.API_KEY}"\n'
    return bundle_yaml(tools=EXEC_WITH_SECRET).replace("    network_access: false\n", env, 1)


def warned_source() -> str:
    """A valid pack whose JSON validator and one-word validator can never both pass."""
    return bundle_yaml().replace("    scorecard:", NEVER_PASSES, 1)


def line_of(source: str, text: str) -> int:
    return next(n for n, line in enumerate(source.splitlines(), start=1) if text in line)


def test_the_editor_shows_run_time_rules_as_errors_with_their_lines_and_keeps_publish_disabled(client_for, member):
    source = refused_source()
    response = client_for(member).post(reverse("packs:new", args=["acme"]), {"yaml": source, "action": "validate"}, HTTP_HX_REQUEST="true")
    page = response.content.decode()
    problems = page.split('class="editor-errors"')[1].split("</ul>")[0]
    assert "2 problems" in problems
    assert f'data-line="{line_of(source, "command: [curl")}"' in problems
    assert "<code>tools.custom[0].implementation.args.command[2]</code> ${secrets.API_KEY} may only be passed to the http_request" in (
        problems
    )
    assert f'data-line="{line_of(source, "TOKEN:")}"' in problems
    assert "<code>version.sandbox.env_vars[TOKEN]</code> cannot carry secrets" in problems
    assert "disabled" in page.split('id="publish-button"')[1].split(">")[0]
    assert not Pack.objects.exists()


def test_the_api_refuses_them_with_field_paths_and_lines(api_client_for, member):
    source = refused_source()
    for action in ("validate", "publish"):
        response = api_client_for(member).generic("POST", f"{API}/{action}", source.encode(), content_type="text/yaml")
        assert response.status_code == 400
        assert [(e["field"], e["line"]) for e in response.json()["errors"]] == [
            ("tools.custom[0].implementation.args.command[2]", line_of(source, "command: [curl")),
            ("version.sandbox.env_vars[TOKEN]", line_of(source, "TOKEN:")),
        ]
    assert not Pack.objects.exists()


def test_never_passing_checks_are_warned_about_in_the_editor_and_on_the_version_page(client_for, member):
    source = warned_source()
    client = client_for(member)
    page = client.post(reverse("packs:new", args=["acme"]), {"yaml": source, "action": "validate"}, HTTP_HX_REQUEST="true")
    warnings = page.content.decode().split('id="editor-warnings"')[1]
    assert f'data-line="{line_of(source, "literal:confidence")}"' in warnings
    assert "the two can never pass together" in warnings
    assert f'data-line="{line_of(source, "scorecard:")}"' in warnings
    assert "no case of this pack can pass" in warnings
    response = client.post(reverse("packs:new", args=["acme"]), {"yaml": source, "action": "publish"}, follow=True)
    version = PackVersion.objects.get()
    section = response.content.decode().split('id="warnings"')[1].split("</section>")[0]
    assert f"line {line_of(source, 'scorecard:')}" in section and "no case of this pack can pass" in section
    assert [w["path"] for w in version.warnings] == [
        "version.evaluation_spec.validators[2].expected_from",
        "version.evaluation_spec.scorecard",
    ]


@pytest.mark.parametrize("action", ["validate", "publish"])
def test_the_api_answers_carry_the_new_warnings(api_client_for, member, action):
    source = warned_source()
    response = api_client_for(member).generic("POST", f"{API}/{action}", source.encode(), content_type="text/yaml")
    assert response.status_code in (200, 201)
    assert [(w["path"], w["line"]) for w in response.json()["warnings"]] == [
        ("version.evaluation_spec.validators[2].expected_from", line_of(source, "literal:confidence")),
        ("version.evaluation_spec.scorecard", line_of(source, "scorecard:")),
    ]


BAD_JSON_PATHS = """      - key: literal_path
        type: json_path_match
        target: final_output
        expected_from: 'literal:{"path": "$.items[0.id", "comparator": "equals", "value": 1}'
      - key: case_path
        type: json_path_match
        target: final_output
        expected_from: case.expectations.where
      - key: good_path
        type: json_path_match
        target: final_output
        expected_from: "literal:$.items[0]['odd key'].id"
    scorecard:"""


def test_a_json_path_the_scorer_cannot_read_is_a_publish_error_with_its_field_and_line(api_client_for, member):
    source = bundle_yaml(cases=2).replace("    scorecard:", BAD_JSON_PATHS, 1)
    source = source.replace(
        '            value: "1"\n', '            value: "1"\n          - key: where\n            kind: text\n            value: "$..sum"\n'
    )
    source = source.replace(
        '            value: "2"\n', '            value: "2"\n          - key: where\n            kind: text\n            value: "$.sum"\n'
    )
    response = api_client_for(member).generic("POST", f"{API}/publish", source.encode(), content_type="text/yaml")
    assert response.status_code == 400, response.json()
    errors = response.json()["errors"]
    assert [(e["field"], e["line"]) for e in errors] == [
        ("version.evaluation_spec.validators[1].expected_from", line_of(source, "$.items[0.id")),
        ("input_sets[0].cases[0].expectations[1].value", line_of(source, '"$..sum"')),
    ]
    assert "is not a JSON path the scorer reads (unsupported JSON path syntax at '[0.id')" in errors[0]["message"]
    assert "like $.name, $.items[0] or $['odd key']" in errors[0]["message"]
    assert not Pack.objects.exists()
    fixed = source.replace("$.items[0.id", "$.items[0].id").replace('"$..sum"', '"$.sum"')
    assert api_client_for(member).generic("POST", f"{API}/publish", fixed.encode(), content_type="text/yaml").status_code == 201


def test_a_postcondition_json_path_is_checked_at_publish():
    from packs.services import PackInvalid, bundle_validate

    check = """      - key: saved
        type: postcondition
        target: file:report
        config: {condition: json_path_match, json_path: "items.0", value: 1}
    scorecard:"""
    source = bundle_yaml(cases=1).replace("    scorecard:", check, 1)
    with pytest.raises(PackInvalid) as caught:
        bundle_validate(source)
    fields = {e["field"]: e["message"] for e in caught.value.errors}
    assert "must start with $" in fields["version.evaluation_spec.validators[1].config.json_path"]
