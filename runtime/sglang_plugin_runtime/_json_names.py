"""The one rule that turns a runtime record into JSON, shared by ``to_dict()``, the CLI's reports and the fingerprint.

A record's field name is its JSON key, except where the JSON schema (``cli-schema.json``) names it otherwise. It sits
below the serving-path modules (it imports nothing of the runtime), so their ``to_dict()`` can use it without
reaching up into the reporting modules.
"""

from __future__ import annotations

import dataclasses
from typing import Any

#: The JSON names of the runtime records' fields, where they differ.
JSON_NAMES = {"dist_name": "distribution", "dist_version": "version", "dist": "distribution", "hook_type": "type"}


def as_json(record: Any, *fields: str) -> dict[str, Any]:
    """A runtime record (a NamedTuple or a dataclass) as a JSON object under :data:`JSON_NAMES`; only ``fields``
    (JSON names) when given."""
    raw = record._asdict() if hasattr(record, "_asdict") else dataclasses.asdict(record)
    data = {JSON_NAMES.get(key, key): value for key, value in raw.items()}
    return {name: data[name] for name in fields} if fields else data
