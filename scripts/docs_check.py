"""The docs' examples checked against the code, without running them:

- every TOML block loads with ``load_settings``;
- every ``qrag-qdrant ...`` command line parses against the CLI (click's own parser; nothing runs);
- every config key (``retrieval.min_confidence``) and ``QRAG_*`` variable named in the docs exists;
- every ``/v1/...`` path, ``/healthz``, ``/readyz`` and ``/metrics`` named in the docs is a route of the service;
- every ``QRAG_*`` variable the package reads itself (``os.environ``, not a setting) is named in the docs;
- the package map in docs/design.md names every module of the package, and only modules it has;
- every Python block passes ``mypy --strict``, the names it leaves to the reader (``READER_NAMES``)
  declared first.

    python scripts/docs_check.py          # prints each problem with its file and line; exit 1 if any
"""

from __future__ import annotations

import importlib
import re
import shlex
import shutil
import sys
import tempfile
import tomllib
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer
from pydantic import BaseModel
from starlette.routing import Mount

REPO = Path(__file__).resolve().parent.parent
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)
#: a command line inside a shell block: after a prompt, an environment assignment or a venv's bin folder
COMMAND = re.compile(r"^(?:\$ )?(?:[A-Z_]+=\S+ )*(?:\.venv/bin/|venv/bin/)?(qrag-qdrant(?: .*)?)$")
PYPROJECT = re.compile(r"^\[+(project|tool|build-system)\b", re.MULTILINE)
#: `section.key` in backticks, where section is a section of the settings
CONFIG_KEY = re.compile(r"`([a-z_]+(?:\.[a-z_]+)+)(?: = [^`]*)?`")
ENV_VAR = re.compile(r"\bQRAG_[A-Z0-9_]+\b")
HTTP_PATH = re.compile(r"(?<![\w/.:])(/v1/[\w/{}.-]*|/healthz|/readyz|/metrics)(?![\w/])")
#: variables that are not settings and that no ``os.environ`` read names (``read_variables`` finds
#: those): eval's data folder (read through a constant), the compose file's model server key
NOT_SETTINGS = {"QRAG_DATA", "QRAG_MODEL_SERVER_KEY"}
#: the tests' own variables (QRAG_TEST_QDRANT_URL, ...)
TEST_VARIABLE = "QRAG_TEST_"
#: `name.suffix` in backticks that is a file, not a key
FILE_SUFFIXES = {"env", "toml", "json", "jsonl", "yml", "yaml", "md", "py", "txt", "example", "npz"}


@dataclass(frozen=True)
class Problem:
    file: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.message}"


def doc_files() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def blocks(text: str) -> Iterator[tuple[str, str, int]]:
    """(language, body, line of the body's first line) of every fenced block."""
    for match in FENCE.finditer(text):
        yield match[1], match[2], text.count("\n", 0, match.start(2)) + 1


def command_lines(body: str) -> Iterator[tuple[str, int]]:
    """Each ``qrag-qdrant`` command of a shell block, with its line offset; chains split at && ; |."""
    for offset, raw in enumerate(body.splitlines()):
        for part in re.split(r"\s*(?:&&|;|\|\|?)\s*", raw.strip()):
            found = COMMAND.match(part.strip())
            if found:
                yield found[1], offset


def parse_error(root: Any, line: str) -> str | None:
    """Why the CLI's own parser refuses this command line, or None when it parses. Typer carries
    its own copy of click, so its commands and errors are matched by what they do, not by class."""
    try:
        words = shlex.split(line, comments=True)[1:]
    except ValueError as exc:
        return f"not a shell line: {exc}"
    context: Any = None
    command, name = root, "qrag-qdrant"
    try:
        while True:
            context = command.make_context(name, list(words), parent=context, resilient_parsing=False)
            rest = [*getattr(context, "_protected_args", []), *context.args]
            if not hasattr(command, "resolve_command") or not rest:
                return None
            name, command, words = command.resolve_command(context, rest)
            if command is None:
                return f"no command {name!r}"
    except typer.Exit:  # --help, --version
        return None
    except Exception as exc:
        if not hasattr(exc, "format_message"):
            raise
        param = getattr(exc, "param", None)
        if type(getattr(param, "type", None)).__name__ == "Path" and "does not exist" in str(exc):
            return None  # a path of the reader's own
        return str(exc.format_message())


def section_fields(model: type[BaseModel], path: list[str]) -> bool:
    """Whether ``path`` names a field of the settings model (nested sections followed; a dict-valued
    field such as ``service.quotas`` takes any key below it)."""
    field = model.model_fields.get(path[0])
    if field is None:
        return False
    if len(path) == 1:
        return True
    annotation = field.annotation
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return section_fields(annotation, path[1:])
    return getattr(annotation, "__origin__", None) is dict


