from __future__ import annotations

from django.db import migrations, models
from django.db.models import Count, Min


def merge_duplicate_promotions(apps, schema_editor):
    """Concurrent promotes could make one case run several regression cases of a suite: the
    oldest stays, runs that ran a twin point at it, the twins go."""
    RegressionCase = apps.get_model("regression", "RegressionCase")
    CaseRun = apps.get_model("runs", "CaseRun")
    groups = (
        RegressionCase.objects.filter(source_case_run__isnull=False)
        .values("suite_id", "source_case_run_id")
        .annotate(n=Count("id"), keep=Min("id"))
        .filter(n__gt=1)
    )
    for group in groups:
        twins = RegressionCase.objects.filter(suite_id=group["suite_id"], source_case_run_id=group["source_case_run_id"]).exclude(
            pk=group["keep"]
        )
        CaseRun.objects.filter(regression_case__in=twins).update(regression_case_id=group["keep"])
        twins.delete()


class Migration(migrations.Migration):
    dependencies = [("regression", "0001_initial")]

    operations = [
        migrations.RunPython(merge_duplicate_promotions, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="regressioncase",
            constraint=models.UniqueConstraint(
                condition=models.Q(("source_case_run__isnull", False)),
                fields=("suite", "source_case_run"),
                name="uniq_regression_case_source",
            ),
        ),
    ]
