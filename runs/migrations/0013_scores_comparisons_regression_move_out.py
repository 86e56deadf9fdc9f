"""Scores, comparisons and regression suites move to their own apps (same tables, same columns).

``scoring.0001``, ``comparisons.0001`` and ``regression.0001`` take the models into their state;
this drops them from the runs app's state, after pointing ``CaseRun.regression_case`` at the
regression app. No table or row changes.
"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('runs', '0012_regression_suite_archive_and_restrict'),
        ('scoring', '0001_initial'),
        ('comparisons', '0001_initial'),
        ('regression', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.AlterField(
                    model_name='caserun',
                    name='regression_case',
                    field=models.ForeignKey(blank=True, help_text='Set when the case run runs a regression case (its payload snapshot is the case).', null=True, on_delete=django.db.models.deletion.RESTRICT, related_name='case_runs', to='regression.regressioncase'),
                ),
                migrations.DeleteModel(name='CaseScore'),
                migrations.DeleteModel(name='LaneScorecard'),
                migrations.DeleteModel(name='RunScorecard'),
                migrations.DeleteModel(name='GateResult'),
                migrations.DeleteModel(name='Comparison'),
                migrations.DeleteModel(name='RegressionCase'),
                migrations.DeleteModel(name='RegressionSuite'),
            ],
        ),
    ]
