"""Business periods and calendars, one concept in one package (pure).

What callers use is re-exported here; each module holds one part:

- ``base``: ``Period``, what every kind answers (labels, ledger keys, Luigi values, ordinals,
  half-open intervals in a zone, closing time);
- ``by_name``: the daily and hourly kinds, every kind by name (``parse_period``,
  ``kind_of_key``) and the rules as functions of a kind's name;
- ``coarse``: the weekly, monthly and quarterly kinds;
- ``business``: a kind bound to a business calendar (``DAILY.on("weekdays")``);
- ``calendars`` and ``calendar_paths``: business calendars, by name or import path;
- ``labels`` and ``intervals``: parsing a period's label and key; instants, zones, durations.
"""

from gatekeeper.core.periods.base import Period
from gatekeeper.core.periods.by_name import (
    DAILY,
    HOUR_EXAMPLES,
    HOURLY,
    MONTHLY,
    PERIODS,
    QUARTERLY,
    WEEKLY,
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
from gatekeeper.core.periods.intervals import (
    Interval,
    parse_aware_datetime,
    parse_lateness,
    parse_timezone,
)
from gatekeeper.core.periods.labels import Label, hour_key, parse_business_date, parse_hour

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
