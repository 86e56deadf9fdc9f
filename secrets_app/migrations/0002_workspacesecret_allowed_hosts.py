from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("secrets_app", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="workspacesecret",
            name="allowed_hosts",
            field=models.JSONField(blank=True, default=list),
        ),
    ]
