"""Validation of tool arguments against a tool's JSON-schema ``parameters``.

Tool schemas use the subset of JSON Schema that function-calling chat templates use: ``type``
(one name or a list), ``properties``, ``required``, ``additionalProperties`` (bool), ``enum``,
``minimum``/``maximum``, ``minLength``/``maxLength``, ``items``, ``minItems``/``maxItems``, plus
the annotations ``description``, ``title``, ``default`` and ``examples``. :func:`check_schema`
rejects anything else when a tool is defined (a programmer error, raised early), so
:func:`validate_arguments` never meets a keyword it would silently ignore.

Validation is written here rather than taken from ``jsonschema`` because its messages are
read by a language model: each names the argument path, what was expected and what was
given, in one short sentence, and core dependencies stay light.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from rllm_envs.error import InvalidEnvConfig

__all__ = ["check_schema", "validate_arguments", "SUPPORTED_KEYWORDS"]

#: Keywords :func:`validate_arguments` understands (annotations are accepted and ignored).
SUPPORTED_KEYWORDS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "enum",
        "minimum",
        "maximum",
        "minLength",
        "maxLength",
        "items",
        "minItems",
        "maxItems",
        "description",
        "title",
        "default",
        "examples",
    }
)
_TYPES = frozenset({"string", "integer", "number", "boolean", "array", "object", "null"})
#: Longest value shown back in a message (a 1 MB argument must not become a 1 MB observation).
_SHOW = 60


def check_schema(schema: Mapping[str, Any], *, where: str = "parameters") -> None:
    """Raise :class:`InvalidEnvConfig` if ``schema`` uses keywords outside the supported subset.

    Args:
        schema: A JSON schema (the ``parameters`` of a tool, or a nested property schema).
        where: Path used in the error message.
    """
    if not isinstance(schema, Mapping):
        raise InvalidEnvConfig(f"Expects the schema at `{where}` to be a dict, actual: {schema!r}.")
    unknown = set(schema) - SUPPORTED_KEYWORDS
    if unknown:
        raise InvalidEnvConfig(
            f"Schema at `{where}` uses unsupported keyword(s) {sorted(unknown)}; supported: "
            f"{sorted(SUPPORTED_KEYWORDS)}."
        )
    types = schema.get("type")
    for name in [types] if isinstance(types, str) else list(types or []):
        if name not in _TYPES:
            raise InvalidEnvConfig(
                f"Schema at `{where}` has unknown type {name!r}; expects one of {sorted(_TYPES)}."
            )
    for key, sub in dict(schema.get("properties", {})).items():
        check_schema(sub, where=f"{where}.{key}")
    if "items" in schema:
        check_schema(schema["items"], where=f"{where}[]")
    required = schema.get("required", [])
    props = schema.get("properties")
    if props is not None and any(r not in props for r in required):
        raise InvalidEnvConfig(f"Schema at `{where}` requires properties it does not define.")


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def _matches(value: Any, type_name: str) -> bool:
    actual = _type_name(value)
    if type_name == "number":
        return actual in ("integer", "number")
    if type_name == "integer":
        # JSON has one number type: 3.0 is an integer in JSON Schema (draft 6 and later).
        return actual == "integer" or (actual == "number" and float(value).is_integer())
    return actual == type_name


def _show(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= _SHOW else text[: _SHOW - 3] + "..."


def validate_arguments(
    schema: Mapping[str, Any], arguments: Any, *, path: str = "arguments"
) -> list[str]:
    r"""Check ``arguments`` against ``schema``; return the problems found (empty if valid).

    Args:
        schema: The tool's ``parameters`` schema (checked with :func:`check_schema`).
        arguments: The decoded arguments of one call (model output: any JSON value).
        path: Name of the checked value in messages.

    Returns:
        One short, model-readable sentence per problem, e.g.
        ``"arguments.days: expected integer, got string \\"3\\""``.
    """
    errors: list[str] = []
    types = schema.get("type")
    if types is not None:
        names = [types] if isinstance(types, str) else list(types)
        if not any(_matches(arguments, t) for t in names):
            expected = " or ".join(names)
            return [f"{path}: expected {expected}, got {_type_name(arguments)} {_show(arguments)}"]
    if "enum" in schema and arguments not in schema["enum"]:
        options = ", ".join(_show(v) for v in schema["enum"])
        errors.append(f"{path}: must be one of {options}; got {_show(arguments)}")
    if isinstance(arguments, int | float) and not isinstance(arguments, bool):
        if "minimum" in schema and arguments < schema["minimum"]:
            errors.append(f"{path}: must be >= {schema['minimum']}, got {_show(arguments)}")
        if "maximum" in schema and arguments > schema["maximum"]:
            errors.append(f"{path}: must be <= {schema['maximum']}, got {_show(arguments)}")
    if isinstance(arguments, str):
        if "minLength" in schema and len(arguments) < schema["minLength"]:
            errors.append(f"{path}: must have at least {schema['minLength']} characters")
        if "maxLength" in schema and len(arguments) > schema["maxLength"]:
            errors.append(
                f"{path}: must have at most {schema['maxLength']} characters, got {len(arguments)}"
            )
    if isinstance(arguments, list | tuple):
        if "minItems" in schema and len(arguments) < schema["minItems"]:
            errors.append(f"{path}: must have at least {schema['minItems']} items")
        if "maxItems" in schema and len(arguments) > schema["maxItems"]:
            errors.append(f"{path}: must have at most {schema['maxItems']} items")
        if "items" in schema:
            for i, item in enumerate(arguments[:100]):
                errors += validate_arguments(schema["items"], item, path=f"{path}[{i}]")
    if isinstance(arguments, Mapping):
        props: Mapping[str, Any] = schema.get("properties", {})
        for name in schema.get("required", []):
            if name not in arguments:
                errors.append(f"{path}: missing required argument `{name}`")
        for name, value in arguments.items():
            if name in props:
                errors += validate_arguments(props[name], value, path=f"{path}.{name}")
            elif schema.get("additionalProperties", True) is False:
                known = ", ".join(f"`{p}`" for p in props) or "none"
                errors.append(f"{path}: unknown argument `{str(name)[:_SHOW]}` (allowed: {known})")
    return errors
