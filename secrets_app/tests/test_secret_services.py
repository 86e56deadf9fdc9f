from __future__ import annotations

import base64

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command
from django.test import override_settings

from core.errors import DomainError
from secrets_app import crypto
from secrets_app.models import WorkspaceSecret
from secrets_app.services import secret_delete, secret_set, secrets_resolve_for_run
from workspaces.models import AuditEvent


def _key(key_id: str, byte: bytes) -> str:
    return f"{key_id}:" + base64.urlsafe_b64encode(byte * 32).decode()


@pytest.mark.django_db
class TestSecretKeyRules:
    @pytest.mark.parametrize("key", ["OPENAI_API_KEY", "_x", "a", "A1_b2", "x" * 128])
    def test_it_accepts_valid_keys(self, workspace, admin, key):
        secret, created = secret_set(workspace=workspace, key=key, value="v", actor=admin)
        assert created and secret.key == key

    @pytest.mark.parametrize("key", ["", "1ABC", "has-dash", "has space", "dot.key", "ÜNICODE", "x" * 129, "KEY\n", "a/b"])
    def test_it_rejects_bad_keys(self, workspace, admin, key):
        with pytest.raises(DomainError) as exc:
            secret_set(workspace=workspace, key=key, value="v", actor=admin)
        assert exc.value.field == "key"
        assert not WorkspaceSecret.objects.exists()

    def test_it_says_how_long_a_too_long_key_is(self, workspace, admin):
        with pytest.raises(DomainError) as exc:
            secret_set(workspace=workspace, key="K" * 129, value="v", actor=admin)
        assert exc.value.field == "key" and "129" in exc.value.message

    def test_it_rejects_an_empty_value(self, workspace, admin):
        with pytest.raises(DomainError) as exc:
            secret_set(workspace=workspace, key="K", value="", actor=admin)
        assert exc.value.field == "value"

    def test_it_accepts_exactly_64_kib_and_rejects_one_byte_more(self, workspace, admin):
        secret_set(workspace=workspace, key="BIG", value="a" * 65536, actor=admin)
        with pytest.raises(DomainError) as exc:
            secret_set(workspace=workspace, key="BIGGER", value="a" * 65537, actor=admin)
        assert exc.value.field == "value" and "65537 bytes" in exc.value.message

    def test_it_counts_the_limit_in_utf8_bytes(self, workspace, admin):
        with pytest.raises(DomainError):
            secret_set(workspace=workspace, key="WIDE", value="é" * 32769, actor=admin)  # 65538 bytes

    def test_it_never_puts_the_value_in_validation_errors(self, workspace, admin):
        with pytest.raises(DomainError) as exc:
            secret_set(workspace=workspace, key="bad key", value="sk-super-secret-" + "x" * 70000, actor=admin)
        assert "sk-super-secret" not in str(exc.value)

    def test_keys_are_unique_per_workspace_not_globally(self, workspace, other_workspace, admin):
        _, first = secret_set(workspace=workspace, key="K", value="one", actor=admin)
        _, again = secret_set(workspace=workspace, key="K", value="two", actor=admin)
        _, elsewhere = secret_set(workspace=other_workspace, key="K", value="three", actor=None)
        assert (first, again, elsewhere) == (True, False, True)
        assert WorkspaceSecret.objects.filter(workspace=workspace).count() == 1
        assert secrets_resolve_for_run(workspace=workspace) == {"K": "two"}
        assert secrets_resolve_for_run(workspace=other_workspace) == {"K": "three"}


