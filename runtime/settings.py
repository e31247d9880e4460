"""Declarative process settings: one frozen dataclass per process, its fields say where they come
from; flags, environment, an optional TOML file and `--help` are all derived from it.

A setting is a dataclass field made with `setting(default, env=..., help=...)`; its type is the
field's annotation (`str`, `int`, `float`, or one of them `| None`). Fields made any other way
(engine parameters, Kafka client settings) are not settings: the process fills them itself.

    add_settings_arguments(parser, Config)   # --flag-name per setting, plus --config FILE
    values = settings_from_args(Config, args, os.environ)
    Config(**values, params=..., kafka=...)

Precedence, per setting: the flag, else the environment variable (or the file its `NAME_FILE`
names: runtime._secrets.env_value), else the TOML file given by `--config FILE` or
`ADR_CONFIG_FILE` (keys are the field names, e.g. `batch_size = 500`), else the field's default.
The file's `[params]` and `[kafka]` tables are not settings: `read_shared_tables` gives them to
runtime.service, which puts them under the environment and the flags of their own kind.
An environment variable set to the empty string counts as unset, as an empty `NAME_FILE` does.
A bad flag value is argparse's usage error (exit 2). An environment value that does not parse,
a file that cannot be read or parsed, an unknown key or a key of the wrong TOML type raises
`SettingsError` (a RuntimeConfigError) naming the variable or key; the process wraps it in its
own root exception and exits 2. A setting declared `secret=True` never appears in an error
message, and `settings_repr` masks it. The short commands pass `config_file=False`: no
`--config`, and ADR_CONFIG_FILE (a service's file, in its pod) is not read.

Why not pydantic-settings: it would add pydantic and its compiled core to every image for what
is here some 150 lines, and would still need custom sources for what the processes already do:
the `NAME_FILE` convention (pydantic-settings reads a `secrets_dir` of files named after the
fields instead), the one-line `--help` with env and default, errors in each package's own root
exception. The configs stay plain frozen dataclasses that code and tests build directly.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import tomllib
import types
import typing
from collections.abc import Callable, Collection, Iterable, Mapping
from pathlib import Path
from typing import Any, Final

from runtime._errors import SettingsError
from runtime._secrets import FILE_SUFFIX, MASK, env_value, redact_settings, redact_url

CONFIG_FILE_ENV: Final = "ADR_CONFIG_FILE"
_META: Final = "adr.setting"
_MISSING: Any = dataclasses.MISSING
_KINDS: Final[dict[type, str]] = {str: "a string", int: "an integer", float: "a number"}


@dataclasses.dataclass(frozen=True, slots=True)
class Setting:
    """Where a field comes from and what `--help` says of it."""

    env: str
    help: str
    shown: str | None = None
    """The default as `--help` shows it, for defaults made per process (e.g. `hostname-pid`)."""
    secret: bool = False
    """Never shown: masked in reprs, left out of error messages; `--help` names `env_FILE`."""


def setting(
    default: Any = _MISSING,
    *,
    env: str,
    help: str,
    shown: str | None = None,
    secret: bool = False,
    default_factory: Callable[[], Any] | None = None,
) -> Any:
    """A dataclass field that is a setting: read from `--flag`, `env`, the config file."""
    meta = {_META: Setting(env, help, shown, secret)}
    if default_factory is not None:
        return dataclasses.field(default_factory=default_factory, metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


@dataclasses.dataclass(frozen=True, slots=True)
class _Field:
    name: str
    setting: Setting
    kind: type
    optional: bool
    default: Any

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def parse(self, raw: str, where: str) -> Any:
        """A flag's or variable's text as the field's type; SettingsError names `where`."""
        try:
            return self.kind(raw)
        except ValueError:
            shown = "" if self.setting.secret else f"={raw!r}"
            raise SettingsError(f"bad {where}{shown}: expected {_KINDS[self.kind]}") from None

    def check(self, value: object, where: str) -> Any:
        """A TOML value of the field's type (an integer is a fine float), else SettingsError."""
        if self.kind is float and type(value) is int:
            return float(value)
        if type(value) is not self.kind:
            shown = "" if self.setting.secret else f", got {value!r}"
            raise SettingsError(f"{where}: expected {_KINDS[self.kind]}{shown}")
        return value


_FIELDS: dict[type, tuple[_Field, ...]] = {}


def fields(cls: type) -> tuple[_Field, ...]:
    """The settings of a dataclass, in declaration order (TypeError if a type is unsupported)."""
    found = _FIELDS.get(cls)
    if found is not None:
        return found
    hints = typing.get_type_hints(cls)
    found_list = []
    for f in dataclasses.fields(cls):
        meta = f.metadata.get(_META)
        if meta is None:
            continue
        kind, optional = _kind(hints[f.name])
        default = f.default if f.default_factory is _MISSING else _MISSING
        found_list.append(_Field(f.name, meta, kind, optional, default))
    found = _FIELDS[cls] = tuple(found_list)
    return found


