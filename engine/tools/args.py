"""Typed access to decoded tool arguments (a wrong JSON type = "arguments must be valid JSON")."""

from __future__ import annotations

from typing import Any


class ArgumentError(Exception):
    pass


def string(args: dict[str, Any], key: str, default: str = "") -> str:
    value = args.get(key)
    if value is None:
        return default
    if not isinstance(value, str):
        raise ArgumentError(key)
    return value


def integer(args: dict[str, Any], key: str, default: int) -> int:
    value = args.get(key)
    if value is None:
        return default
    if isinstance(value, bool):
        raise ArgumentError(key)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int):
        raise ArgumentError(key)
    return value


def boolean(args: dict[str, Any], key: str, default: bool) -> bool:
    value = args.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ArgumentError(key)
    return value


def string_map(args: dict[str, Any], key: str) -> dict[str, str]:
    value = args.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise ArgumentError(key)
    return {str(k): v for k, v in value.items()}


def string_list(args: dict[str, Any], key: str) -> list[str] | None:
    value = args.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ArgumentError(key)
    return value