def names_code(path: list[str]) -> bool:
    """Whether ``a.b.c`` is a file name or a name in the package (``generation.register_backend``)."""
    if path[-1] in FILE_SUFFIXES:
        return True
    try:
        module = importlib.import_module("qrag_qdrant." + ".".join(path[:-1]))
    except ImportError:
        return False
    return hasattr(module, path[-1])


def env_names(model: type[BaseModel], prefix: str = "QRAG_") -> set[str]:
    names = set()
    for name, field in model.model_fields.items():
        variable = f"{prefix}{name.upper()}"
        names.add(variable)
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            names |= env_names(annotation, f"{variable}_")
    return names


def route_patterns() -> list[re.Pattern[str]]:
    """The service's paths as its OpenAPI document lists them, ``{name}`` matching any segment, and
    its mounts (MCP, the page's files), which serve everything below them."""
    from qrag_qdrant.config.settings import load_settings
    from qrag_qdrant.service.app import create_app
    from qrag_qdrant.service.auth.keys import KeyFile

    with tempfile.TemporaryDirectory() as folder:
        settings = load_settings(store=Path(folder) / "store")
        app = create_app(settings, keys=KeyFile(Path(folder) / "keys.json"), embedder=object())  # type: ignore[arg-type]
        paths = list(app.openapi()["paths"])
        mounts = [route.path for route in app.routes if isinstance(route, Mount)]
    patterns = [re.compile("^" + re.sub(r"\\\{[^}]*\\\}", "[^/]+", re.escape(path)) + "/?$") for path in paths]
    return patterns + [re.compile(f"^{re.escape(mount)}(/.*)?$") for mount in mounts]


def check_blocks(name: str, text: str, cli: Any) -> list[Problem]:
    """TOML blocks load as configs (a package's pyproject.toml as TOML); command lines parse."""
    problems = []
    for language, body, first in blocks(text):
        if language == "toml":
            if (why := toml_error(body)) is not None:
                problems.append(Problem(name, first, why))
        elif language in ("bash", "console", "shell", "sh", ""):
            problems += [
                Problem(name, first + offset, f"{line!r}: {why}")
                for line, offset in command_lines(body)
                if (why := parse_error(cli, line)) is not None
            ]
    return problems


def toml_error(body: str) -> str | None:
    from qrag_qdrant.config.settings import load_settings
    from qrag_qdrant.errors import ConfigError

    if PYPROJECT.search(body):  # a package's pyproject.toml: TOML, not a config
        try:
            tomllib.loads(body)
        except tomllib.TOMLDecodeError as exc:
            return f"not TOML: {exc}"
        return None
    with tempfile.TemporaryDirectory() as folder:
        config = Path(folder) / "example.toml"
        config.write_text(body)
        try:
            load_settings(config)
        except ConfigError as exc:
            return f"TOML block does not load: {exc}"
    return None


def check_names(name: str, text: str, routes: list[re.Pattern[str]], read: Collection[str] = ()) -> list[Problem]:
    """Config keys, QRAG_* variables (a setting's, or one of ``read``, those the package reads
    itself) and service paths named anywhere in the text exist."""
    from qrag_qdrant.config.settings import Settings

    sections = {
        key
        for key, f in Settings.model_fields.items()
        if isinstance(f.annotation, type) and issubclass(f.annotation, BaseModel)
    }
    known_env, open_env = env_names(Settings) | NOT_SETTINGS | set(read), dict_env(Settings)
    problems = []
    for number, line in enumerate(text.splitlines(), 1):
        problems += [
            Problem(name, number, f"no config key {key}")
            for key in CONFIG_KEY.findall(line)
            if key.split(".")[0] in sections
            and not section_fields(Settings, key.split("."))
            and not names_code(key.split("."))
        ]
        problems += [
            Problem(name, number, f"no setting reads {variable}")
            for variable in ENV_VAR.findall(line)
            if not variable.startswith(TEST_VARIABLE)
            and variable not in known_env
            and not any(variable.startswith(f"{v}_") for v in open_env)
        ]
        problems += [
            Problem(name, number, f"the service has no route {path}")
            for path in HTTP_PATH.findall(line)
            if path != "/v1/" and not any(route.match(path.rstrip(".")) for route in routes)
        ]
    return problems


def dict_env(model: type[BaseModel], prefix: str = "QRAG_") -> set[str]:
    """Variables of dict-valued settings, under which any key may follow."""
    found = set()
    for name, field in model.model_fields.items():
        variable = f"{prefix}{name.upper()}"
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            found |= dict_env(annotation, f"{variable}_")
        elif getattr(annotation, "__origin__", None) is dict:
            found.add(variable)
    return found


#: a variable the code reads itself (not a setting): ``os.environ.get("QRAG_X")``, ``environ["QRAG_X"]``, ``getenv``
READ_VARIABLE = re.compile(r"""(?:environ(?:\.get)?\(?\[?|getenv\()\s*["'](QRAG_[A-Z0-9_]+)["']""")


