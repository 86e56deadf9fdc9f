"""Challenge-pack bundles: parse → decode → normalise → validate → manifest (spec pack-format.md).

Pure Python; other apps code against exactly this API:

- ``process_bundle(source, *, installation=None) -> BundleResult`` (never raises): errors, and
  warnings beside them (``bundle.lint``; the installation enables the engine-dependent ones)
- ``publication_rows(manifest)``, ``referenced_secrets(manifest)``
- ``validate_composed_tool(definition, *, field_prefix="definition")``
- ``format_errors_text(errors)``, ``bundle_from_manifest(manifest)``, ``ValidationError``
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from bundle.decode import decode_document
from bundle.errors import DecodeFailure, ValidationError, ValidationWarning, format_errors_text
from bundle.lint import Installation, lint_bundle
from bundle.manifest import (
    build_manifest,
    bundle_from_manifest,
    checksum_of,
    publication_rows,
    referenced_secrets,
    stored_case_payload,
)
from bundle.misplaced import read_misplaced, relocate
from bundle.normalise import normalise_bundle
from bundle.parse import compose, line_for
from bundle.schema import BUNDLE
from bundle.validate import validate_bundle
from bundle.validate.composed_tools import validate_single_tool
from bundle.validate.json_paths import json_path_problems

__all__ = [
    "BundleResult",
    "Installation",
    "ValidationError",
    "ValidationWarning",
    "bundle_from_manifest",
    "format_errors_text",
    "process_bundle",
    "publication_rows",
    "referenced_secrets",
    "stored_case_payload",
    "validate_composed_tool",
]


@dataclasses.dataclass(slots=True)
class BundleResult:
    valid: bool
    errors: list[ValidationError]
    manifest: dict[str, Any] | None = None
    checksum: str | None = None
    bundle: dict[str, Any] | None = None
    warnings: list[ValidationWarning] = dataclasses.field(default_factory=list)

    @property
    def error_text(self) -> str:
        return format_errors_text(self.errors)


def process_bundle(source: str | bytes | Mapping[str, Any], *, installation: Installation | None = None) -> BundleResult:
    """Parse, validate and build the manifest. Every failure is a ``ValidationError``.

    Warnings come with every bundle that decodes, valid or not; ``installation`` (what the engine
    here supports) enables the checks that depend on it.
    """
    try:
        return _process(source, installation)
    except DecodeFailure as failure:
        return BundleResult(valid=False, errors=[failure.error])
    except RecursionError:
        return BundleResult(valid=False, errors=[ValidationError("", "bundle nesting is too deep", None)])
    except Exception as exc:  # noqa: BLE001 - the contract is "never raises"
        return BundleResult(
            valid=False,
            errors=[ValidationError("", f"bundle could not be processed: {type(exc).__name__}", None)],
        )


def _process(source: str | bytes | Mapping[str, Any], installation: Installation | None) -> BundleResult:
    if isinstance(source, Mapping):
        source = json.dumps(source, ensure_ascii=False)
    root = compose(source)
    bundle, decode_errors, ignored = decode_document(root, BUNDLE)
    if decode_errors:
        return BundleResult(valid=False, errors=decode_errors)
    bundle = normalise_bundle(bundle)
    notes, relocations = read_misplaced(bundle, ignored)
    problems = validate_bundle(bundle)
    if installation is not None and installation.json_path_error is not None:
        problems += json_path_problems(bundle, installation.json_path_error)
    try:
        notes += lint_bundle(bundle, installation)
    except Exception as exc:  # noqa: BLE001 - a bug in a warning must not make a bundle invalid
        notes.append(("", f"some warnings could not be computed ({type(exc).__name__})"))
    warnings = []
    for path, message in notes:
        path = relocate(path, relocations)
        warnings.append(ValidationWarning(path, message, line_for(root, path) if path else None))
    warnings.sort(key=lambda w: (w.line is None, w.line or 0))
    if problems:
        errors = []
        for field, message in problems:
            field = relocate(field, relocations)
            errors.append(ValidationError(field, message, line_for(root, field)))
        return BundleResult(valid=False, errors=errors, bundle=bundle, warnings=warnings)
    manifest = build_manifest(bundle)
    return BundleResult(valid=True, errors=[], manifest=manifest, checksum=checksum_of(manifest), bundle=bundle, warnings=warnings)


def validate_composed_tool(definition: dict[str, Any], *, field_prefix: str = "definition") -> list[ValidationError]:
    """Rules of ``tools.custom[i]`` for one tool (workspace tool resources)."""
    try:
        report = validate_single_tool(definition, field_prefix)
    except Exception as exc:  # noqa: BLE001
        return [ValidationError(field_prefix, f"could not be validated: {type(exc).__name__}")]
    return [ValidationError(field, message, None) for field, message in report.items]
