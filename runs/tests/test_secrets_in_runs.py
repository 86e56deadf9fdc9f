"""Workspace secrets inside real runs: sent only to allowed hosts, never back out through events, pages or export.

The only server is a loopback server this test starts; the pack allowlists 127.0.0.0/8 on purpose.
"""

from __future__ import annotations

import base64
import codecs
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from engine.events import TOOL_CALL_COMPLETED, TOOL_CALL_FAILED, TOOL_CALL_STARTED
from runs import services
from runs.models import CaseRun, CaseStatus, RunEvent
from runs.tests.factories import make_deployment, publish
from secrets_app.services import secret_set

SECRET = "vault-Tok-5e6f7a8b9c0d1e2f"
HALF = len(SECRET) // 2
ECHOES = {
    "/hex": SECRET.encode().hex(),
    "/reversed": SECRET[::-1],
    "/spaced": " ".join(SECRET),
    "/swapped": SECRET.swapcase(),
    "/json": json.dumps({"token": "".join(f"\\u{ord(c):04x}" for c in SECRET)}),
    "/url": "".join(f"%{b:02X}" for b in SECRET.encode()),
    "/base32": base64.b32encode(SECRET.encode()).decode(),
    "/rot13": codecs.encode(SECRET, "rot13"),
    "/split-1": f"part one {SECRET[:HALF]}",
    "/split-2": f"{SECRET[HALF:]} part two",
}


def forms(value: str) -> list[str]:
    """Every way the value could be read out of stored text."""
    out = [value, value[::-1], value.swapcase(), value.encode().hex(), " ".join(value), codecs.encode(value, "rot13")]
    out += [base64.b64encode(value.encode()).decode(), base64.b32encode(value.encode()).decode().rstrip("=")]
    out += ["".join(f"\\u{ord(c):04x}" for c in value), "".join(f"\\\\u{ord(c):04x}" for c in value)]
    out += ["".join(f"%{b:02X}" for b in value.encode()), value[:HALF], value[HALF:]]
    return out


def assert_no_secret(text: str | bytes, where: str) -> None:
    data = text.decode() if isinstance(text, bytes) else text
    for form in forms(SECRET):
        assert form not in data, f"a form of the secret ({form[:6]}…) leaked into {where}"


class _Echo(BaseHTTPRequestHandler):
    def log_message(self, *a: Any) -> None:
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length).decode() if length else ""
        server: Any = self.server
        server.seen.append({"path": self.path, "headers": dict(self.headers), "body": body})
        payload = ECHOES.get(self.path.split("?")[0], "ok").encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


@pytest.fixture
def echo() -> Iterator[Any]:
    server: Any = ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    server.seen = []
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture(autouse=True)
def loopback_allowed(settings):
    settings.SANDBOX_PRIVATE_ALLOWLIST = ["127.0.0.0/8"]  # the operator opt-in for loopback targets, where supported


def pack_yaml(port: int) -> str:
    return f"""pack:
  slug: vault-{port}
  name: Vault
  family: testing
version:
  number: 1
  execution_mode: native
  sandbox:
    network_access: true
    network_allowlist: ["127.0.0.0/8"]
  tool_policy:
    allowed_tool_kinds: [network]
  evaluation_spec:
    name: vault-v1
    version_number: 1
    judge_mode: deterministic
    validators:
      - key: answer
        type: exact_match
        target: final_output
        expected_from: case.expectations.answer
    metrics:
      - key: completed
        type: boolean
        collector: run_completed_successfully
    scorecard:
      dimensions: [correctness]
tools:
  custom:
    - name: vault
      description: Reads from the vault.
      parameters:
        type: object
        properties:
          path: {{type: string}}
        required: [path]
        additionalProperties: false
      implementation:
        primitive: http_request
        args:
          method: POST
          url: "http://127.0.0.1:{port}/${{path}}"
          headers:
            X-Vault-Token: "${{secrets.VAULT_TOKEN}}"
          body: "token=${{secrets.VAULT_TOKEN}}"
challenges:
  - key: vault
    title: Read the vault
    category: network
    difficulty: easy
    instructions: Read the vault.
input_sets:
  - key: default
    name: Default
    cases:
      - challenge_key: vault
        case_key: case-0
        expectations:
          - key: answer
            kind: text
            value: done
"""


