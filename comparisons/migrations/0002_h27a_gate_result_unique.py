from __future__ import annotations

from django.db import migrations, models
from django.db.models import Count, Min


def drop_duplicate_verdicts(apps, schema_editor):
    """Concurrent evaluations could store one policy's verdict on a comparison twice: the rows
    are equal by construction (a comparison never changes), so the oldest stays."""
    GateResult = apps.get_model("comparisons", "GateResult")
    groups = GateResult.objects.values("comparison_id", "policy_fingerprint").annotate(n=Count("id"), keep=Min("id")).filter(n__gt=1)
    for group in groups:
        GateResult.objects.filter(comparison_id=group["comparison_id"], policy_fingerprint=group["policy_fingerprint"]).exclude(
            pk=group["keep"]
        ).delete()


class Migration(migrations.Migration):
    dependencies = [("comparisons", "0001_initial")]

    operations = [
        migrations.RunPython(drop_duplicate_verdicts, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="gateresult",
            constraint=models.UniqueConstraint(fields=("comparison", "policy_fingerprint"), name="uniq_gate_result_policy"),
        ),
    ]
