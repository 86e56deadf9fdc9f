"""Schemathesis over every operation of the API, with every check, against the app in-process
(WSGI): no 500, every answer's status, content type, headers and body as the schema says.

Bounded for CI (``SCHEMATHESIS_MAX_EXAMPLES``, default 10 per operation). Runs as an admin of
workspace ``acme`` (the generated ``workspace_slug`` is set to it, so requests get past the 404
and reach the views). Needs the ``schemathesis`` package (requirements-dev); skipped without it.
"""

from __future__ import annotations

import os

import pytest
from django.core.wsgi import get_wsgi_application

schemathesis = pytest.importorskip("schemathesis")
hypothesis = pytest.importorskip("hypothesis")

from schemathesis.specs.openapi.checks import positive_data_acceptance  # noqa: E402

from workspaces.models import Role  # noqa: E402
from workspaces.services import api_token_create  # noqa: E402
from workspaces.tests.factories import add_member, make_user, make_workspace  # noqa: E402

MAX_EXAMPLES = int(os.environ.get("SCHEMATHESIS_MAX_EXAMPLES", "10"))

# A request of the right shape can still break a rule of the domain (an id that names nothing here
# is a 404, a duplicate name a 409, a deployment that cannot run a 400 naming the field, a staff-only
# write a 403, a file whose bytes are not an accepted type a 415): those answers are accepted for
# schema-valid data; a 500, or a 2xx for malformed data, never is.
CONFIG = schemathesis.config.SchemathesisConfig.from_dict(
    {"checks": {"positive_data_acceptance": {"expected-statuses": ["2xx", "400", "403", "404", "409", "413", "415"]}}}
)
schema = schemathesis.openapi.from_wsgi("/api/schema/", get_wsgi_application(), config=CONFIG)

pytestmark = [pytest.mark.slow]


@pytest.fixture
def bearer(django_db_blocker, settings):
    # Throttles off: the fuzzer sends thousands of requests, hundreds with a bad token from one
    # address, whose 429s (core/tests/test_throttling.py) would hide the answers under test.
    rates = {**settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], "token_auth_failure": None}
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_CLASSES": [], "DEFAULT_THROTTLE_RATES": rates}
    with django_db_blocker.unblock():
        workspace = make_workspace("acme", "Acme")
        user = make_user("fuzzer")
        add_member(workspace, user, Role.ADMIN)
        _, raw = api_token_create(user=user, name="fuzz")
    return {"Authorization": f"Bearer {raw}"}


@pytest.mark.django_db(transaction=True)
@schema.parametrize()
@hypothesis.settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    suppress_health_check=list(hypothesis.HealthCheck),
    derandomize=True,
)
def test_every_operation_answers_as_the_schema_says(case, bearer):
    if "workspace_slug" in (case.path_parameters or {}):
        case.path_parameters["workspace_slug"] = "acme"
    # The callback takes only a case's own token, which the fuzzer cannot have: every well-formed
    # message is a 401 there (runs/tests/test_hosted_callback.py covers it with real tokens).
    excluded = [positive_data_acceptance] if case.path.startswith("/hooks/") else None
    case.call_and_validate(headers=bearer, excluded_checks=excluded)
