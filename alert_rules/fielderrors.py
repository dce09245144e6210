"""Every field error of one object at once: :class:`InvalidSpec` and :class:`Collect`.

A parser checks every field it can and raises one :class:`InvalidSpec` carrying all of them
(:class:`FieldError`: the field path, the value and what is accepted), so a user fixes a
manifest in one round. A check that depends on another field (the latency threshold against
the probe timeout) is skipped when that field is itself in error: its message would be noise.

Messages are bounded whatever the input: a field error echoes its value in one short line
(:func:`echo`), an object keeps at most :data:`MAX_ERRORS` of them, and ``str()`` of the whole
(:meth:`InvalidSpec.summary`) fits in :data:`MAX_MESSAGE` characters.
"""

from __future__ import annotations

import reprlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from types import MappingProxyType
from typing import Any, Self, TypeVar

T = TypeVar("T")
MAX_ECHO = 300
MAX_ERRORS = 20
"""At most this many field errors per object; the rest are counted (:attr:`InvalidSpec.omitted`)."""
MAX_MESSAGE = 900
"""``str(InvalidSpec)`` fits in this (a condition message, an Event's 1,024 characters with room to spare)."""
NOT_SHOWN: Any = type("NotShown", (), {"__repr__": lambda self: "<not shown>"})()
"""The value of a field error whose value says nothing (an unknown field: its name is the error)."""
EMPTY: Mapping[str, Any] = MappingProxyType({})
"""The fallback of a mapping field in error (parsers go on with it and raise before returning)."""


class _Echo(reprlib.Repr):
    """A bounded repr: at most a few hundred characters whatever the value (an alias bomb, a
    value nested 1,500 deep, a 5,000-digit integer all print one short line)."""

    def __init__(self) -> None:
        super().__init__()
        self.maxlevel, self.maxstring, self.maxother, self.maxlong = 3, 120, 120, 40
        self.maxdict = self.maxlist = self.maxtuple = self.maxset = 6

    def repr_int(self, x: int, level: int) -> str:
        if x.bit_length() > 128:  # str() of a huge int is slow, and refused past 4,300 digits
            return f"<an integer of {x.bit_length()} bits>"
        return reprlib.Repr.repr_int(self, x, level)

    def repr_str(self, x: str, level: int) -> str:
        return repr(x) if len(x) <= self.maxstring else repr(x[:self.maxstring]) + f"... ({len(x)} characters)"

    def repr_instance(self, x: Any, level: int) -> str:
        try:
            return super().repr_instance(x, level)
        except Exception:  # an echoed value never breaks the message
            return f"<{type(x).__name__}>"


_ECHO = _Echo()


def bounded(text: str, limit: int) -> str:
    """``text`` on one line of at most ``limit`` characters (a reason may quote what it got)."""
    text = " ".join(text.splitlines())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def echo(value: object) -> str:
    """``value`` as a user's message shows it: one bounded line."""
    return bounded(_ECHO.repr(value).replace("\n", "\\n"), MAX_ECHO)


@dataclass(frozen=True)
class FieldError:
    """One invalid field: ``field`` is its path (``spec.slo.availability``); ``value`` is kept
    whole, messages echo it bounded."""

    field: str
    value: object
    reason: str
    suggestion: str = ""
    """What the user probably meant (a field or annotation name, a value), also said in ``reason``."""

    @classmethod
    def of(cls, field: str, value: object, reason: str, suggestion: str = "") -> FieldError:
        return cls(bounded(field, 200), value, bounded(reason, MAX_ECHO), bounded(suggestion, 200))

    @cached_property
    def got(self) -> str:
        return echo(self.value)

    @property
    def detail(self) -> str:
        """The reason and, when it says something, the value: ``reason (got value)``."""
        return self.reason if self.value is NOT_SHOWN else f"{self.reason} (got {self.got})"

    def __str__(self) -> str:
        return f"{self.field}: {self.detail}"


