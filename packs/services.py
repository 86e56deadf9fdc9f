"""Writes for packs: publish a bundle as an immutable version, change lifecycles.

``pack_publish`` is the only way a PackVersion comes into existence (web, API, admin, CLI,
library and demo all call it), so the checks that are not part of bundle validation — metadata
conflicts and duplicate version numbers (spec pack-format.md §1.1 step 6) — live here once.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError, transaction

from artifacts.models import ArtifactKind
from artifacts.selectors import asset_artifact_errors
from artifacts.services import ContentRefused, artifact_create_from_bytes
from bundle import BundleResult, process_bundle, publication_rows
from core.actors import actor_or_none
from core.errors import Conflict, DomainError
from infrastructure.sandbox_layers import sandbox_template_ids
from packs.installation import bundle_installation
from packs.models import Case, Challenge, InputSet, Pack, PackVersion
from workspaces.models import Workspace
from workspaces.services import audit_record

MAX_BUNDLE_BYTES = 1024 * 1024  # spec §1.1: request body limit 1 MiB


class PackInvalid(DomainError):
    """The bundle does not validate. ``errors`` are spec §1.2 dicts: field, message, line;
    ``warnings`` (path, message, line) are what validation found besides, shown with the errors.
    The API's error body carries both (``valid: false``), as the spec's validate answer does."""

    default_code = "challenge_pack_invalid"

    def __init__(self, errors: list[dict[str, Any]], warnings: list[dict[str, Any]] | None = None):
        self.errors = errors
        self.warnings = warnings or []
        message = "; ".join(f"{e['field']} {e['message']}".strip() for e in errors) or "The bundle is invalid."
        super().__init__(message, extra={"valid": False, "errors": self.errors, "warnings": self.warnings})


class PackConflict(Conflict):
    """Publishing would clash with what the workspace already has (HTTP 409); ``field`` is the
    bundle's path (``version.number``), ``line`` its line in the YAML."""

    VERSION_EXISTS = "challenge_pack_version_exists"
    METADATA_CONFLICT = "challenge_pack_metadata_conflict"

    def __init__(self, code: str, message: str, field: str, line: int | None = None):
        self.line = line
        super().__init__(message, field=field, code=code, extra={"errors": [{"field": field, "message": message, "line": line}]})

    def as_dict(self) -> dict[str, Any]:
        return {"field": self.field, "message": self.message, "line": self.line}


@dataclasses.dataclass(frozen=True)
class PackCheck:
    """A bundle that validated and does not conflict with the workspace."""

    result: BundleResult
    rows: dict[str, Any]
    existing_pack: Pack | None

    @property
    def warnings(self) -> list[dict[str, Any]]:
        return warning_dicts(self.result)


def warning_dicts(result: BundleResult) -> list[dict[str, Any]]:
    """The bundle's warnings as ``{"path", "message", "line"}`` dicts (API, command, stored version)."""
    return [warning.as_dict() for warning in result.warnings]


def source_text(source: str | bytes) -> str:
    if isinstance(source, bytes):
        return source.decode("utf-8-sig", errors="replace")
    return source


def source_line_of(source: str, section: str, key: str) -> int | None:
    """Best-effort line of ``key:`` inside the top-level ``section:`` block, for conflict errors."""
    in_section = False
    for number, line in enumerate(source.splitlines(), start=1):
        if line and not line[0].isspace() and not line.startswith("#"):
            in_section = line.split(":", 1)[0].strip() == section
            continue
        if in_section and line.strip().split(":", 1)[0] == key:
            return number
    return None


def bundle_validate(source: str | bytes) -> BundleResult:
    """Size limit + the bundle pipeline; raises PackInvalid. Needs no workspace (CLI, API validate).

    Warnings (``result.warnings``) never make a bundle invalid; they use what this installation's
    engine supports (packs/installation.py).
    """
    size = len(source.encode() if isinstance(source, str) else source)
    if size > MAX_BUNDLE_BYTES:
        raise PackInvalid([{"field": "", "message": f"bundle is larger than 1 MiB ({size} bytes)", "line": None}])
    installation = dataclasses.replace(bundle_installation(), sandbox_templates=sandbox_template_ids)
    result = process_bundle(source, installation=installation)
    if not result.valid or result.manifest is None:
        raise PackInvalid([error.as_dict() for error in result.errors], warning_dicts(result))
    return result