def read_variables() -> dict[str, tuple[str, int]]:
    """Each ``QRAG_*`` variable the package reads outside its settings, with the first place it does."""
    found: dict[str, tuple[str, int]] = {}
    for path in sorted((REPO / "qrag_qdrant").rglob("*.py")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            for variable in READ_VARIABLE.findall(line):
                found.setdefault(variable, (path.relative_to(REPO).as_posix(), number))
    return found


#: names a Python example leaves to the reader (a key, the reader's own server call), declared
#: before the example so that mypy checks the rest of it
READER_NAMES = {
    "KEY": 'KEY = "a team key"',
    "TEAM_KEY": 'TEAM_KEY = "a team key"',
    "my_server_chat": "def my_server_chat(messages: list[dict[str, str]]) -> collections.abc.Iterator[str]: yield ''",
    "mirror_bucket": "def mirror_bucket(bucket: str, folder: pathlib.Path) -> None: ...",
}
MYPY_LINE = re.compile(r"^example_(\d+)\.py:(\d+): error: (.*)$")


def check_python(texts: dict[str, str]) -> list[Problem]:
    """Every Python block of the pages, type-checked with ``mypy --strict`` as a module of its own
    (in a folder under mypy's cache, kept, so a second run reads the package's types from there)."""
    from mypy import api

    examples = [
        (name, first, body)
        for name, text in texts.items()
        for language, body, first in blocks(text)
        if language == "python"
    ]
    folder = REPO / ".mypy_cache" / "docs-examples"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    preambles = []
    for number, (_, _, body) in enumerate(examples):
        declared = [line for name, line in READER_NAMES.items() if re.search(rf"\b{name}\b", body)]
        preamble = ["import collections.abc", "import pathlib", *declared] if declared else []
        preambles.append(len(preamble))
        (folder / f"example_{number}.py").write_text("\n".join([*preamble, body]))
    if not examples:
        return []
    # the package is found in the checkout, from any working folder
    (folder / "mypy.ini").write_text(f"[mypy]\nmypy_path = {REPO}\n")
    cache = REPO / ".mypy_cache" / "docs-cache"
    arguments = ["--config-file", str(folder / "mypy.ini"), "--strict", "--no-error-summary", "--cache-dir", str(cache)]
    report, _, _ = api.run([*arguments, str(folder)])
    problems = []
    for line in report.splitlines():
        found = MYPY_LINE.match(Path(line.split(":", 1)[0]).name + ":" + line.split(":", 1)[1]) if ":" in line else None
        if found:
            number, at, message = int(found[1]), int(found[2]), found[3]
            name, first, _ = examples[number]
            problems.append(Problem(name, first + at - 1 - preambles[number], f"mypy --strict: {message}"))
    return problems


DESIGN = "docs/design.md"
#: a module's file named in the package map
MODULE_FILE = re.compile(r"\b(\w+)\.py\b")


def check_map(text: str, package: Path = REPO / "qrag_qdrant") -> list[Problem]:
    """The package map (the first block under "## Map of the package") against the package's
    modules: each one it names exists, and each module is named."""
    start = text.index("## Map of the package")
    body_at = text.index("```", start) + 3
    body = text[body_at : text.index("```", body_at)]
    first_line = text[:body_at].count("\n") + 1
    modules = {path.name for path in package.rglob("*.py") if path.name != "__init__.py"}
    problems = [
        Problem(DESIGN, first_line + number, f"the package map names {name}.py, which the package does not have")
        for number, line in enumerate(body.splitlines())
        for name in MODULE_FILE.findall(line)
        if f"{name}.py" not in modules
    ]
    named = {f"{name}.py" for name in MODULE_FILE.findall(body)}
    problems += [
        Problem(DESIGN, first_line, f"the package map does not name {module}") for module in sorted(modules - named)
    ]
    return problems


def check(files: list[Path] | None = None) -> list[Problem]:
    from qrag_qdrant.cli.app import app

    cli = typer.main.get_command(app)
    routes = route_patterns()
    read = read_variables()
    texts = {path.relative_to(REPO).as_posix(): path.read_text() for path in files or doc_files()}
    problems = []
    for name, text in texts.items():
        problems += check_blocks(name, text, cli) + check_names(name, text, routes, read)
    if files is None:  # the whole docs: every variable the code reads is named somewhere, the map is whole
        problems += check_map(texts[DESIGN]) if DESIGN in texts else []
        problems += check_python(texts)
        docs = "\n".join(texts.values())
        problems += [
            Problem(where, number, f"{variable} is read here and named in no doc")
            for variable, (where, number) in read.items()
            if not re.search(rf"\b{variable}\b", docs)
        ]
    return problems


def main() -> int:
    problems = check()
    for problem in problems:
        print(problem)
    print(f"{len(problems)} problems in the docs' examples", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