class InvalidSpec(ValueError):
    """Fields of a monitor's spec are invalid. ``errors`` holds each (at least one, at most
    :data:`MAX_ERRORS`; ``omitted`` counts the rest); ``field``, ``value`` and ``reason`` are the
    first one's, for callers that show one."""

    def __init__(self, field: str, value: object, reason: str) -> None:
        self._init((FieldError.of(field, value, reason),), 0)

    def _init(self, errors: tuple[FieldError, ...], omitted: int) -> None:
        self.errors, self.omitted = errors, omitted
        first = errors[0]
        self.field, self.value, self.reason = first.field, first.value, first.reason
        super().__init__(first.field)

    def __str__(self) -> str:  # built when shown: a parser may wrap and re-raise several times first
        return self.summary()

    @classmethod
    def of(cls, errors: Iterable[FieldError], omitted: int = 0) -> Self:
        """All of ``errors`` (duplicates once, order kept) in one exception."""
        shown: dict[str, FieldError] = {}  # values may be unhashable or huge: compare what is shown
        for error in errors:
            shown.setdefault(str(error), error)
        unique = tuple(shown.values())
        if not unique:
            raise ValueError("InvalidSpec needs at least one field error")
        e = cls.__new__(cls)
        e._init(unique[:MAX_ERRORS], omitted + max(0, len(unique) - MAX_ERRORS))
        return e

    def summary(self, limit: int = MAX_MESSAGE) -> str:
        """Every field error on one line of at most ``limit`` characters: in full while it fits,
        then without the echoed values, then as many as fit and how many more."""
        count = len(self.errors) + self.omitted
        more = f" (and {self.omitted} more)" if self.omitted else ""
        if count == 1:
            return bounded(str(self.errors[0]), limit)
        head = f"{count} field errors: "
        for shown in ([str(e) for e in self.errors], [f"{e.field}: {e.reason}" for e in self.errors]):
            text = head + "; ".join(shown) + more
            if len(text) <= limit:
                return text
        fields = [e.field for e in self.errors]
        for n in range(len(fields), 0, -1):
            text = f"{head}{'; '.join(fields[:n])}" + (f" (and {count - n} more)" if count > n else "")
            if len(text) <= limit:
                return text
        return bounded(head + fields[0], limit)


class Collect:
    """The field errors of one object, gathered while its parser goes on with the other fields."""

    def __init__(self) -> None:
        self.errors: list[FieldError] = []
        self.omitted = 0

    def add(self, field: str, value: object, reason: str) -> None:
        self.errors.append(FieldError.of(field, value, reason))

    def take(self, e: InvalidSpec) -> None:
        self.errors.extend(e.errors)
        self.omitted += e.omitted

    def get(self, parse: Callable[[], T], fallback: T) -> T:
        """``parse()``, or ``fallback`` with its errors kept (the fallback never leaves the parser:
        :meth:`done` raises)."""
        try:
            return parse()
        except InvalidSpec as e:
            self.take(e)
            return fallback

    def failed(self, *fields: str) -> bool:
        """Whether one of ``fields`` (or a field under it) is in error: a check that depends on it is skipped."""
        return any(e.field == f or e.field.startswith((f"{f}.", f"{f}[")) for e in self.errors for f in fields)

    def has(self, field: str) -> bool:
        """Whether ``field`` itself is in error (a mapping that is not one, say)."""
        return any(e.field == field for e in self.errors)

    def done(self) -> None:
        """Raise every error gathered, if any."""
        if self.errors:
            raise InvalidSpec.of(self.errors, self.omitted)


def collecting(parse: Callable[[Collect], T]) -> T:
    """``parse`` with a fresh :class:`Collect`; raises every error it gathered (and the one it
    raised itself, if it stopped at a field nothing else can be read without)."""
    c = Collect()
    try:
        out = parse(c)
    except InvalidSpec as e:
        c.take(e)
        raise InvalidSpec.of(c.errors, c.omitted) from None
    c.done()
    return out


def mapping(value: object, field: str) -> Mapping[str, Any]:
    """A mapping field (absent: empty)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidSpec(field, value, "expected a mapping")
    return value


def each(items: Iterable[Any], field: str, parse: Callable[[Any, str], T]) -> tuple[T, ...]:
    """``parse(item, "field[i]")`` for every item of a list field, reporting every bad item at once."""
    c = Collect()
    out = []
    for i, item in enumerate(items):
        try:
            out.append(parse(item, f"{field}[{i}]"))
        except InvalidSpec as e:
            c.take(e)
    c.done()
    return tuple(out)