def pack_check(*, workspace: Workspace, source: str | bytes, pack: Pack | None = None) -> PackCheck:
    """Validate ``source`` and check it against the workspace; raises PackInvalid / PackConflict.

    Reads only. Used by Validate buttons (so conflicts show before Publish) and by pack_publish.
    With ``pack``, the bundle must be a new version of that pack (the "New version" page).
    """
    result = bundle_validate(source)
    assert result.manifest is not None  # bundle_validate raised PackInvalid otherwise
    missing_artifacts = asset_artifact_errors(workspace=workspace, manifest=result.manifest)
    if missing_artifacts:  # spec §1.1 step 6: asset artifact_ids name artifacts of this workspace
        raise PackInvalid(missing_artifacts, warning_dicts(result))
    rows = publication_rows(result.manifest)
    pack_row, version_row = rows["pack"], rows["version"]
    text = source_text(source)
    if pack is not None and pack_row["slug"] != pack.slug:
        raise PackConflict(
            PackConflict.METADATA_CONFLICT,
            f"this is a new version of {pack.slug!r}, so pack.slug must be {pack.slug!r} (the bundle says {pack_row['slug']!r})",
            field="pack.slug",
            line=source_line_of(text, "pack", "slug"),
        )
    existing = Pack.objects.filter(workspace=workspace, slug=pack_row["slug"]).first()
    if existing is not None:
        for attr in ("name", "family"):
            if getattr(existing, attr) != (pack_row.get(attr) or ""):
                raise PackConflict(
                    PackConflict.METADATA_CONFLICT,
                    f"pack {pack_row['slug']!r} already exists in this workspace with {attr} {getattr(existing, attr)!r}; "
                    f"a new version must keep the same name and family",
                    field=f"pack.{attr}",
                    line=source_line_of(text, "pack", attr),
                )
        if existing.versions.filter(number=version_row["number"]).exists():
            raise PackConflict(
                PackConflict.VERSION_EXISTS,
                f"version {version_row['number']} of pack {pack_row['slug']!r} is already published; versions are immutable, use a new number",
                field="version.number",
                line=source_line_of(text, "version", "number"),
            )
    return PackCheck(result=result, rows=rows, existing_pack=existing)


def _clean(obj: Any, *, field_prefix: str, exclude: tuple[str, ...] = ()) -> None:
    """Field checks (lengths, slug shape) as bundle errors; uniqueness is the validator's job."""
    try:
        obj.full_clean(exclude=list(exclude), validate_unique=False, validate_constraints=False)
    except DjangoValidationError as exc:
        errors = [
            {"field": f"{field_prefix}.{name}", "message": " ".join(messages), "line": None} for name, messages in exc.message_dict.items()
        ]
        raise PackInvalid(errors) from exc


_VERSION_FKS = ("pack", "workspace", "published_by")
# publication_rows adds bookkeeping keys to each case; Case.payload keeps only the case itself.
_ROW_ONLY_CASE_KEYS = frozenset({"stored_payload", "order"})


