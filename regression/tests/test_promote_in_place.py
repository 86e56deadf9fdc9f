"""The flywheel (issue 25, item 5): promote without leaving the page, several at once, never twice
(even when two promotes race), no Promote on a promoted case, clusters named in words, and a
suite's New run that starts from its pack and suite."""

from __future__ import annotations

import re
from unittest import mock

import pytest
from django.db import IntegrityError, transaction

from regression import services
from regression.models import RegressionCase, RegressionSuite
from regression.tests import test_failures
from regression.tests.test_failures import WRONG_TITLE, case

pytestmark = pytest.mark.django_db

race = test_failures.race  # the fixture: lane-0 right everywhere, lanes 1 and 2 wrong on "three-squared"


@pytest.fixture
def suite(race):
    return RegressionSuite.objects.create(workspace=race.workspace, pack=race.pack_version.pack, name="nightly")


def _promote_url(run, case_run):
    return f"/w/{run.workspace.slug}/runs/{run.pk}/cases/{case_run.pk}/promote/"


def _failures(run):
    return f"/w/{run.workspace.slug}/runs/{run.pk}/failures/"


def test_promote_from_htmx_answers_in_place_and_twice_is_still_one_case(race, suite, member, client_for):
    failed = case(race, 1, "three-squared")
    client = client_for(member)
    answer = client.post(_promote_url(race, failed), {"suite": suite.pk, "severity": "blocking"}, HTTP_HX_REQUEST="true")
    body = answer.content.decode()
    assert answer.status_code == 200 and f'data-promoted="{failed.pk}"' in body and "nightly" in body and "<html" not in body
    again = client.post(_promote_url(race, failed), {"suite": suite.pk, "severity": "blocking"}, HTTP_HX_REQUEST="true")
    assert again.status_code == 200 and RegressionCase.objects.filter(source_case_run=failed).count() == 1


def test_promote_without_javascript_goes_back_to_the_page_it_came_from(race, suite, member, client_for):
    failed = case(race, 1, "three-squared")
    client = client_for(member)
    back = client.post(_promote_url(race, failed), {"suite": suite.pk, "severity": "blocking", "next": _failures(race) + "?lane=2"})
    assert back.status_code == 302 and back["Location"] == _failures(race) + "?lane=2"
    other = case(race, 2, "three-squared")
    elsewhere = client.post(_promote_url(race, other), {"suite": suite.pk, "severity": "blocking", "next": "https://evil.example/"})
    assert elsewhere["Location"] == f"/w/{race.workspace.slug}/regression-suites/{suite.pk}/"  # not another site


def test_a_refused_promote_from_htmx_says_why_in_place(race, suite, member, client_for):
    passed = case(race, 0, "three-squared")
    answer = client_for(member).post(_promote_url(race, passed), {"suite": suite.pk, "severity": "blocking"}, HTTP_HX_REQUEST="true")
    assert answer.status_code == 200 and "Only a failed case can be promoted" in answer.content.decode()
    assert not RegressionCase.objects.exists()


def test_a_promoted_case_offers_no_promote_but_says_where_it_is(race, suite, member, client_for):
    failed, other = case(race, 1, "three-squared"), case(race, 2, "three-squared")
    services.regression_case_promote(workspace=race.workspace, user=member, case_run=failed, suite=suite)
    client = client_for(member)
    page = client.get(_failures(race)).content.decode()
    assert f'data-promoted="{failed.pk}"' in page and f'data-promote-form="{failed.pk}"' not in page
    assert f'data-promote-form="{other.pk}"' in page  # the other lane's failure still can be
    assert f'name="case_run" value="{failed.pk}"' not in page and f'name="case_run" value="{other.pk}"' in page
    replay = client.get(f"/w/{race.workspace.slug}/runs/{race.pk}/cases/{failed.pk}/").content.decode()
    assert "Kept as the regression case" in replay and "data-promote>" not in replay


