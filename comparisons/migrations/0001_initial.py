"""Comparisons and release-gate verdicts.

The models move here from ``runs``: the tables keep their names (db_table), so no row is copied;
only Django's state moves, and the content types (so admin permissions and log entries keep
pointing at the same models). ``runs.0013`` drops them from the runs app's state.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

MODELS = ['comparison', 'gateresult']


def _relabel(apps, from_label: str, to_label: str) -> None:
    content_type = apps.get_model("contenttypes", "ContentType")
    content_type.objects.filter(app_label=from_label, model__in=MODELS).update(app_label=to_label)


def move_content_types(apps, schema_editor) -> None:
    _relabel(apps, "runs", "comparisons")


def move_content_types_back(apps, schema_editor) -> None:
    _relabel(apps, "comparisons", "runs")


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('runs', '0012_regression_suite_archive_and_restrict'),
        ('workspaces', '0002_infrastructure_moves_out'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ('contenttypes', '0002_remove_content_type_name'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            # The tables stay where they are; only Django's model state moves.
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name='Comparison',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('status', models.CharField(max_length=32)),
                        ('reason_code', models.CharField(blank=True, max_length=64)),
                        ('fingerprint', models.CharField(max_length=64)),
                        ('summary', models.JSONField(default=dict)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('baseline_lane', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='runs.lane')),
                        ('baseline_run', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='runs.run')),
                        ('candidate_lane', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='runs.lane')),
                        ('candidate_run', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='runs.run')),
                        ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                        ('workspace', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='comparisons', to='workspaces.workspace')),
                    ],
                    options={
                        'db_table': 'runs_comparison',
                        'ordering': ['-created_at', '-id'],
                    },
                ),
                migrations.CreateModel(
                    name='GateResult',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('verdict', models.CharField(max_length=32)),
                        ('reason_code', models.CharField(blank=True, max_length=64)),
                        ('summary', models.TextField(blank=True)),
                        ('policy_snapshot', models.JSONField(default=dict)),
                        ('policy_fingerprint', models.CharField(max_length=64)),
                        ('details', models.JSONField(default=dict)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('comparison', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='gate_results', to='comparisons.comparison')),
                        ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                        ('workspace', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='gate_results', to='workspaces.workspace')),
                    ],
                    options={
                        'db_table': 'runs_gateresult',
                        'ordering': ['-created_at', '-id'],
                    },
                ),
                migrations.AddConstraint(
                    model_name='comparison',
                    constraint=models.UniqueConstraint(fields=('workspace', 'fingerprint'), name='uniq_comparison_fingerprint'),
                ),
    
            ],
        ),
        migrations.RunPython(move_content_types, move_content_types_back, elidable=True),
    ]
