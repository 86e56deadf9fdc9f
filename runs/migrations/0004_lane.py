"""``RunAgent`` is called ``Lane`` now (and its history ``LaneStatusHistory``); the tables keep
their names, so this only moves Django's state."""

from django.db import migrations


RENAMES = {"runagent": "lane", "runagentstatushistory": "lanestatushistory"}


def _rename_content_types(apps, renames: dict[str, str]) -> None:
    # RenameModel inside SeparateDatabaseAndState does not rename content types by itself.
    content_type = apps.get_model("contenttypes", "ContentType")
    for old, new in renames.items():
        content_type.objects.filter(app_label="runs", model=old).update(model=new)


def forwards(apps, schema_editor) -> None:
    _rename_content_types(apps, RENAMES)


def backwards(apps, schema_editor) -> None:
    _rename_content_types(apps, {new: old for old, new in RENAMES.items()})


class Migration(migrations.Migration):

    dependencies = [
        ("runs", "0003_deployment_moves_to_infrastructure"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.AlterModelTable(name="runagent", table="runs_runagent"),
                migrations.AlterModelTable(name="runagentstatushistory", table="runs_runagentstatushistory"),
                migrations.RenameModel(old_name="RunAgent", new_name="Lane"),
                migrations.RenameModel(old_name="RunAgentStatusHistory", new_name="LaneStatusHistory"),
            ],
        ),
        migrations.RunPython(forwards, backwards, elidable=True),
    ]
