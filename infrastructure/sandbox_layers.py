"""What a pack's sandbox needs beyond the base one, checked before a run and built by the worker.

``sandbox.additional_packages`` and ``sandbox.sandbox_template_id`` (a :class:`SandboxTemplate`:
its packages and read-only paths) become one package layer (``engine/sandbox/packages.py``) and
read-only binds. Run creation calls :func:`sandbox_preflight` (an unknown template, a package the
operator refuses or apt does not know, a template path missing on this host: a 400 naming it,
never an agent failure); the case's worker calls :func:`sandbox_prepare` before the sandbox starts.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from django.conf import settings

from core.errors import DomainError
from engine.sandbox import SandboxConfig, SandboxConfigError
from engine.sandbox.packages import PACKAGES_MOUNT, PackageError, PackagePolicy, check_policy, ensure_layer, layer_env, normalise, resolve
from infrastructure.models import SandboxTemplate

FIELD = "pack_version_id"


@dataclasses.dataclass(frozen=True, slots=True)
class SandboxNeeds:
    template_id: str
    packages: tuple[str, ...]
    read_only_paths: tuple[str, ...]


def package_policy() -> PackagePolicy:
    return PackagePolicy(
        cache_dir=str(settings.SANDBOX_PACKAGES_CACHE_DIR),
        allow=frozenset(settings.SANDBOX_PACKAGES_ALLOW),
        deny=frozenset(settings.SANDBOX_PACKAGES_DENY),
        max_layer_bytes=settings.SANDBOX_PACKAGES_MAX_LAYER_BYTES,
        max_cache_bytes=settings.SANDBOX_PACKAGES_MAX_CACHE_BYTES,
        enabled=settings.SANDBOX_PACKAGES_ENABLED,
    )


def sandbox_template_ids() -> frozenset[str]:
    return frozenset(SandboxTemplate.objects.values_list("template_id", flat=True))


def sandbox_needs(config: SandboxConfig) -> SandboxNeeds:
    """The packages and paths of ``config``'s pack and template; raises a DomainError for an unknown template."""
    packages, paths = list(config.packages), []
    if config.template_id:
        template = SandboxTemplate.objects.filter(template_id=config.template_id).first()
        if template is None:
            raise DomainError(
                f'This pack asks for sandbox template "{config.template_id}" (version.sandbox.sandbox_template_id), which this '
                "installation does not define: ask an operator to add it (admin, Sandbox templates), or publish a version without it.",
                field=FIELD,
                code="sandbox_template_unknown",
            )
        packages += [p for p in template.packages if isinstance(p, str)]
        paths = [p for p in template.read_only_paths if isinstance(p, str)]
    return SandboxNeeds(config.template_id, normalise(packages), tuple(paths))


def sandbox_preflight(manifest: dict[str, Any]) -> None:
    """Refuse, before any case runs, a sandbox this installation cannot provide."""
    if (manifest.get("execution_mode") or (manifest.get("version") or {}).get("execution_mode")) == "prompt_eval":
        return  # no sandbox
    try:
        config = SandboxConfig.from_manifest(manifest)
    except SandboxConfigError as exc:
        raise DomainError(f"This pack's sandbox cannot be built here: {exc}. Publish a corrected version.", field=FIELD) from None
    needs = sandbox_needs(config)
    for path in needs.read_only_paths:
        if not os.path.exists(path):
            raise DomainError(
                f'Sandbox template "{needs.template_id}" binds {path}, which does not exist on this installation: ask an operator to '
                "fix the template.",
                field=FIELD,
                code="sandbox_unavailable",
            )
    if not needs.packages:
        return
    try:
        check_policy(needs.packages, package_policy())
        resolve(needs.packages)
    except PackageError as exc:
        raise DomainError(
            f"This pack's sandbox package {exc.package or ', '.join(needs.packages)} cannot be installed: {exc.message} "
            "(version.sandbox.additional_packages or its sandbox template). Ask an operator, or publish a version without it.",
            field=FIELD,
            code="package_unavailable",
            extra={"package": exc.package},
        ) from None


def sandbox_prepare(config: SandboxConfig) -> None:
    """Build (or find) the package layer and add it and the template's paths to ``config``.
    Raises :class:`SandboxConfigError` (the case fails as a sandbox error, not an agent one)."""
    try:
        needs = sandbox_needs(config)
    except DomainError as exc:
        raise SandboxConfigError(exc.message) from None
    binds = [(path, path) for path in needs.read_only_paths]
    if needs.packages:
        try:
            layer = ensure_layer(needs.packages, package_policy())
        except PackageError as exc:
            raise SandboxConfigError(f"package {exc.package}: {exc.message}") from None
        binds.append((layer, PACKAGES_MOUNT))
        config.env_vars = {**config.env_vars, **layer_env(layer)}
    config.read_only_binds = tuple(binds)
