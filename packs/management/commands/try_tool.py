"""Try a pack's tools without a model: build the visible tool set, stage a case, run calls.

    python manage.py try_tool PACK.yaml --call read_file '{"path": "config/settings.json"}'
    python manage.py try_tool PACK.yaml --calls calls.json --case case-1 --secret API_TOKEN=xyz

``calls.json`` is a list of ``{"tool": NAME, "args": {...}}``. Prints one JSON line per call:
``{"tool", "is_error", "content"}``. Exit 0 after running the calls, 1 if the pack is invalid
(or its tools cannot be built), 2 on usage errors.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from bundle import format_errors_text, process_bundle
from engine.sandbox import SandboxConfig, SandboxSettings, create_sandbox
from engine.tools import ToolsetError, build_toolset
from engine.types import EngineError, ToolCall


def usage(message: str) -> CommandError:
    return CommandError(message, returncode=2)


def find_case(manifest: dict[str, Any], case_key: str | None) -> dict[str, Any] | None:
    cases = [case for input_set in manifest.get("input_sets") or [] for case in input_set.get("cases") or []]
    if case_key is None:
        return cases[0] if cases else None
    for case in cases:
        if case.get("case_key") == case_key or case.get("item_key") == case_key:
            return case
    raise usage(f'case "{case_key}" was not found in the pack')


def workspace_files(case: dict[str, Any] | None) -> dict[str, bytes]:
    """runtime.md §1.3: payload.workspace_files and inputs of kind ``workspace``."""
    if not case:
        return {}
    entries: list[Any] = list((case.get("payload") or {}).get("workspace_files") or [])
    for item in case.get("inputs") or []:
        if item.get("kind") == "workspace" and isinstance(item.get("value"), list):
            entries += item["value"]
    files: dict[str, bytes] = {}
    for entry in entries:
        if isinstance(entry, dict) and isinstance(entry.get("path"), str):
            content = entry.get("content", "")
            files[entry["path"]] = (content if isinstance(content, str) else json.dumps(content)).encode()
    return files


def parse_calls(options: dict[str, Any]) -> list[tuple[str, str]]:
    if bool(options["call"]) == bool(options["calls"]):
        raise usage("give exactly one of --call TOOL ARGS_JSON or --calls FILE")
    if options["call"]:
        name, args = options["call"]
        try:
            json.loads(args or "{}")
        except ValueError:
            raise usage(f"--call {name}: arguments are not valid JSON") from None
        return [(name, args)]
    try:
        raw = json.loads(Path(options["calls"]).read_text())
    except OSError as exc:
        raise usage(f"{options['calls']}: cannot read file: {exc.strerror or exc}") from None
    except ValueError:
        raise usage(f"{options['calls']}: not valid JSON") from None
    if not isinstance(raw, list):
        raise usage(f"{options['calls']}: must be a JSON list of {{tool, args}} objects")
    calls = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict) or not isinstance(item.get("tool"), str):
            raise usage(f"{options['calls']}[{i}]: needs a string 'tool'")
        args = item.get("args", item.get("arguments", {}))
        calls.append((item["tool"], args if isinstance(args, str) else json.dumps(args)))
    return calls


class Command(BaseCommand):
    help = "Run tool calls against a pack's visible tool set in a real sandbox. Exit 0 ran, 1 pack invalid, 2 usage error."
    requires_migrations_checks = False
    requires_system_checks: list = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("pack", metavar="PACK.yaml")
        parser.add_argument("--call", nargs=2, metavar=("TOOL", "ARGS_JSON"))
        parser.add_argument("--calls", metavar="CALLS.json")
        parser.add_argument("--case", dest="case_key", metavar="CASE_KEY")
        parser.add_argument("--secret", action="append", default=[], metavar="KEY=VALUE")

    def handle(self, *args: Any, **options: Any) -> None:
        calls = parse_calls(options)
        secrets: dict[str, str] = {}
        for item in options["secret"]:
            key, sep, value = item.partition("=")
            if not sep or not key:
                raise usage(f"--secret must look like KEY=VALUE (got {key or '?'}…)")
            secrets[key] = value
        try:
            source = Path(options["pack"]).read_bytes()
        except OSError as exc:
            raise usage(f"{options['pack']}: cannot read file: {exc.strerror or exc}") from None
        result = process_bundle(source)
        if not result.valid or result.manifest is None:
            raise CommandError(f"{options['pack']}: invalid pack\n{format_errors_text(result.errors)}", returncode=1)
        manifest = result.manifest
        case = find_case(manifest, options["case_key"])
        try:
            config = SandboxConfig.from_manifest(manifest)
            config.apply_operator_network(settings.SANDBOX_NETWORK, settings.SANDBOX_PRIVATE_ALLOWLIST)
            # one sandbox, then the command exits: no spare to pre-start (SANDBOX_WARM_POOL is for workers)
            sandbox = create_sandbox(config, settings=dataclasses.replace(SandboxSettings.from_settings(settings), warm_sandboxes=0))
        except EngineError as exc:
            raise CommandError(f"sandbox: {exc}", returncode=1) from None
        try:
            try:
                toolset = build_toolset(manifest, sandbox=sandbox, secrets=secrets, case_key=(case or {}).get("case_key", ""))
            except ToolsetError as exc:
                raise CommandError(f"tools: {exc}", returncode=1) from None
            for warning in toolset.warnings:
                self.stderr.write(f"warning: {warning}")
            sandbox.stage_files(workspace_files(case))
            for index, (name, arguments) in enumerate(calls):
                try:
                    outcome = toolset.execute(ToolCall(id=f"try-{index}", name=name, arguments=arguments))
                except EngineError as exc:
                    raise CommandError(f"sandbox failure: {exc}", returncode=1) from None
                try:
                    content: Any = json.loads(outcome.content)
                except ValueError:
                    content = outcome.content
                self.stdout.write(json.dumps({"tool": name, "is_error": outcome.is_error, "content": content}, ensure_ascii=False))
        finally:
            sandbox.destroy()