def _kind(hint: object) -> tuple[type, bool]:
    args = typing.get_args(hint)
    if isinstance(hint, types.UnionType) and len(args) == 2 and type(None) in args:
        (inner,) = [a for a in args if a is not type(None)]
        return _kind(inner)[0], True
    if isinstance(hint, type) and hint in _KINDS:
        return hint, False
    raise TypeError(f"a setting must be str, int, float or one of them | None, not {hint!r}")


def add_settings_arguments(
    parser: argparse.ArgumentParser, cls: type, *, config_file: bool = True
) -> None:
    """One `--flag` per setting of `cls` (help: the line, env, default), and `--config FILE`.

    Without `config_file`, neither `--config` nor ADR_CONFIG_FILE is read: for the short
    commands (`adr leaderboard`, `adr topics`, ...) run by hand inside a service's pod, whose
    ADR_CONFIG_FILE names keys they do not have.
    """
    if config_file:
        parser.add_argument(
            "--config",
            dest="config_file",
            metavar="FILE",
            default=None,
            help="TOML file of the settings below, keys as the flags with _ (namespace = 'pool1'); "
            f"flags and env win (env {CONFIG_FILE_ENV})",
        )
    for f in fields(cls):
        parser.add_argument(
            f.flag, dest=f.name, type=f.kind, default=None, help=help_line(f.setting, f.default)
        )


def help_line(s: Setting, default: Any) -> str:
    """`what it is for (env NAME; default VALUE)`; no default part when it is None."""
    shown = s.shown if s.shown is not None else default
    parts = [f"env {s.env}"]
    if shown is not None and shown is not _MISSING:
        parts.append(f"default {shown}")
    if s.secret:
        parts.append(f"or a file named by {s.env}{FILE_SUFFIX}")
    return f"{s.help} ({'; '.join(parts)})"


SHARED_TABLES: Final = ("params", "kafka")
"""Top-level tables of the file that are not settings, read alike by every service of the pool
(`read_shared_tables`): `[params]`, the engine parameters, which must be the same for all of
them, and `[kafka]`, librdkafka settings."""


def config_path(args: argparse.Namespace, environ: Mapping[str, str]) -> Path | None:
    """The TOML file: `--config`, else ADR_CONFIG_FILE where the parser took `--config`."""
    path = getattr(args, "config_file", None) or None
    if path is None and hasattr(args, "config_file"):
        path = environ.get(CONFIG_FILE_ENV) or None
    return Path(path) if path else None


def settings_from_args(
    cls: type,
    args: argparse.Namespace,
    environ: Mapping[str, str] | None = None,
    *,
    section: str | None = None,
    sections: tuple[str, ...] = (),
    only: Collection[str] | None = None,
) -> dict[str, Any]:
    """Field name -> value of every setting given by a flag, the environment or the file.

    Settings given nowhere are left out, so the dataclass's own defaults apply. In the file, the
    table named `section` holds this process's own keys, over the top-level ones; the other
    `sections` (the other services') are skipped (see `read_config_file`). With `only`, just
    those settings are read and checked (a command that uses a few of a service's settings,
    `adr rebuild`): another's variable is not read, and its key in the file must be one of
    `cls`'s (a misspelt key is still an error) but its value is not checked.
    """
    env = os.environ if environ is None else environ
    path = config_path(args, env)
    settings = fields(cls)
    in_file = read_config_file(path, settings, section, sections, only) if path else {}
    values: dict[str, Any] = {}
    for f in settings:
        if only is not None and f.name not in only:
            continue
        flag_value = getattr(args, f.name, None)
        if flag_value is not None:
            values[f.name] = flag_value
        elif raw := env_value(env, f.setting.env):  # SecretFileError: both set, or unreadable
            values[f.name] = f.parse(raw, f.setting.env)
        elif f.name in in_file:
            values[f.name] = in_file[f.name]
    return values


