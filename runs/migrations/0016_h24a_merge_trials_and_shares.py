# A merge of two parallel 0015 migrations (issue 24's trials and issue 25's share links): no operation.

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("runs", "0015_h24a_trials"),
        ("runs", "0015_h25a_run_shares"),
    ]

    operations = []
