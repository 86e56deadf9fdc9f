"""Regression suites and their cases.

The models move here from ``runs``: the tables keep their names (db_table), so no row is copied;
only Django's state moves, and the content types (so admin permissions and log entries keep
pointing at the same models). ``runs.0013`` drops them from the runs app's state.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

MODELS = ['regressionsuite', 'regressioncase']


def _relabel(apps, from_label: str, to_label: str) -> None:
    content_type = apps.get_model("contenttypes", "ContentType")
    content_type.objects.filter(app_label=from_label, model__in=MODELS).update(app_label=to_label)


def move_content_types(apps, schema_editor) -> None:
    _relabel(apps, "runs", "regression")


def move_content_types_back(apps, schema_editor) -> None:
    _relabel(apps, "regression", "runs")


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('packs', '0002_packversion_warnings'),
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
                    name='RegressionSuite',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('name', models.CharField(max_length=200)),
                        ('description', models.TextField(blank=True)),
                        ('archived_at', models.DateTimeField(blank=True, null=True)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('updated_at', models.DateTimeField(auto_now=True)),
                        ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                        ('pack', models.ForeignKey(on_delete=django.db.models.deletion.RESTRICT, related_name='regression_suites', to='packs.pack')),
                        ('workspace', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='regression_suites', to='workspaces.workspace')),
                    ],
                    options={
                        'db_table': 'runs_regressionsuite',
                        'ordering': ['name', 'id'],
                    },
                ),
                migrations.CreateModel(
                    name='RegressionCase',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('title', models.CharField(max_length=200)),
                        ('status', models.CharField(choices=[('proposed', 'Proposed'), ('active', 'Active'), ('archived', 'Archived')], db_index=True, default='proposed', max_length=16)),
                        ('severity', models.CharField(choices=[('blocking', 'Blocking'), ('warning', 'Warning'), ('info', 'Info')], default='blocking', max_length=16)),
                        ('challenge_key', models.CharField(max_length=200)),
                        ('case_key', models.CharField(help_text="The source case's key in its pack.", max_length=200)),
                        ('item_key', models.CharField(blank=True, max_length=200)),
                        ('payload', models.JSONField(default=dict, help_text='The source case as it was at promote time.')),
                        ('source_first_sequence', models.PositiveBigIntegerField(blank=True, null=True)),
                        ('source_last_sequence', models.PositiveBigIntegerField(blank=True, null=True)),
                        ('failure_summary', models.TextField(blank=True)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('status_changed_at', models.DateTimeField(blank=True, null=True)),
                        ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                        ('source_case', models.ForeignKey(on_delete=django.db.models.deletion.RESTRICT, related_name='+', to='packs.case')),
                        ('source_case_run', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='runs.caserun')),
                        ('source_lane', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='runs.lane')),
                        ('source_run', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='runs.run')),
                        ('status_changed_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                        ('workspace', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='workspaces.workspace')),
                        ('suite', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='cases', to='regression.regressionsuite')),
                    ],
                    options={
                        'db_table': 'runs_regressioncase',
                        'ordering': ['suite', 'id'],
                    },
                ),
                migrations.AddConstraint(
                    model_name='regressionsuite',
                    constraint=models.UniqueConstraint(fields=('workspace', 'name'), name='uniq_regression_suite_name'),
                ),
                migrations.AddConstraint(
                    model_name='regressioncase',
                    constraint=models.CheckConstraint(condition=models.Q(('status__in', ['proposed', 'active', 'archived'])), name='regression_case_status_valid'),
                ),
                migrations.AddConstraint(
                    model_name='regressioncase',
                    constraint=models.CheckConstraint(condition=models.Q(('severity__in', ['blocking', 'warning', 'info'])), name='regression_case_severity_valid'),
                ),
    
            ],
        ),
        migrations.RunPython(move_content_types, move_content_types_back, elidable=True),
    ]
