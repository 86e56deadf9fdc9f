"""Scores: case verdicts, lane and run scorecards.

The models move here from ``runs``: the tables keep their names (db_table), so no row is copied;
only Django's state moves, and the content types (so admin permissions and log entries keep
pointing at the same models). ``runs.0013`` drops them from the runs app's state.
"""

import django.db.models.deletion
from django.db import migrations, models

MODELS = ['casescore', 'lanescorecard', 'runscorecard']


def _relabel(apps, from_label: str, to_label: str) -> None:
    content_type = apps.get_model("contenttypes", "ContentType")
    content_type.objects.filter(app_label=from_label, model__in=MODELS).update(app_label=to_label)


def move_content_types(apps, schema_editor) -> None:
    _relabel(apps, "runs", "scoring")


def move_content_types_back(apps, schema_editor) -> None:
    _relabel(apps, "scoring", "runs")


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('runs', '0012_regression_suite_archive_and_restrict'),
        ('contenttypes', '0002_remove_content_type_name'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            # The tables stay where they are; only Django's model state moves.
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name='CaseScore',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('passed', models.BooleanField(null=True)),
                        ('overall_score', models.FloatField(null=True)),
                        ('validity', models.CharField(blank=True, max_length=16)),
                        ('document', models.JSONField(default=dict)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('case_run', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='case_score', to='runs.caserun')),
                        ('lane', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='case_scores', to='runs.lane')),
                    ],
                    options={
                        'db_table': 'runs_casescore',
                    },
                ),
                migrations.CreateModel(
                    name='LaneScorecard',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('overall_score', models.FloatField(null=True)),
                        ('pass_rate', models.FloatField(null=True)),
                        ('passed', models.BooleanField(null=True)),
                        ('validity', models.CharField(blank=True, max_length=16)),
                        ('document', models.JSONField(default=dict)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('lane', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='scorecard', to='runs.lane')),
                    ],
                    options={
                        'db_table': 'runs_lanescorecard',
                    },
                ),
                migrations.CreateModel(
                    name='RunScorecard',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('document', models.JSONField(default=dict)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('run', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='scorecard', to='runs.run')),
                        ('winner_lane', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='runs.lane')),
                    ],
                    options={
                        'db_table': 'runs_runscorecard',
                    },
                ),
    
            ],
        ),
        migrations.RunPython(move_content_types, move_content_types_back, elidable=True),
    ]
