"""The one registry pattern every extension point uses, and the one install hint.

Stores, generation backends, document loaders, query expansions and BM25 sources each keep a
``Registry``: the entry points of its group (pyproject.toml's ``[project.entry-points."<group>"]``)
and, over them, what in-process code registered with ``register``. The built-ins are entry
points of the package itself, so they are found exactly as a plug-in's are.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from importlib.metadata import EntryPoint, entry_points
from types import ModuleType
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from .errors import ConfigError

Item = TypeVar("Item")


def install_hint(extra: str) -> str:
    return f"pip install 'qrag-qdrant[{extra}]'"


def require(module: str, extra: str, needed_by: str = "", error: type[Exception] = ConfigError) -> ModuleType:
    """Import an optional library, or raise ``error``: "<needed_by> needs the <extra> extra: pip install ..."."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise error(f"{needed_by} needs the {extra} extra: {install_hint(extra)}".lstrip()) from None


class Registry(Generic[Item]):
    """Named extensions of one kind: ``group``'s entry points, then in-process registrations."""

    def __init__(
        self,
        group: str,
        kind: str,
        load: Callable[[Any], Item] | None = None,
        setting: str | None = None,
        section: str | None = None,
    ):
        self.group = group
        #: the config's table of the items' own settings ("embedders": ``[embedders.<name>]``)
        self.section = section
        #: what one item is, for errors: "generation backend"
        self.kind = kind
        #: the config key that names an item, for errors: "generation.backend"
        self.setting = setting or kind
        #: turns what an entry point names into the item (a loader class into an instance)
        self.load = load or (lambda target: target)
        #: registered in this process; a test may swap it for an empty dict
        self.local: dict[str, Item] = {}
        self._points: tuple[EntryPoint, ...] | None = None

    def points(self) -> tuple[EntryPoint, ...]:
        """The group's entry points, read once per process: scanning every installed package's
        metadata costs milliseconds, and what is installed does not change under a running process."""
        if self._points is None:
            self._points = tuple(entry_points(group=self.group))
        return self._points

    def register(self, name: str, item: Item) -> None:
        self.local[name] = item

    def registered(self) -> dict[str, Item]:
        """Every item by name, each entry point loaded; an in-process registration replaces an
        entry point's of the same name."""
        found = {point.name: self.load(point.load()) for point in self.points()}
        return {**found, **self.local}

    def origins(self) -> dict[str, str]:
        """Every name and where it comes from ("qrag-qdrant 0.4.0", a plug-in package and its
        version, or "registered in this process"), without loading any of them."""
        found = {}
        for point in self.points():
            dist = getattr(point, "dist", None)
            found[point.name] = f"{dist.name} {dist.version}" if dist is not None else point.value
        return {**found, **dict.fromkeys(self.local, "registered in this process")}

    def names(self) -> list[str]:
        return sorted({point.name for point in self.points()} | set(self.local))

    def options(self, name: str, sections: Mapping[str, Mapping[str, Any]]) -> BaseModel | None:
        """``name``'s own settings: its section of ``sections`` (``[embedders.<name>]``, by the
        config key ``section``) read by the pydantic model the item declares as ``Options``; None
        when it declares none. A section naming nothing registered, a section for an item that
        takes no settings, or a value its model refuses is a one-line ConfigError."""
        for named in sections:  # every section is checked, the one in use or not: a typo is no silence
            if named not in self.names():
                raise ConfigError(
                    f"[{self.section}.{named}]: no {self.kind} {named!r}; known: {', '.join(self.names())}"
                )
            if named != name:
                self._read_options(named, sections[named])
        return self._read_options(name, sections.get(name) or {})

    def make(self, name: str, sections: Mapping[str, Mapping[str, Any]], *arguments: Any) -> Any:
        """``name``'s item called with ``arguments``, and with its own settings after them where it
        declares ``Options`` (``options``): how an embedder, a backend or a loader class is made."""
        options = self.options(name, sections)
        factory: Any = self.get(name)
        return factory(*arguments) if options is None else factory(*arguments, options)

    def _read_options(self, name: str, section: Mapping[str, Any]) -> BaseModel | None:
        declared: type[BaseModel] | None = getattr(self.get(name), "Options", None)
        if declared is None:
            if section:
                raise ConfigError(f"[{self.section}.{name}]: the {self.kind} {name!r} takes no settings")
            return None
        try:
            return declared.model_validate(dict(section))
        except ValidationError as exc:
            problem = exc.errors()[0]
            where = ".".join(str(part) for part in problem["loc"])
            raise ConfigError(f"[{self.section}.{name}] {where}: {problem['msg']}".replace(" : ", ": ")) from None

    def get(self, name: str) -> Item:
        """One item, loading only its own entry point (a server store's client is never imported
        for an embedded one)."""
        if name in self.local:
            return self.local[name]
        point = next((point for point in self.points() if point.name == name), None)
        if point is not None:
            return self.load(point.load())
        if not (known := self.names()):
            raise ConfigError(
                f"no {self.kind} is registered: reinstall qrag-qdrant (pip install -e .) so that its "
                f"entry points ({self.group}) are written"
            )
        raise ConfigError(f"{self.setting} {name!r} is not registered; known: {', '.join(known)}")
