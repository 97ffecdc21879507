"""The shape of a JSON document as `json.loads` returns it: what runai prints, describe
documents, run.json and the submission record. Readers take `object` (or `Mapping[str, object]`)
and narrow with isinstance, since none of these documents is ours to trust."""

from __future__ import annotations

from typing import TypeAlias

JSON: TypeAlias = "None | bool | int | float | str | list[JSON] | dict[str, JSON]"
JSONObject: TypeAlias = "dict[str, JSON]"