def run_vault(workspace, admin, echo, tasks, paths: list[str], then_hosts: list[str] | None = None):
    """``then_hosts``: the secret's allowed hosts once the run exists (run creation refuses a secret
    its tool cannot send; an admin may still change them before the case runs)."""
    version = publish(workspace, admin, pack_yaml(echo.server_port))
    script = [{"tool": "vault", "args": {"path": p.lstrip("/")}} for p in paths] + [{"submit": "done"}]
    deployment = make_deployment(workspace, script=script, max_iterations=len(script) + 2)
    run = services.run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=[deployment.pk])
    if then_hosts is not None:
        secret_set(workspace=workspace, key="VAULT_TOKEN", value=SECRET, allowed_hosts=then_hosts, actor=admin)
    tasks.drain()
    return run


@pytest.mark.django_db
def test_a_bound_secret_reaches_its_host_and_no_echo_of_it_is_stored_or_shown(
    workspace, admin, viewer, echo, tasks, client_for, api_client_for
):
    secret_set(workspace=workspace, key="VAULT_TOKEN", value=SECRET, allowed_hosts=[f"127.0.0.1:{echo.server_port}"], actor=admin)
    run = run_vault(workspace, admin, echo, tasks, list(ECHOES))
    case = CaseRun.objects.get(run=run)
    assert case.status == CaseStatus.COMPLETED, case.error
    assert [s["headers"]["X-Vault-Token"] for s in echo.seen] == [SECRET] * len(ECHOES)
    results = RunEvent.objects.filter(run=run, event_type=TOOL_CALL_COMPLETED).order_by("sequence_number")
    assert results.count() == len(ECHOES) + 1  # and submit
    assert RunEvent.objects.filter(run=run, event_type=TOOL_CALL_STARTED).count() == len(ECHOES) + 1
    assert set(RunEvent.objects.filter(run=run, case_run=case).values_list("attempt", flat=True)) == {1}
    for event in RunEvent.objects.filter(run=run):
        assert_no_secret(json.dumps(event.payload), f"event {event.event_type}")
    viewer_api, viewer_web = api_client_for(viewer), client_for(viewer)
    export = viewer_api.get(f"/api/v1/workspaces/{workspace.slug}/runs/{run.pk}/events.jsonl")
    assert export.status_code == 200
    exported = b"".join(export.streaming_content).decode()
    assert_no_secret(exported, "the events.jsonl export")
    assert all(json.loads(line)["attempt"] == 1 for line in exported.splitlines() if json.loads(line)["case_run_id"] == case.pk)
    for page in (f"/w/{workspace.slug}/runs/{run.pk}/cases/{case.pk}/", f"/w/{workspace.slug}/runs/{run.pk}/"):
        response = viewer_web.get(page)
        assert response.status_code == 200, page
        assert_no_secret(response.content, page)
    assert_no_secret(viewer_api.get(f"/api/v1/workspaces/{workspace.slug}/runs/{run.pk}/events").content, "the events API")


@pytest.mark.django_db
def test_a_secret_without_allowed_hosts_is_not_sent_and_the_call_says_why(workspace, admin, echo, tasks):
    secret_set(workspace=workspace, key="VAULT_TOKEN", value=SECRET, allowed_hosts=[f"127.0.0.1:{echo.server_port}"], actor=admin)
    run = run_vault(workspace, admin, echo, tasks, ["/hex"], then_hosts=[])
    assert echo.seen == []
    [failed] = RunEvent.objects.filter(run=run, event_type=TOOL_CALL_FAILED)
    message = json.loads(failed.payload["result"]["content"])["error"]
    assert 'secret "VAULT_TOKEN" was not sent: it has no allowed hosts' in message and "workspace admin" in message
    warnings = RunEvent.objects.filter(run=run, event_type="tool.registry.warning").values_list("payload", flat=True)
    assert any("VAULT_TOKEN" in w["message"] and "no allowed hosts" in w["message"] for w in warnings)


@pytest.mark.django_db
def test_a_secret_bound_elsewhere_is_not_sent(workspace, admin, echo, tasks):
    secret_set(workspace=workspace, key="VAULT_TOKEN", value=SECRET, allowed_hosts=[f"127.0.0.1:{echo.server_port}"], actor=admin)
    run = run_vault(workspace, admin, echo, tasks, ["/hex"], then_hosts=["vault.example.com"])
    assert echo.seen == []
    [failed] = RunEvent.objects.filter(run=run, event_type=TOOL_CALL_FAILED)
    assert "is not one of its allowed hosts" in failed.payload["result"]["content"]