@pytest.mark.django_db
class TestSecretStorage:
    def test_it_stores_ciphertext_with_the_key_id_and_decrypts_for_runs(self, workspace, admin):
        secret, _ = secret_set(workspace=workspace, key="TOKEN", value="hunter2-value", actor=admin)
        secret.refresh_from_db()
        assert b"hunter2-value" not in bytes(secret.ciphertext)
        assert secret.key_id == "test1"
        assert crypto.key_id_of(bytes(secret.ciphertext)) == "test1"
        assert secrets_resolve_for_run(workspace=workspace) == {"TOKEN": "hunter2-value"}

    def test_it_uses_a_fresh_nonce_every_time(self, workspace, admin):
        a, _ = secret_set(workspace=workspace, key="A", value="same", actor=admin)
        b, _ = secret_set(workspace=workspace, key="B", value="same", actor=admin)
        assert bytes(a.ciphertext) != bytes(b.ciphertext)

    def test_a_ciphertext_moved_to_another_workspace_does_not_decrypt(self, workspace, other_workspace, admin):
        secret, _ = secret_set(workspace=workspace, key="K", value="mine", actor=admin)
        WorkspaceSecret.objects.create(workspace=other_workspace, key="K", ciphertext=bytes(secret.ciphertext), key_id="test1")
        with pytest.raises(crypto.SecretDecryptionError) as exc:
            secrets_resolve_for_run(workspace=other_workspace)
        assert "mine" not in str(exc.value)

    def test_a_ciphertext_moved_to_another_key_name_does_not_decrypt(self, workspace, admin):
        secret, _ = secret_set(workspace=workspace, key="K", value="mine", actor=admin)
        WorkspaceSecret.objects.filter(pk=secret.pk).update(key="OTHER")
        with pytest.raises(crypto.SecretDecryptionError):
            secrets_resolve_for_run(workspace=workspace)

    def test_a_tampered_ciphertext_does_not_decrypt(self, workspace, admin):
        secret, _ = secret_set(workspace=workspace, key="K", value="mine", actor=admin)
        data = bytearray(bytes(secret.ciphertext))
        data[-1] ^= 1
        WorkspaceSecret.objects.filter(pk=secret.pk).update(ciphertext=bytes(data))
        with pytest.raises(crypto.SecretDecryptionError):
            secrets_resolve_for_run(workspace=workspace)

    def test_every_change_writes_an_audit_row_without_the_value(self, workspace, admin):
        secret_set(workspace=workspace, key="K", value="first-value", actor=admin)
        secret, _ = secret_set(workspace=workspace, key="K", value="second-value", actor=admin)
        secret_delete(secret=secret, actor=admin)
        rows = list(
            AuditEvent.objects.filter(workspace=workspace).order_by("id").values_list("action", "target", "actor__username", "metadata")
        )
        assert rows == [
            ("secret.created", "K", "alice", {"allowed_hosts": []}),
            ("secret.updated", "K", "alice", {"value": "replaced"}),
            ("secret.deleted", "K", "alice", {}),
        ]
        assert not WorkspaceSecret.objects.exists()


class TestKeyConfiguration:
    def test_it_refuses_to_work_without_a_key(self):
        with pytest.raises(ImproperlyConfigured):
            crypto.parse_keys([])

    @pytest.mark.parametrize(
        "entry",
        [
            "nokeyid",
            "id:" + base64.urlsafe_b64encode(b"short").decode(),
            "bad id:" + base64.urlsafe_b64encode(b"k" * 32).decode(),
            "id:!!!",
        ],
    )
    def test_it_rejects_malformed_keys_without_echoing_them(self, entry):
        with pytest.raises(ImproperlyConfigured) as exc:
            crypto.parse_keys([entry])
        assert entry.partition(":")[2] not in str(exc.value) or not entry.partition(":")[2]

    def test_the_first_key_is_the_current_one(self):
        ring = crypto.parse_keys([_key("new", b"n"), _key("old", b"o")])
        assert ring.current_id == "new" and set(ring.keys) == {"new", "old"}


