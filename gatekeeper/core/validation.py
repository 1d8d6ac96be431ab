"""Every input check, in one place: used by the ledger, the gate, the CLI and the Luigi tasks.

Each check returns the value it accepts (normalized) or raises InvalidInput naming the field and
the value, before anything is written. Period labels and keys are parsed in ``periods/``;
this module applies them to what callers pass.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
import unicodedata
from collections.abc import Iterable
from typing import Any

from gatekeeper.core.display import UNSAFE, printable
from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.periods import kind_of_key, period_key
from gatekeeper.core.periods.intervals import parse_aware_datetime

#: Attempt ordinals fit a signed 32-bit INTEGER on both backends.
MAX_ATTEMPT = 2**31 - 1
#: The longest lease a heartbeat may hold: a week.
MAX_LEASE_SECONDS = 7 * 24 * 3600.0
#: Timestamps both backends store and gatekeeper can add a lease to without overflowing.
MIN_TIMESTAMP = dt.datetime(1, 1, 2, tzinfo=dt.timezone.utc)
MAX_TIMESTAMP = dt.datetime(9999, 12, 1, tzinfo=dt.timezone.utc)

#: The bounds of one listing of another system's runs (``gatekeeper collect``): the defaults
#: (1,000 pages of runs, five minutes) and the largest values accepted.
DEFAULT_MAX_PAGES, MAX_PAGES_LIMIT = 1000, 1_000_000
DEFAULT_TIME_BUDGET, TIME_BUDGET_LIMIT = 300.0, 86_400.0

Requirement = tuple[str, str]  # (job, period key)

_SURROGATE = re.compile("[\ud800-\udfff]")
_DIGITS = re.compile(r"[0-9]+")
_NUMBER = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


def check_name(value: Any, field: str) -> str:
    """Return ``value`` if it names something (a job, consumer, run ID, producer...): a
    non-empty string without surrounding blanks, NUL bytes, lone surrogates (which no database
    stores faithfully), control characters or bidi controls (which would drive a terminal or
    reorder what a reader sees: ``abc\u202egnp.exe``), or invisible and format characters
    (Unicode category Cf, such as U+200B and U+FEFF, and the soft hyphen U+00AD: ``Sales``
    and ``Sa\u200bles`` would look alike); raises InvalidInput."""
    name = check_reason(value, field)
    unsafe = UNSAFE.search(name)
    if unsafe:
        raise InvalidInput(
            field,
            value,
            f"contains the control character {printable(unsafe.group())} (a name may not "
            "contain control or bidi characters)",
        )
    invisible = next((c for c in name if c == "\u00ad" or unicodedata.category(c) == "Cf"), None)
    if invisible is not None:  # Sales and Sa\u200bles would be two jobs that look alike
        raise InvalidInput(
            field,
            value,
            f"contains the invisible character {_codepoint(invisible)} "
            f"({unicodedata.name(invisible, 'format character')}; a name may not contain "
            "invisible or format characters)",
        )
    return name


def _codepoint(char: str) -> str:
    return f"\\u{ord(char):04x}"


def check_reason(value: Any, field: str) -> str:
    """Return one-line free text that must say something (a republication's reason): a
    non-empty string without surrounding blanks, NUL bytes or lone surrogates. It is stored as
    given; whoever shows it escapes its control characters (``display.printable``)."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(field, value, "expected a non-empty string")
    if value != value.strip():
        raise InvalidInput(field, value, "leading or trailing whitespace")
    if "\x00" in value:
        raise InvalidInput(field, value, "contains a NUL character")
    if _SURROGATE.search(value):
        raise InvalidInput(field, value, "contains a lone surrogate (not valid UTF-8)")
    return value


def check_text(value: Any, field: str) -> str:
    """Return free text (an error message): any string without NUL or lone surrogates."""
    if not isinstance(value, str):
        raise InvalidInput(field, value, f"expected a string, got {type(value).__name__}")
    if "\x00" in value or _SURROGATE.search(value):
        raise InvalidInput(field, value, "contains a NUL character or a lone surrogate")
    return value


def printable_text(value: str, limit: int = 2000) -> str:
    """``value`` made storable (NUL and lone surrogates escaped) and cut to ``limit`` chars:
    for messages gatekeeper records on a user's behalf, such as an exception's text."""
    cleaned = _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", value.replace("\x00", "\\0"))
    return cleaned[:limit]


def check_optional_name(value: Any, field: str) -> str | None:
    """``check_name`` for a value that may be None."""
    return None if value is None else check_name(value, field)


def check_optional_reason(value: Any, field: str) -> str | None:
    """``check_reason`` for a value that may be None."""
    return None if value is None else check_reason(value, field)


def check_attempt(value: Any, field: str = "attempt", allow_zero: bool = False) -> int:
    """Return ``value`` if it is an int in 1..2,147,483,647 (0 too with ``allow_zero``: "the
    next one"); never a bool. Raises InvalidInput."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(field, value, f"expected an integer from 1 to {MAX_ATTEMPT}")
    low = 0 if allow_zero else 1
    if not low <= value <= MAX_ATTEMPT:
        raise InvalidInput(field, value, f"expected an integer from {low} to {MAX_ATTEMPT}")
    return value


def parse_attempt_text(text: Any, field: str = "attempt", allow_zero: bool = False) -> int:
    """An attempt ordinal typed on a command line: plain ASCII digits only (no sign, blank,
    underscore, exponent or non-ASCII digit), then ``check_attempt``."""
    if not isinstance(text, str) or not _DIGITS.fullmatch(text):
        raise InvalidInput(field, text, "expected plain digits 0-9")
    return check_attempt(int(text), field, allow_zero)


def parse_count_text(text: Any, field: str, minimum: int = 0) -> int:
    """A non-negative count typed on a command line: plain ASCII digits, at least ``minimum``."""
    if not isinstance(text, str) or not _DIGITS.fullmatch(text) or len(text) > 18:
        raise InvalidInput(field, text, "expected plain digits 0-9")
    number = int(text)
    if number < minimum:
        raise InvalidInput(field, text, f"expected at least {minimum}")
    return number


def parse_number_text(text: Any, field: str) -> float:
    """A number given as text (an environment variable, a config value): decimal digits with
    an optional sign, fraction and exponent, as Python's ``float`` reads them, but no ``nan``,
    ``inf``, underscore or non-ASCII digit; raises InvalidInput naming ``field`` and the text."""
    if not isinstance(text, str) or not _NUMBER.fullmatch(text.strip()):
        raise InvalidInput(field, text, "expected a number")
    return float(text)


def check_job_id(value: Any, field: str = "job_id") -> int:
    """A remote scheduler's numeric job ID (a Databricks job): an int from 1 to 2**63 - 1, or
    such a number typed as plain ASCII digits; never a bool. Raises InvalidInput."""
    number = value
    if isinstance(value, str):
        if not _DIGITS.fullmatch(value) or len(value) > 19:
            raise InvalidInput(field, value, "expected a positive job ID in plain digits 0-9")
        number = int(value)
    if isinstance(number, bool) or not isinstance(number, int) or not 1 <= number < 2**63:
        raise InvalidInput(field, value, "expected a positive job ID (an integer below 2**63)")
    return number


def check_timestamp(value: Any, field: str) -> dt.datetime:
    """Return a tz-aware datetime (or ISO 8601 string with offset) in UTC, between
    0001-01-02 and 9999-12-01 UTC: what both backends store with room for a lease."""
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        try:
            value.astimezone(dt.timezone.utc)
        except OverflowError:
            raise InvalidInput(field, value, "outside the years 1 to 9999 in UTC") from None
    at = parse_aware_datetime(value, field)
    if not MIN_TIMESTAMP <= at < MAX_TIMESTAMP:
        raise InvalidInput(
            field, value, f"outside {MIN_TIMESTAMP.date()} .. {MAX_TIMESTAMP.date()} UTC"
        )
    return at


def check_datetime(value: Any, field: str) -> dt.datetime:
    """``check_timestamp`` for a value that must be a datetime object (not a string)."""
    if not isinstance(value, dt.datetime):
        kind = type(value).__name__
        raise InvalidInput(field, value, f"expected a tz-aware datetime, got {kind}")
    return check_timestamp(value, field)


def check_lease(value: Any, field: str = "lease_seconds") -> float:
    """Return a lease length in seconds: finite, > 0 and at most a week; raises InvalidInput."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInput(field, value, "expected a number of seconds")
    if not math.isfinite(value) or value <= 0 or value > MAX_LEASE_SECONDS:
        raise InvalidInput(
            field, value, f"expected seconds > 0 and at most {MAX_LEASE_SECONDS:.0f} (a week)"
        )
    return float(value)


def check_requirements(jobs: Any, key: str) -> tuple[Requirement, ...]:
    """Return the required (job, period key) pairs, sorted and without duplicates.

    ``jobs`` is a non-empty iterable of job names (required for the period ``key``) or
    ``(job, period)`` pairs for an upstream on another period. A requirement is always a pair: a job
    named ``A@2026-10-22`` is not job ``A`` for 2026-10-22. Raises InvalidInput otherwise.
    """
    if isinstance(jobs, (str, bytes)) or not isinstance(jobs, Iterable):
        raise InvalidInput("jobs", jobs, "expected a collection of job names, not a single value")
    out: set[Requirement] = set()
    for item in jobs:
        if isinstance(item, tuple) and len(item) == 2:
            job, period = item[0], period_key(item[1], "jobs[].business_date")
        else:
            job, period = item, key
        out.add((check_name(job, "jobs[]"), period))
    if not out:
        raise InvalidInput("jobs", jobs, "at least one required job is needed")
    return tuple(sorted(out))


def check_same_kind(job: str, key: str, stored: str | None) -> None:
    """Refuse ``key`` when ``job`` already has keys of the other period kind (``stored``: one
    of its keys, or None). A job keeps one period kind for its whole life."""
    if stored is not None and kind_of_key(stored) is not kind_of_key(key):
        raise InvalidInput(
            "business_date",
            key,
            f"job {job} has {kind_of_key(stored).name} periods (e.g. {stored}); a job keeps one "
            "period kind",
        )


def check_busy_timeout(text: Any, field: str = "ledger_url.busy_timeout") -> float:
    """Seconds to wait, from a URL query value (``busy_timeout``, ``reconnect_window``):
    finite, >= 0, at most a day."""
    try:
        seconds = float(text)
    except (TypeError, ValueError):
        raise InvalidInput(field, text, "expected a number of seconds") from None
    if not math.isfinite(seconds) or seconds < 0 or seconds > 86400:
        raise InvalidInput(field, text, "expected seconds from 0 to 86400")
    return seconds


SQLITE_SYNCHRONOUS = ("full", "normal")


def check_synchronous(text: Any, field: str = "ledger_url.synchronous") -> str:
    """SQLite's ``synchronous`` setting from a URL query value: ``full`` or ``normal`` (any
    case); returns the PRAGMA value (``FULL``, ``NORMAL``). Raises InvalidInput otherwise."""
    if not isinstance(text, str) or text.lower() not in SQLITE_SYNCHRONOUS:
        raise InvalidInput(field, text, "expected full (the default) or normal")
    return text.upper()


_FLAGS = {
    "true": True,
    "1": True,
    "yes": True,
    "on": True,
    "false": False,
    "0": False,
    "no": False,
    "off": False,
}
_LINEAGE_NAMESPACE = re.compile(r"[^\x00-\x20\x7f]{1,1024}")


def parse_flag(value: Any, field: str) -> bool:
    """A boolean option: a bool, or true/false, 1/0, yes/no, on/off (any case); raises
    InvalidInput naming ``field`` and the value."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _FLAGS:
        return _FLAGS[value.strip().lower()]
    raise InvalidInput(field, value, "expected true or false (also 1/0, yes/no, on/off)")


def check_lineage_namespace(value: Any, field: str) -> str:
    """An OpenLineage namespace: ``check_name``, then 1 to 1024 characters without blanks or
    control characters (it is matched verbatim by lineage consumers); raises InvalidInput."""
    name = check_name(value, field)
    if not _LINEAGE_NAMESPACE.fullmatch(name):
        raise InvalidInput(
            field, value, "expected 1 to 1024 characters without blanks or control characters"
        )
    return name


def check_wait_seconds(value: Any, field: str, limit: float = 300.0) -> float:
    """A bounded wait in seconds: a finite number > 0 and at most ``limit``; raises
    InvalidInput."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInput(field, value, "expected a number of seconds")
    if not math.isfinite(value) or value <= 0 or value > limit:
        raise InvalidInput(field, value, f"expected seconds > 0 and at most {limit:g}")
    return float(value)


def check_max_pages(value: Any, field: str = "max_pages") -> int:
    """How many pages a collector's listing may read: an int from 1 to MAX_PAGES_LIMIT; never
    a bool. Raises InvalidInput."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_PAGES_LIMIT:
        raise InvalidInput(field, value, f"expected an integer from 1 to {MAX_PAGES_LIMIT}")
    return value


def check_time_budget(value: Any, field: str = "time_budget") -> float:
    """How many seconds a collector's listing may take: > 0 and at most a day; raises
    InvalidInput."""
    return check_wait_seconds(value, field, TIME_BUDGET_LIMIT)


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")


def check_column_name(value: Any, field: str) -> str:
    """A column name usable unquoted in a predicate: letters, digits and ``_``, not starting
    with a digit, at most 128 characters. Raises InvalidInput."""
    if not isinstance(value, str) or not _IDENTIFIER.fullmatch(value):
        raise InvalidInput(
            field, value, "expected a column name: letters, digits and _, not starting with a digit"
        )
    return value


def check_partition_values(values: Iterable[Any], column: str, expected: str) -> None:
    """Refuse a row whose partition ``column`` is not ``expected`` (a period key): ``values``
    are the column's distinct values, a ``date`` or its ISO string each; a null, another
    date, a datetime or another type is named with the column in the InvalidInput."""
    for value in values:
        text = (
            value
            if isinstance(value, str)
            else (
                value.isoformat()
                if isinstance(value, dt.date) and not isinstance(value, dt.datetime)
                else None
            )
        )
        if text != expected:
            raise InvalidInput(
                column,
                value,
                f"a row for another business date: every row's "
                f"{column} must be {expected}; nothing was written",
            )


def check_storage_options(text: Any, field: str) -> dict[str, str] | None:
    """Object-store options given as a JSON object of strings (``{"AWS_REGION": "eu-west-1"}``);
    None for an empty value. Raises InvalidInput for anything else."""
    if text is None or (isinstance(text, str) and not text.strip()):
        return None
    try:
        options = json.loads(text) if isinstance(text, str) else text
    except ValueError as exc:
        raise InvalidInput(field, text, f"not JSON: {exc}") from None
    if not isinstance(options, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in options.items()
    ):
        raise InvalidInput(field, text, "expected a JSON object of string values")
    return dict(options)
