"""Instants, time zones, durations and half-open intervals: what a period is measured in (pure).

The period kinds (``base.py`` and a module each) build on these; so do readiness (watermarks)
and the Luigi configuration (lateness). Nothing here looks at the wall clock.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from gatekeeper.core.errors import InvalidInput

UTC = dt.timezone.utc
#: The longest duration text parsed (``1000000d2h30m15s`` is 16): a bound on its digits
MAX_DURATION_CHARS = 32
_DURATION = re.compile(r"^(?:([0-9]+)d)?(?:([0-9]+)h)?(?:([0-9]+)m)?(?:([0-9]+)s)?$")


def parse_aware_datetime(value: object, field: str) -> dt.datetime:
    """Return ``value`` converted to UTC; raises InvalidInput for naive or non-datetime values.

    Accepts a tz-aware ``datetime`` or an ISO 8601 string with an offset.
    """
    given = value
    if isinstance(value, str):
        try:
            value = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise InvalidInput(
                field, value, "expected an ISO 8601 timestamp with an offset"
            ) from None
    if not isinstance(value, dt.datetime):
        raise InvalidInput(
            field, value, f"expected a tz-aware datetime, got {type(value).__name__}"
        )
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidInput(field, given, "no time zone; add an offset such as Z or +01:00")
    return value.astimezone(UTC)


@dataclass(frozen=True, slots=True)
class Interval:
    """The half-open interval ``[start, end)`` between two instants, both held in UTC.

    Raises InvalidInput for a naive bound or an end before the start.
    """

    start: dt.datetime
    end: dt.datetime

    def __post_init__(self) -> None:
        object.__setattr__(self, "start", parse_aware_datetime(self.start, "start"))
        object.__setattr__(self, "end", parse_aware_datetime(self.end, "end"))
        if self.end < self.start:
            raise InvalidInput("end", self.end, f"before start {self.start.isoformat()}")

    def __contains__(self, when: object) -> bool:
        """True when the aware datetime ``when`` lies in ``[start, end)``."""
        return isinstance(when, dt.datetime) and self.start <= when < self.end

    @property
    def duration(self) -> dt.timedelta:
        """Real elapsed time from start to end (23 or 25 hours on a DST day)."""
        return self.end - self.start


def parse_timezone(name: object, field: str = "timezone") -> ZoneInfo:
    """Return the ZoneInfo of an IANA name such as ``Europe/London``; raises InvalidInput.

    A ZoneInfo is returned as it is. Unknown, malformed or empty names are refused.
    """
    if isinstance(name, ZoneInfo):
        return name
    if not isinstance(name, str):
        raise InvalidInput(
            field, name, f"expected an IANA time zone name, got {type(name).__name__}"
        )
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise InvalidInput(
            field, name, "unknown time zone; expected an IANA name such as Europe/London"
        ) from None


def parse_lateness(value: object, field: str = "lateness") -> dt.timedelta:
    """Return ``value`` as a non-negative timedelta; raises InvalidInput naming ``field``.

    Accepts a ``timedelta`` or a string of day/hour/minute/second parts in that order, such as
    ``2h``, ``30m``, ``1d``, ``90s``, ``1h30m`` (spaces and case ignored) or ``0``.
    """
    if isinstance(value, dt.timedelta):
        if value < dt.timedelta(0):
            raise InvalidInput(field, value, "negative; a period cannot be due before it ends")
        return value
    if not isinstance(value, str):
        raise InvalidInput(
            field, value, f"expected a timedelta or a string like 2h, got {type(value).__name__}"
        )
    text = "".join(value.split()).lower()
    if len(text) > MAX_DURATION_CHARS:  # int() of thousands of digits is refused, and slow
        cut = value if len(value) <= 40 else value[:40] + "..."
        raise InvalidInput(field, cut, f"longer than {MAX_DURATION_CHARS} characters")
    if text.startswith("-"):
        raise InvalidInput(field, value, "negative; a period cannot be due before it ends")
    if text == "0":
        return dt.timedelta(0)
    match = _DURATION.match(text)
    if not text or match is None:
        raise InvalidInput(field, value, "expected a duration such as 2h, 30m, 1d, 90s or 1h30m")
    days, hours, minutes, seconds = (int(part or 0) for part in match.groups())
    try:
        return dt.timedelta(days=days, hours=hours, minutes=minutes, seconds=seconds)
    except OverflowError:
        raise InvalidInput(field, value, "too large") from None


def duration_text(span: dt.timedelta) -> str:
    """``2h``, ``1h30m``, ``0s``: a non-negative timedelta in the form ``parse_lateness``
    takes (whole seconds)."""
    seconds = int(span.total_seconds())
    units = [
        (seconds // 86400, "d"),
        (seconds % 86400 // 3600, "h"),
        (seconds % 3600 // 60, "m"),
        (seconds % 60, "s"),
    ]
    return "".join(f"{n}{u}" for n, u in units if n) or "0s"
