"""A plugin setting that names a sandbox backend, checked against the backend table.

    backend: Annotated[str, BackendChoice()] = Field(default="bwrap", ...)

The valid names are read from the table each time a config is validated or its JSON schema
(``enum``, which ``rlv verifiers`` and the builder page show) is made, so a backend added to
the table is a valid value without any change to the plugin.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, core_schema

from rl_verifier.internal import unknown_message
from rl_verifier_sandbox.backends import AUTO, backend_names


@dataclass(frozen=True)
class BackendChoice:
    """Field metadata: the value is ``before``, a table backend (only those holding live or
    asyncio processes with ``processes``/``async_processes``), or ``after``."""

    before: tuple[str, ...] = (AUTO,)
    after: tuple[str, ...] = ()
    processes: bool = False
    async_processes: bool = False

    def choices(self) -> tuple[str, ...]:
        names = backend_names(processes=self.processes, async_processes=self.async_processes)
        return (*self.before, *names, *self.after)

    def check(self, value: str) -> str:
        choices = self.choices()
        if value not in choices:
            raise ValueError(unknown_message("sandbox backend", value, list(choices)))
        return value

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        return core_schema.no_info_after_validator_function(self.check, handler(source))

    def __get_pydantic_json_schema__(
        self, schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        out = handler(schema)
        out["enum"] = list(self.choices())
        return out