@pytest.mark.django_db
class TestRotation:
    def test_rotation_keeps_every_secret_decryptable(self, workspace, other_workspace, admin):
        old, new = _key("old", b"o"), _key("new", b"n")
        values = {f"K{i}": f"value-{i}-" + "z" * i for i in range(25)}
        with override_settings(SECRETS_ENCRYPTION_KEYS=[old]):
            for key, value in values.items():
                secret_set(workspace=workspace, key=key, value=value, actor=admin)
            secret_set(workspace=other_workspace, key="K0", value="elsewhere", actor=None)
        with override_settings(SECRETS_ENCRYPTION_KEYS=[new, old]):
            # Old keys keep decrypting before the rotation has run…
            assert secrets_resolve_for_run(workspace=workspace) == values
            # …and a write in the meantime already uses the new key.
            secret_set(workspace=workspace, key="FRESH", value="fresh-value", actor=admin)
            assert WorkspaceSecret.objects.get(key="FRESH").key_id == "new"
            call_command("rotate_secrets_key")
            assert set(WorkspaceSecret.objects.values_list("key_id", flat=True)) == {"new"}
            assert all(crypto.key_id_of(bytes(c)) == "new" for c in WorkspaceSecret.objects.values_list("ciphertext", flat=True))
        with override_settings(SECRETS_ENCRYPTION_KEYS=[new]):
            # After rotation the old key can be removed.
            assert secrets_resolve_for_run(workspace=workspace) == {**values, "FRESH": "fresh-value"}
            assert secrets_resolve_for_run(workspace=other_workspace) == {"K0": "elsewhere"}

    def test_rotation_is_idempotent(self, workspace, admin, capsys):
        secret_set(workspace=workspace, key="K", value="v", actor=admin)
        call_command("rotate_secrets_key")
        assert "Re-encrypted 0 of 1" in capsys.readouterr().out

    def test_without_the_old_key_a_secret_fails_loudly_without_leaking(self, workspace, admin):
        with override_settings(SECRETS_ENCRYPTION_KEYS=[_key("old", b"o")]):
            secret_set(workspace=workspace, key="K", value="leaky-value", actor=admin)
        with override_settings(SECRETS_ENCRYPTION_KEYS=[_key("new", b"n")]):
            with pytest.raises(crypto.SecretDecryptionError) as exc:
                secrets_resolve_for_run(workspace=workspace)
        assert "old" in str(exc.value) and "leaky-value" not in str(exc.value)


@pytest.mark.django_db
class TestAllowedHosts:
    def test_hosts_are_stored_in_canonical_form(self, workspace, admin):
        secret, _ = secret_set(
            workspace=workspace, key="K", value="v", allowed_hosts=["Bücher.de", "API.example.com:443", "api.example.com:443"]
        )
        assert secret.allowed_hosts == ["xn--bcher-kva.de", "api.example.com:443"]

    def test_every_bad_host_gets_a_message(self, workspace):
        with pytest.raises(DomainError) as info:
            secret_set(workspace=workspace, key="K", value="v", allowed_hosts=["ok.example.com", "https://x.example.com", "*"])
        message = info.value.message
        assert info.value.field == "allowed_hosts" and message.index("scheme") < message.index("bare *")  # both, in order
        assert not WorkspaceSecret.objects.exists()

    def test_nothing_to_change_is_an_error(self, workspace, admin):
        secret_set(workspace=workspace, key="K", value="v", actor=admin)
        with pytest.raises(DomainError, match="Send a new value, allowed hosts or both"):
            secret_set(workspace=workspace, key="K", actor=admin)

    def test_the_engine_reads_hosts_without_values(self, workspace, other_workspace, admin, django_assert_num_queries):
        from secrets_app.selectors import secret_allowed_hosts

        secret_set(workspace=workspace, key="A", value="alpha-value", allowed_hosts=["a.example.com"])
        secret_set(workspace=workspace, key="B", value="beta-value")
        secret_set(workspace=other_workspace, key="A", value="x", allowed_hosts=["elsewhere.example.com"])
        with django_assert_num_queries(1) as captured:
            assert secret_allowed_hosts(workspace=workspace) == {"A": ["a.example.com"], "B": []}
        assert "ciphertext" not in captured.captured_queries[0]["sql"]

    def test_rotation_keeps_the_hosts(self, workspace):
        old, new = _key("old", b"o"), _key("new", b"n")
        with override_settings(SECRETS_ENCRYPTION_KEYS=[old]):
            secret_set(workspace=workspace, key="K", value="v", allowed_hosts=["a.example.com"])
        with override_settings(SECRETS_ENCRYPTION_KEYS=[new, old]):
            call_command("rotate_secrets_key")
            assert WorkspaceSecret.objects.get().allowed_hosts == ["a.example.com"]
            assert secrets_resolve_for_run(workspace=workspace) == {"K": "v"}
