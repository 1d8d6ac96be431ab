"""Business periods and calendars, one concept in one package (pure).

What callers use is re-exported here; each module holds one part:

- ``base``: ``Period``, what every kind answers (labels, ledger keys, Luigi values, ordinals,
  half-open intervals in a zone, closing time);
- one module per kind: ``daily``, ``hourly``, ``weekly``, ``monthly``, ``quarterly`` (the
  last three on ``coarse``, what periods of whole days share);
- ``business``: the binding of a kind to a business calendar, explicit: each kind subclasses
  its ``BaseKind``, whose ``on`` (``DAILY.on("weekdays")``) makes a ``BusinessPeriod``;
- ``by_name``: every kind by name (``PERIODS``, ``parse_period``, ``kind_of_key``) and the
  rules as functions of a kind's name;
- ``calendars`` and ``calendar_paths``: business calendars, by name or import path;
  ``registry``: ``DEFINED``, the one registry of the calendars a configuration names
  (``[gatekeeper.calendars]``), filled by the Luigi adapter where it resolves one;
- ``labels`` and ``intervals``: parsing a period's label and key; instants, zones, durations.
"""

from gatekeeper.core.periods.base import Period
from gatekeeper.core.periods.by_name import (
    PERIODS,
    interval,
    kind_of_key,
    last_closed,
    parse_label,
    parse_period,
    parse_period_key,
    period_at,
    period_from_key,
    period_key,
    period_ordinal,
    period_ordinals,
    periods_between,
    shift,
)
from gatekeeper.core.periods.daily import DAILY
from gatekeeper.core.periods.hourly import HOURLY
from gatekeeper.core.periods.intervals import (
    Interval,
    parse_aware_datetime,
    parse_lateness,
    parse_timezone,
)
from gatekeeper.core.periods.labels import (
    HOUR_EXAMPLES,
    Label,
    hour_key,
    parse_business_date,
    parse_hour,
)
from gatekeeper.core.periods.monthly import MONTHLY
from gatekeeper.core.periods.quarterly import QUARTERLY
from gatekeeper.core.periods.weekly import WEEKLY

__all__ = [
    "DAILY",
    "HOURLY",
    "MONTHLY",
    "QUARTERLY",
    "WEEKLY",
    "HOUR_EXAMPLES",
    "PERIODS",
    "Interval",
    "Label",
    "Period",
    "hour_key",
    "interval",
    "kind_of_key",
    "last_closed",
    "parse_aware_datetime",
    "parse_business_date",
    "parse_hour",
    "parse_label",
    "parse_lateness",
    "parse_period",
    "parse_period_key",
    "parse_timezone",
    "period_at",
    "period_from_key",
    "period_key",
    "period_ordinal",
    "period_ordinals",
    "periods_between",
    "shift",
]