def _load(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except OSError as exc:
        raise SettingsError(f"cannot read config file {path}: {exc.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise SettingsError(f"config file {path} is not TOML: {exc}") from None


@dataclasses.dataclass(frozen=True, slots=True)
class SharedTables:
    """The file's `[params]` and `[kafka]` tables (SHARED_TABLES)."""

    profile: str | None = None
    """`[params]`'s `profile`: the named parameter set the other keys go on top of."""
    params: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """Engine parameter name -> its value as text, as `--param` gives it (engine.Params parses
    and checks it): a number as Python writes it, an array (`tier_shares`) comma-joined."""
    kafka: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """librdkafka setting -> its text (TOML booleans as `true`/`false`)."""


def read_shared_tables(path: Path, *, kafka: bool = True) -> SharedTables:
    """The `[params]` and `[kafka]` tables of the file (empty where absent).

    `[kafka]` values must be strings, numbers or booleans (librdkafka takes text); a nested
    table or an array there, or a table that is not a table, raises SettingsError. Without
    `kafka`, that table is neither read nor checked (left empty): for a command that takes only
    the engine parameters of the file (the short commands), which a bad `[kafka]` must not
    stop."""
    table = _load(path)
    found: dict[str, dict[str, Any]] = {}
    for name in SHARED_TABLES if kafka else ("params",):
        value = table.get(name, {})
        if not isinstance(value, dict):
            raise SettingsError(f"config file {path}: {name} must be a table, [{name}]")
        found[name] = dict(value)
    profile = found["params"].pop("profile", None)
    if profile is not None and not isinstance(profile, str):
        raise SettingsError(f"config file {path}: params.profile: expected a string")
    params: dict[str, str] = {}
    for key, value in found["params"].items():
        items = value if isinstance(value, list) else [value]
        if not items or not all(_is_number(v) or isinstance(v, str) for v in items):
            raise SettingsError(
                f"config file {path}: params.{key}: expected a number, a string or an array of them"
            )
        params[key] = ",".join(str(v) for v in items)
    settings: dict[str, str] = {}
    for key, value in found.get("kafka", {}).items():
        if isinstance(value, bool):
            settings[key] = "true" if value else "false"
        elif isinstance(value, str) or _is_number(value):
            settings[key] = str(value)
        else:
            raise SettingsError(
                f"config file {path}: kafka.{key}: expected a string, number or boolean"
            )
    return SharedTables(profile, params, settings)


def _is_number(value: object) -> bool:
    return type(value) is int or type(value) is float  # not bool, an int to isinstance


def read_config_file(
    path: Path,
    settings: Iterable[_Field],
    section: str | None = None,
    sections: tuple[str, ...] = (),
    only: Collection[str] | None = None,
) -> dict[str, Any]:
    """The TOML file's settings, checked against their fields' types (with `only`: those
    settings only; the other keys must still be known, their values are left out unchecked).

    One file may serve several services: the top-level keys are read by each (so each must know
    them: the pool's shared ones, e.g. `namespace`, `redis_url`), and a table per service, named
    as its command (`[consume]`, `[calibrate]`), holds that service's own keys, read only by it
    and winning over the top level. An unknown key, or a table that is no service's, is an
    error: a misspelt key never passes silently. The SHARED_TABLES are skipped here
    (`read_shared_tables` reads them)."""
    table = _load(path)
    by_name = {f.name: f for f in settings}
    tables = (section, *sections) if section else sections
    hint = f"; a service's own keys go under its table: {', '.join(f'[{t}]' for t in tables)}"
    own = table.get(section) if section else None
    values: dict[str, Any] = {}
    for where, items in ((None, table), (section, own or {})):
        for key, value in items.items():
            if where is None and key in SHARED_TABLES:
                continue  # read and checked by read_shared_tables
            if where is None and isinstance(value, dict):
                if key in tables:
                    continue  # a service's table: its own, read next, or another's
                raise SettingsError(
                    f"config file {path}: unknown table [{key}]{hint if tables else ''}"
                )
            f = by_name.get(key)
            name = key if where is None else f"{where}.{key}"
            if f is None:
                known = ", ".join(sorted(by_name))
                raise SettingsError(
                    f"config file {path}: unknown key {name!r} (known: {known})"
                    + (hint if tables and where is None else "")
                )
            if only is None or f.name in only:
                values[key] = f.check(value, f"config file {path}: {name}")
    return values


def settings_repr(obj: object) -> str:
    """`Name(field=value, ...)` of a dataclass, secret settings masked (a URL keeps its host)."""
    secret = {f.name for f in fields(type(obj)) if f.setting.secret}
    shown = []
    for f in dataclasses.fields(obj):  # type: ignore[arg-type]
        value = getattr(obj, f.name)
        if f.name in secret and value not in ("", None):
            value = redact_url(value) if isinstance(value, str) and "://" in value else MASK
        shown.append(f"{f.name}={value!r}")
    return f"{type(obj).__name__}({', '.join(shown)})"


def settings_fields(obj: object) -> dict[str, Any]:
    """The fields of a settings dataclass as a JSON object for a log line (`"config": {...}`),
    secrets masked as `settings_repr` masks them: a nested settings object (KafkaSettings) by
    its own `settings` with secret keys masked, a mapping as an object, anything else that JSON
    cannot carry by its text."""
    secret = {f.name for f in fields(type(obj)) if f.setting.secret}
    shown: dict[str, Any] = {}
    for f in dataclasses.fields(obj):  # type: ignore[arg-type]
        value = getattr(obj, f.name)
        if f.name in secret and value not in ("", None):
            value = redact_url(value) if isinstance(value, str) and "://" in value else MASK
        shown[f.name] = _json_value(value)
    return shown


def _json_value(value: object) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    settings = getattr(value, "settings", None)
    if dataclasses.is_dataclass(value) and isinstance(settings, Mapping):
        return redact_settings(settings)  # KafkaSettings: the operator's librdkafka settings
    if isinstance(value, Mapping):
        return {str(k): _json_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple | frozenset | set):
        return [_json_value(v) for v in value]
    return str(value)


def key_values(items: Iterable[str], bad: Callable[[str], Exception]) -> dict[str, str]:
    """`KEY=VALUE` strings as a dict, keys and values stripped, the last of a key winning;
    an item without `=` or without a key raises `bad(item)`."""
    pairs: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise bad(item)
        pairs[key.strip()] = value.strip()
    return pairs
