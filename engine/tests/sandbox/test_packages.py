"""``sandbox.additional_packages``: a real Debian package the base sandbox lacks (``tree``) is
fetched once into a read-only layer, bound into a real sandbox, and runs there; what the operator
or apt refuses is a :class:`PackageError` naming the package."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

import pytest

from engine.sandbox import SandboxConfig, create_sandbox, rootfs
from engine.sandbox.packages import PACKAGES_MOUNT, PackageError, PackagePolicy, check_policy, ensure_layer, layer_env, resolve
from engine.tests.tools.support import requires_bwrap

PACKAGE = "tree"


def _apt_usable() -> str:
    """Why this machine cannot fetch packages, or "" when it can."""
    if not all(shutil.which(tool) for tool in ("apt-get", "apt-cache", "dpkg-deb", "dpkg-query")):
        return "apt-get, apt-cache, dpkg-deb or dpkg-query is missing"
    shown = subprocess.run(["apt-cache", "show", "--no-all-versions", PACKAGE], capture_output=True, text=True)
    if shown.returncode != 0:
        return f"apt has no package lists naming {PACKAGE} (run apt-get update)"
    if shutil.which(PACKAGE, path="/usr/bin:/bin:/usr/sbin:/sbin"):
        return f"the host already has {PACKAGE}, so it proves nothing"
    return ""


requires_apt = pytest.mark.skipif(bool(_apt_usable()), reason=_apt_usable() or "apt usable")


@pytest.fixture(scope="module")
def cache_dir():
    directory = tempfile.mkdtemp(prefix="agentclash-packages-")  # not under pytest's 0700 base: the sandbox uid binds it
    os.chmod(directory, 0o755)
    yield directory
    subprocess.run(["chmod", "-R", "u+w", directory], check=False)
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(params=["skeleton", "per-file binds"])
def layout(request, monkeypatch) -> str:
    if request.param == "per-file binds":
        monkeypatch.setattr(rootfs, "skeleton_path", lambda directory, entries: None)
    return str(request.param)


@requires_apt
@requires_bwrap
def test_an_installed_package_runs_in_a_real_sandbox_from_a_read_only_layer(cache_dir, layout):
    policy = PackagePolicy(cache_dir=cache_dir)
    layer = ensure_layer([PACKAGE], policy)
    assert os.path.isfile(os.path.join(layer, "usr", "bin", PACKAGE))
    assert ensure_layer([PACKAGE.upper(), PACKAGE], policy) == layer  # one layer per set, built once
    config = SandboxConfig(read_only_binds=((layer, PACKAGES_MOUNT),), env_vars=layer_env(layer))
    sandbox = create_sandbox(config)
    try:
        sandbox.write_file("/workspace/a/b.txt", b"x")
        result = sandbox.exec([PACKAGE, "/workspace"])
        assert result.exit_code == 0, result.stderr
        assert "b.txt" in result.stdout and "2 directories, 1 file" in result.stdout
        # the agent cannot change the layer the next sandbox gets
        write = sandbox.exec(["cp", "/workspace/a/b.txt", f"{PACKAGES_MOUNT}/usr/bin/{PACKAGE}"])
        assert write.exit_code != 0
        assert sandbox.exec(["touch", "/opt/new"]).exit_code != 0
    finally:
        sandbox.destroy()


@requires_bwrap
def test_a_sandbox_without_packages_does_not_have_the_package():
    sandbox = create_sandbox(SandboxConfig())
    try:
        result = sandbox.exec(["/usr/bin/env", PACKAGE, "--version"])
        assert result.exit_code != 0
    finally:
        sandbox.destroy()


@requires_apt
def test_an_unknown_package_is_an_error_naming_it(cache_dir):
    with pytest.raises(PackageError) as caught:
        resolve([PACKAGE, "agentclash-no-such-package"])
    assert caught.value.package == "agentclash-no-such-package"
    assert "agentclash-no-such-package" in caught.value.message


def test_the_operator_denylist_and_allowlist_refuse_by_name():
    with pytest.raises(PackageError) as denied:
        check_policy(["jq", "tree"], PackagePolicy(cache_dir="/nonexistent", deny=frozenset({"tree"})))
    assert denied.value.package == "tree" and "denylist" in denied.value.message
    with pytest.raises(PackageError) as outside:
        check_policy(["jq", "tree"], PackagePolicy(cache_dir="/nonexistent", allow=frozenset({"jq"})))
    assert outside.value.package == "tree" and "allowlist" in outside.value.message
    with pytest.raises(PackageError):
        check_policy(["tree"], PackagePolicy(cache_dir="/nonexistent", enabled=False))
    check_policy(["jq"], PackagePolicy(cache_dir="/nonexistent", allow=frozenset({"jq"})))


@requires_apt
def test_a_layer_over_the_size_limit_is_refused_and_leaves_nothing_behind(tmp_path):
    cache = str(tmp_path / "cache")
    with pytest.raises(PackageError) as caught:
        ensure_layer([PACKAGE], PackagePolicy(cache_dir=cache, max_layer_bytes=1000))
    assert "more than this installation allows" in caught.value.message
    assert [n for n in os.listdir(cache) if not n.startswith(".lock")] == []


def test_the_layer_comes_after_the_system_in_path():
    env = layer_env()
    assert env["PATH"].startswith("/usr/local/sbin:")
    assert env["PATH"].index(PACKAGES_MOUNT) > env["PATH"].index("/usr/bin")
