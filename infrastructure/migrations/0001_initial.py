"""Infrastructure models move here from ``workspaces``: the tables keep their names (db_table),
so no row is copied; only Django's state moves, and the content types (so admin permissions and
log entries keep pointing at the same models)."""

import django.core.validators
import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


MODELS = ["provideraccount", "runtimeprofile", "agentdeployment", "toolresource"]


def _relabel(apps, from_label: str, to_label: str) -> None:
    content_type = apps.get_model("contenttypes", "ContentType")
    content_type.objects.filter(app_label=from_label, model__in=MODELS).update(app_label=to_label)


def move_content_types(apps, schema_editor) -> None:
    _relabel(apps, "workspaces", "infrastructure")


def move_content_types_back(apps, schema_editor) -> None:
    _relabel(apps, "infrastructure", "workspaces")


class Migration(migrations.Migration):


    dependencies = [
        ('workspaces', '0001_initial'),
        ('contenttypes', '0002_remove_content_type_name'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            # The tables stay where they are; only Django's model state moves.
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name='ProviderAccount',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('name', models.CharField(max_length=200)),
                        ('provider_key', models.CharField(choices=[('scripted', 'Scripted (offline, deterministic)'), ('openai', 'OpenAI / OpenAI-compatible'), ('anthropic', 'Anthropic')], max_length=32)),
                        ('credential_reference', models.CharField(blank=True, help_text='workspace-secret://KEY', max_length=200)),
                        ('base_url', models.URLField(blank=True, max_length=500)),
                        ('status', models.CharField(choices=[('active', 'Active'), ('paused', 'Paused'), ('error', 'Error'), ('archived', 'Archived')], default='active', max_length=16)),
                        ('last_test_status', models.CharField(blank=True, max_length=16)),
                        ('last_test_message', models.CharField(blank=True, max_length=500)),
                        ('last_tested_at', models.DateTimeField(blank=True, null=True)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('updated_at', models.DateTimeField(auto_now=True)),
                        ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                        ('workspace', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='provider_accounts', to='workspaces.workspace')),
                    ],
                    options={
                        'db_table': 'workspaces_provideraccount',
                        'ordering': ['name'],
                    },
                ),
                migrations.CreateModel(
                    name='RuntimeProfile',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('name', models.CharField(max_length=200)),
                        ('execution_target', models.CharField(choices=[('native', 'Native (agent loop with tools)'), ('prompt_eval', 'Prompt eval (one model call)'), ('multi_turn', 'Multi-turn (user simulator)')], default='native', max_length=32)),
                        ('max_iterations', models.PositiveIntegerField(default=10, validators=[django.core.validators.MinValueValidator(1)])),
                        ('max_tool_calls', models.PositiveIntegerField(default=0, help_text='0 = unlimited')),
                        ('step_timeout_seconds', models.PositiveIntegerField(default=60, validators=[django.core.validators.MinValueValidator(1)])),
                        ('run_timeout_seconds', models.PositiveIntegerField(default=300, validators=[django.core.validators.MinValueValidator(1)])),
                        ('max_in_flight_cases', models.PositiveIntegerField(default=8, validators=[django.core.validators.MinValueValidator(1)])),
                        ('allow_shell', models.BooleanField(blank=True, help_text="Override the pack's sandbox (blank = pack decides)", null=True)),
                        ('allow_network', models.BooleanField(blank=True, help_text="Override the pack's sandbox (blank = pack decides)", null=True)),
                        ('max_workspace_bytes', models.PositiveBigIntegerField(blank=True, null=True)),
                        ('status', models.CharField(choices=[('active', 'Active'), ('archived', 'Archived')], default='active', max_length=16)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('updated_at', models.DateTimeField(auto_now=True)),
                        ('workspace', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='runtime_profiles', to='workspaces.workspace')),
                    ],
                    options={
                        'db_table': 'workspaces_runtimeprofile',
                        'ordering': ['name'],
                    },
                ),
                migrations.CreateModel(
                    name='AgentDeployment',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('name', models.CharField(max_length=200)),
                        ('model', models.CharField(max_length=200)),
                        ('system_prompt', models.TextField(blank=True)),
                        ('output_schema', models.JSONField(blank=True, null=True)),
                        ('deployment_config', models.JSONField(blank=True, default=dict)),
                        ('status', models.CharField(choices=[('active', 'Active'), ('archived', 'Archived')], default='active', max_length=16)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('updated_at', models.DateTimeField(auto_now=True)),
                        ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                        ('workspace', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='deployments', to='workspaces.workspace')),
                        ('provider_account', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='deployments', to='infrastructure.provideraccount')),
                        ('runtime_profile', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='deployments', to='infrastructure.runtimeprofile')),
                    ],
                    options={
                        'db_table': 'workspaces_agentdeployment',
                        'ordering': ['name'],
                    },
                ),
                migrations.CreateModel(
                    name='ToolResource',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('name', models.CharField(max_length=200)),
                        ('slug', models.SlugField(max_length=100)),
                        ('tool_kind', models.CharField(choices=[('primitive', 'Primitive'), ('composed', 'Composed')], max_length=16)),
                        ('capability_key', models.CharField(max_length=100)),
                        ('definition', models.JSONField(blank=True, default=dict)),
                        ('lifecycle_status', models.CharField(choices=[('active', 'Active'), ('disabled', 'Disabled'), ('archived', 'Archived')], default='active', max_length=16)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('updated_at', models.DateTimeField(auto_now=True)),
                        ('workspace', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='tool_resources', to='workspaces.workspace')),
                    ],
                    options={
                        'db_table': 'workspaces_toolresource',
                        'ordering': ['name'],
                    },
                ),
                migrations.AddConstraint(
                    model_name='provideraccount',
                    constraint=models.UniqueConstraint(fields=('workspace', 'name'), name='uniq_provider_account_name'),
                ),
                migrations.AddConstraint(
                    model_name='runtimeprofile',
                    constraint=models.UniqueConstraint(fields=('workspace', 'name'), name='uniq_runtime_profile_name'),
                ),
                migrations.AddConstraint(
                    model_name='agentdeployment',
                    constraint=models.UniqueConstraint(fields=('workspace', 'name'), name='uniq_deployment_name'),
                ),
                migrations.AddConstraint(
                    model_name='toolresource',
                    constraint=models.UniqueConstraint(fields=('workspace', 'slug'), name='uniq_tool_resource_slug'),
                ),
            ],
        ),
        migrations.RunPython(move_content_types, move_content_types_back, elidable=True),
    ]
