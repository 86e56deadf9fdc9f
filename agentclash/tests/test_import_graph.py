"""The import check (scripts/import_graph.py): layers across apps, kinds inside an app, no cycles."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def graph() -> ModuleType:
    spec = importlib.util.spec_from_file_location("import_graph", ROOT / "scripts" / "import_graph.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["import_graph"] = module
    spec.loader.exec_module(module)
    return module


def test_the_project_passes_its_own_check(graph):
    violations, _ = graph.check()
    assert violations == []


@pytest.mark.parametrize(
    ("src", "dst"),
    [
        ("runs.services.create", "comparisons.services"),  # runs is below comparisons
        ("scoring.services", "runs.selectors"),  # scoring reads only the runs record
        ("regression.views", "runs.pipeline.execute"),
        ("runs.models", "scoring.models"),  # the record is below scoring
        ("packs.services", "runs.models"),
        ("core.api", "workspaces.models"),
    ],
)
def test_it_refuses_an_import_up_the_layers(graph, src, dst):
    assert graph.between_packages(src, dst, in_tests=False)


@pytest.mark.parametrize(
    ("src", "dst"),
    [
        ("scoring.services", "runs.models"),
        ("scoring.services.cases", "runs.events"),
        ("regression.views", "runs.lookups"),
        ("runs.pipeline.execute", "scoring.services"),
        ("runs.services.create", "regression.selectors"),
        ("comparisons.services", "regression.selectors"),
        ("runs.views", "engine.scoring"),
    ],
)
def test_it_allows_an_import_down_the_layers(graph, src, dst):
    assert graph.between_packages(src, dst, in_tests=False) is None


def test_pure_packages_import_nothing_of_the_project_and_nothing_imports_the_wiring(graph):
    assert graph.between_packages("engine.loop", "runs.models", in_tests=False)
    assert graph.between_packages("bundle.parse", "packs.models", in_tests=False)
    assert graph.between_packages("runs.views", "agentclash.settings", in_tests=False)
    assert graph.between_packages("runs.tests.test_api", "comparisons.models", in_tests=True) is None


@pytest.mark.parametrize(
    ("src", "dst", "allowed"),
    [
        ("runs.selectors", "runs.presenters", False),
        ("runs.selectors", "runs.services.create", False),
        ("regression.failures.selectors", "regression.failures.presenters", False),
        ("runs.presenters", "runs.services", False),
        ("runs.services.artifacts", "runs.api.serializers", False),
        ("runs.pipeline.execute", "runs.views", False),
        ("runs.presenters", "runs.selectors", True),
        ("runs.services.create", "runs.selectors", True),
        ("runs.views", "runs.services", True),
    ],
)
def test_kinds_inside_an_app_point_one_way(graph, src, dst, allowed):
    assert (graph.inside_app(src, dst) is None) is allowed


def test_it_finds_a_cycle_between_sub_packages(graph):
    edges = {"runs.hosted": {"runs.services"}, "runs.services": {"runs.hosted", "runs.models"}, "runs.pipeline": {"runs.hosted"}}
    assert graph.cycles(edges) == [["runs.hosted", "runs.services"]]
    assert graph.cycles({"runs.pipeline": {"runs.hosted"}, "runs.hosted": {"runs.services"}}) == []


def test_relative_and_function_level_imports_count(graph, tmp_path, monkeypatch):
    package = tmp_path / "runs" / "selectors"
    package.mkdir(parents=True)
    source = package / "reads.py"
    source.write_text("from ..presenters import lane_activity\n\ndef f():\n    from scoring import services\n", encoding="utf-8")
    monkeypatch.setattr(graph, "ROOT", tmp_path)
    found = graph.imports_of(source)
    assert (1, "runs.presenters.lane_activity", False) in found
    assert (4, "scoring.services", True) in found
