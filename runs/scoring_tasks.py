"""Celery tasks for scoring: ids in, a ``runs.scoring`` service call out (STYLE.md §13).

Every service is idempotent and never raises, so a redelivered task just recomputes the same
rows; that is what makes ``acks_late`` safe here. Celery's autodiscovery only imports
``runs.tasks``; that module imports this one so the workers know these names.
"""

from __future__ import annotations

from celery import shared_task

from runs import scoring


@shared_task(name="runs.case_run_score", acks_late=True, ignore_result=True)
def case_run_score_task(case_run_id: int) -> None:
    scoring.case_run_score(case_run_id=case_run_id)


@shared_task(name="runs.lane_score", acks_late=True, ignore_result=True)
def lane_score_task(lane_id: int) -> None:
    scoring.lane_score(lane_id=lane_id)


@shared_task(name="runs.run_score", acks_late=True, ignore_result=True)
def run_score_task(run_id: int) -> None:
    scoring.run_score(run_id=run_id)
