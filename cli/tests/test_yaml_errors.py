"""A broken YAML file is named with its line and column in plain words, without PyYAML's quoted
source and caret (issue 25)."""

from __future__ import annotations

import pytest
from agentclash_cli.ci_config import read_yaml_mapping
from agentclash_cli.client import CliError


def test_a_broken_yaml_file_says_where_without_a_caret(tmp_path):
    path = tmp_path / "ci.yaml"
    path.write_text("pack: p\n  agents: [a\n", encoding="utf-8")
    with pytest.raises(CliError) as caught:
        read_yaml_mapping(path, "a mapping")
    message = str(caught.value)
    assert f"{path} is not valid YAML (line 2, column" in message and "^" not in message and "\n" not in message