def test_batch_promote_keeps_the_ticked_cases_and_stays_on_the_failures_page(race, suite, member, client_for):
    ticked = [case(race, 1, "three-squared"), case(race, 2, "three-squared")]
    client = client_for(member)
    data = {"suite": suite.pk, "severity": "warning", "case_run": [c.pk for c in ticked], "next": _failures(race)}
    answer = client.post(f"{_failures(race)}promote/", data, follow=True)
    assert answer.redirect_chain[-1][0] == _failures(race)
    assert "Promoted 2 cases into “nightly” as proposed." in answer.content.decode()
    assert sorted(RegressionCase.objects.values_list("source_case_run_id", "severity")) == sorted((c.pk, "warning") for c in ticked)
    again = client.post(f"{_failures(race)}promote/", data, follow=True)
    assert "Promoted 0 cases" in again.content.decode() and "2 already were there" in again.content.decode()
    assert RegressionCase.objects.count() == 2


def test_batch_promote_is_all_or_nothing_and_refuses_strangers_and_viewers(race, suite, member, viewer, stranger, client_for):
    data = {"suite": suite.pk, "severity": "blocking", "case_run": [case(race, 1, "three-squared").pk, case(race, 0, "three-squared").pk]}
    refused = client_for(member).post(f"{_failures(race)}promote/", data, follow=True)
    assert (
        "three-squared (lane-0): Only a failed case can be promoted" in refused.content.decode()
        and "Nothing was promoted." in refused.content.decode()
    )
    assert not RegressionCase.objects.exists()
    assert client_for(viewer).post(f"{_failures(race)}promote/", data).status_code == 403
    assert client_for(stranger).post(f"{_failures(race)}promote/", data).status_code == 404
    assert not RegressionCase.objects.exists()


def test_the_database_keeps_one_case_per_source_and_suite(race, suite, member):
    failed = case(race, 1, "three-squared")
    first, created = services.regression_case_promote(workspace=race.workspace, user=member, case_run=failed, suite=suite)
    assert created
    duplicate = RegressionCase.objects.get(pk=first.pk)
    duplicate.pk = None
    with pytest.raises(IntegrityError), transaction.atomic():
        duplicate.save()


def test_a_promote_that_loses_the_race_returns_the_winner(race, suite, member):
    """Two requests both passed the "already promoted?" check; the second insert hits the unique
    constraint and the service answers with the case the first one created."""
    failed = case(race, 1, "three-squared")
    winner, _ = services.regression_case_promote(workspace=race.workspace, user=member, case_run=failed, suite=suite)
    real_filter = RegressionCase.objects.filter
    calls = []

    def stale_first_check(*args, **kwargs):
        calls.append(kwargs)
        found = real_filter(*args, **kwargs)
        return found.none() if len(calls) == 1 else found  # the first look saw nothing yet

    with mock.patch.object(RegressionCase.objects, "filter", side_effect=stale_first_check):
        case_again, created = services.regression_case_promote(workspace=race.workspace, user=member, case_run=failed, suite=suite)
    # The stale check was made (so the insert ran and lost to the constraint), and the winner came back.
    assert (case_again.pk, created) == (winner.pk, False) and len(calls) >= 1
    assert RegressionCase.objects.filter(source_case_run=failed).count() == 1


def test_clusters_are_named_by_class_and_failed_checks_not_by_hash(race, viewer, client_for):
    page = client_for(viewer).get(_failures(race)).content.decode()
    assert f"<h2>{WRONG_TITLE}</h2>" in page
    fingerprint = page.split('data-cluster="')[1].split('"')[0]
    assert page.count(fingerprint) == page.count(f'"{fingerprint}"')  # only in attributes and links, never as text


def test_a_suites_new_run_starts_from_its_pack_and_suite(race, suite, member, stranger, client_for):
    detail = client_for(member).get(f"/w/{race.workspace.slug}/regression-suites/{suite.pk}/").content.decode()
    link = f"/w/{race.workspace.slug}/runs/new/?regression_suite={suite.pk}"
    assert f'href="{link}"' in detail
    form = client_for(member).get(link).content.decode()
    assert f'<option value="{race.pack_version.pk}" selected>' in form
    ticked = re.search(rf'<input[^>]*name="regression_suite_ids"[^>]*value="{suite.pk}"[^>]*>', form)
    assert ticked is not None and "checked" in ticked.group(0)
    ignored = client_for(stranger).get(link)  # another workspace's suite: not found, nothing chosen
    assert ignored.status_code == 404
