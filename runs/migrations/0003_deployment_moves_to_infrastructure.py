"""A lane's deployment now lives in the infrastructure app (same table, same column)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('infrastructure', '0001_initial'),
        ('runs', '0002_execution_bookkeeping'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            # The tables stay where they are; only Django's model state moves.
            database_operations=[],
            state_operations=[
                migrations.AlterField(
                    model_name='runagent',
                    name='deployment',
                    field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='lanes', to='infrastructure.agentdeployment'),
                ),
            ],
        ),
    ]
