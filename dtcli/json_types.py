"""The shapes of plain data as it comes in and goes out: JSON as `json.loads` gives it (a plan,
a frontier, a history row read back), and YAML as project/yamlio.py gives it (a value a user
wrote in dt_project.yml, a table's .yml or `config()`, before project/ checks and types it).
Typed readers (`from_dict`, project/table_values.py) turn these into dataclasses."""

from __future__ import annotations

from datetime import date, datetime
from typing import ForwardRef, Union

# (The recursive references name this module, so that typing.get_type_hints resolves them from
# a class of any module that uses these types.)
_JSON, _YAML = ForwardRef("Json", module=__name__), ForwardRef("Yaml", module=__name__)

# A JSON value; a JSON object is what every `to_dict` writes and every `from_dict` reads.
Json = Union[str, int, float, bool, None, list[_JSON], dict[str, _JSON]]
JsonObject = dict[str, Json]

# A YAML value as the safe loader builds it: JSON's, and the dates and times YAML knows.
Yaml = Union[str, int, float, bool, None, date, datetime, list[_YAML], dict[str, _YAML]]
YamlMapping = dict[str, Yaml]