@transaction.atomic
def pack_publish(*, workspace: Workspace, user: Any, source: str | bytes, pack: Pack | None = None) -> PackVersion:
    """Publish a bundle: the Pack (created or reused), an immutable PackVersion and its rows.

    All or nothing: any failure (invalid bundle, conflict, a bad row) rolls everything back.
    """
    check = pack_check(workspace=workspace, source=source, pack=pack)
    rows, result = check.rows, check.result
    pack_row, version_row = rows["pack"], rows["version"]

    pack = check.existing_pack
    if pack is None:
        pack = Pack(
            workspace=workspace,
            slug=pack_row["slug"],
            name=pack_row["name"],
            family=pack_row.get("family") or "",
            description=pack_row.get("description") or "",
        )
        _clean(pack, field_prefix="pack", exclude=("workspace",))
        try:
            with transaction.atomic():
                pack.save()
        except IntegrityError:
            # Someone published the same slug between our check and our insert.
            raise PackConflict(
                PackConflict.VERSION_EXISTS, f"pack {pack_row['slug']!r} was just published by someone else; try again", field="pack.slug"
            ) from None
    else:
        pack = Pack.objects.select_for_update().get(pk=pack.pk)
        pack.description = pack_row.get("description") or pack.description
        pack.save(update_fields=["description", "updated_at"])

    version = PackVersion(
        pack=pack,
        workspace=workspace,
        number=version_row["number"],
        execution_mode=version_row.get("execution_mode") or "native",
        manifest=result.manifest,
        manifest_checksum=result.checksum or "",
        raw_yaml=source_text(source),
        warnings=check.warnings,
        lifecycle_status=PackVersion.Lifecycle.RUNNABLE,
        published_by=actor_or_none(user),
    )
    _clean(version, field_prefix="version", exclude=_VERSION_FKS)
    try:
        with transaction.atomic():
            version.save()
    except IntegrityError:
        raise PackConflict(
            PackConflict.VERSION_EXISTS, f"version {version.number} of pack {pack.slug!r} is already published", field="version.number"
        ) from None

    challenges: dict[str, Challenge] = {}
    challenge_objs = []
    for index, row in enumerate(rows["challenges"]):
        challenge = Challenge(
            pack_version=version,
            key=row["key"],
            title=row.get("title") or "",
            category=row.get("category") or "",
            difficulty=row.get("difficulty") or "",
            instructions=row.get("instructions") or "",
            execution_order=index,
            definition=row.get("definition") or {},
        )
        _clean(challenge, field_prefix=f"challenges[{index}]", exclude=("pack_version",))
        challenge_objs.append(challenge)
    for challenge in Challenge.objects.bulk_create(challenge_objs):
        challenges[challenge.key] = challenge

    case_objs = []
    for set_index, set_row in enumerate(rows["input_sets"]):
        input_set = InputSet(
            pack_version=version,
            key=set_row["key"],
            name=set_row.get("name") or "",
            description=set_row.get("description") or "",
            checksum=set_row.get("checksum") or "",
        )
        _clean(input_set, field_prefix=f"input_sets[{set_index}]", exclude=("pack_version",))
        input_set.save()
        for position, case_row in enumerate(set_row.get("cases") or []):
            case = Case(
                input_set=input_set,
                pack_version=version,
                challenge=challenges.get(case_row["challenge_key"]),
                challenge_key=case_row["challenge_key"],
                case_key=case_row["case_key"],
                item_key=case_row.get("item_key") or "",
                position=position,
                payload={k: v for k, v in case_row.items() if k not in _ROW_ONLY_CASE_KEYS},
            )
            _clean(case, field_prefix=f"input_sets[{set_index}].cases[{position}]", exclude=("input_set", "pack_version", "challenge"))
            case_objs.append(case)
    Case.objects.bulk_create(case_objs, batch_size=500)

    audit_record(
        workspace=workspace,
        actor=user,
        action="pack.published",
        target=f"{pack.slug} v{version.number}",
        metadata={"pack_version_id": version.pk, "manifest_checksum": version.manifest_checksum},
    )
    # The raw YAML as published (spec §6.2 "bundle artifact"); last, so a failure above leaves no file.
    try:
        artifact_create_from_bytes(
            workspace=workspace,
            user=user,
            data=version.raw_yaml.encode(),
            name=f"{pack.slug}-v{version.number}.yaml",
            kind=ArtifactKind.PACK_BUNDLE,
            metadata={
                "pack_id": pack.pk,
                "pack_version_id": version.pk,
                "pack_slug": pack.slug,
                "pack_name": pack.name,
                "version_number": version.number,
            },
        )
    except ContentRefused as exc:  # e.g. ARTIFACT_MAX_BYTES set below the bundle's size
        raise PackInvalid([{"field": "", "message": f"the bundle cannot be stored as an artifact: {exc.message}", "line": None}]) from exc
    return version


def _check_choice(value: str, choices: type, field: str) -> None:
    if value not in choices.values:  # type: ignore[attr-defined]
        raise DomainError(f"Must be one of {', '.join(choices.values)}.", field=field)  # type: ignore[attr-defined]


@transaction.atomic
def pack_version_set_lifecycle(*, version: PackVersion, lifecycle_status: str, user: Any) -> PackVersion:
    """The one change a published version allows."""
    _check_choice(lifecycle_status, PackVersion.Lifecycle, "lifecycle_status")
    old = version.lifecycle_status
    if old == lifecycle_status:
        return version
    updated = PackVersion.objects.filter(pk=version.pk, lifecycle_status=old).update(lifecycle_status=lifecycle_status)
    if updated != 1:
        raise Conflict("The version's lifecycle changed meanwhile; reload the page and try again.", field="lifecycle_status")
    version.lifecycle_status = lifecycle_status
    audit_record(
        workspace=version.workspace,
        actor=user,
        action="pack_version.lifecycle_changed",
        target=f"{version.pack.slug} v{version.number}",
        metadata={"from": old, "to": lifecycle_status},
    )
    return version


@transaction.atomic
def pack_set_lifecycle(*, pack: Pack, lifecycle_status: str, user: Any) -> Pack:
    _check_choice(lifecycle_status, Pack.Lifecycle, "lifecycle_status")
    old = pack.lifecycle_status
    if old == lifecycle_status:
        return pack
    pack.lifecycle_status = lifecycle_status
    pack.save(update_fields=["lifecycle_status", "updated_at"])
    audit_record(
        workspace=pack.workspace,
        actor=user,
        action="pack.lifecycle_changed",
        target=pack.slug,
        metadata={"from": old, "to": lifecycle_status},
    )
    return pack
