"""Infrastructure models now belong to the ``infrastructure`` app; their tables stay (see
infrastructure/migrations/0001_initial.py)."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('runs', '0003_deployment_moves_to_infrastructure'),
        ('infrastructure', '0001_initial'),
        ('workspaces', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            # The tables stay where they are; only Django's model state moves.
            database_operations=[],
            state_operations=[
                migrations.RemoveField(
                    model_name='provideraccount',
                    name='created_by',
                ),
                migrations.RemoveField(
                    model_name='provideraccount',
                    name='workspace',
                ),
                migrations.RemoveField(
                    model_name='runtimeprofile',
                    name='workspace',
                ),
                migrations.RemoveField(
                    model_name='toolresource',
                    name='workspace',
                ),
                migrations.DeleteModel(
                    name='AgentDeployment',
                ),
                migrations.DeleteModel(
                    name='ProviderAccount',
                ),
                migrations.DeleteModel(
                    name='RuntimeProfile',
                ),
                migrations.DeleteModel(
                    name='ToolResource',
                ),
            ],
        ),
    ]
