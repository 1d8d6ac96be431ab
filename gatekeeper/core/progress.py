"""What a range run says about itself: its closing line, status messages and progress bar (pure).

Every function here takes what it shows as parameters (a RangePlan, the latest attempts, the
clock) and returns text; nothing is read or written. ``fill/watch.py`` fetches and prints.

- ``closing_line``: the one INFO line a range run ends with, success or failure:
  ``gatekeeper: RangeBusinessDaily JOB: filled N/M due (K this run); republished R stale;
  OBSTACLE; G gaps remain; S skipped by policy; next due at T`` (parts that do not apply left
  out; gaps left by ``task_limit`` alone, with no obstacle, read ``task_limit reached: G gaps
  left for the next invocation``, and the run exits 0 as Luigi's ``RangeDaily`` does).
  "K this run" counts the periods this invocation's own runs completed, never another
  process's. OBSTACLE is the first obstacle in fill order (period order; newest first for a
  reverse fill; ``first_obstacle``): ``failed
  at P (Error: message)``, ``P held by run R until T``, ``P waiting on Orders, held by run R
  until T``, ``P blocked: Orders failed (attempt 1: ...)`` or ``P blocked: Orders missing``;
- ``range_status`` / ``chunk_status``: the status message and percentage a scheduler shows;
- ``progress_bar`` and ``Throttle``: the one-line terminal bar (done/total, rate, ETA).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Collection, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from gatekeeper.core.cascade import describe_counts
from gatekeeper.core.causes import HELD, Cause
from gatekeeper.core.display import printable
from gatekeeper.core.planning import RangePlan
from gatekeeper.core.records import Attempt, RunState

#: a key of ``own_keys``: a period key, or a (job, period) pair
K = TypeVar("K", bound=Hashable)

_TYPED_ERROR = re.compile(r"^([A-Za-z_][A-Za-z0-9_.]*): (.*)$", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Failure:
    """The first period of a run that failed: its key, its error's type and message."""

    period: str
    error_type: str
    message: str

    @classmethod
    def from_error(cls, period: str, error: str | None) -> Failure:
        """From a ledger attempt's ``error`` text (``Type: message`` as tasks record it)."""
        text = (error or "").strip()
        match = _TYPED_ERROR.match(text)
        if match is None:
            return cls(period, "", text or "no error recorded")
        return cls(period, match.group(1), match.group(2))

    def describe(self, limit: int = 200) -> str:
        """``failed at P (Type: message)``, the message on one line (control and bidi
        characters escaped: it goes to logs and luigid), cut at ``limit``."""
        message = printable(" ".join(self.message.split()))
        if len(message) > limit:
            message = message[: limit - 3] + "..."
        error = f"{self.error_type}: {message}" if self.error_type else message
        return f"failed at {self.period} ({error})"


@dataclass(frozen=True, slots=True)
class Held:
    """A period another run holds: its latest attempt runs on that run's live lease."""

    attempt: Attempt
    expired: bool = False  # its lease ran out, and no run has taken the period over yet

    @property
    def period(self) -> str:
        return self.attempt.period_key

    def describe(self) -> str:
        """``P held by run R until T`` (``, expired: the next run abandons it``)."""
        until = self.attempt.lease_expires_at
        shown = "" if until is None else f" until {until.isoformat()}"
        late = " (expired: the next run abandons it)" if self.expired else ""
        return f"{self.period} held by run {self.attempt.run_id}{shown}{late}"


@dataclass(frozen=True, slots=True)
class Blocked:
    """A period with no attempt of its own that an upstream keeps from running: failed,
    abandoned or missing (``P blocked: ...``), or held by another run (``P waiting on ...``)."""

    period: str
    cause: Cause

    def describe(self) -> str:
        text = printable(self.cause.describe(self.period))
        if self.cause.state == HELD:
            return f"{self.period} {text}"
        return f"{self.period} blocked: {text}"


#: What kept a period of the window from being filled, as a closing line names it.
Obstacle = Failure | Held | Blocked


def failed_keys(latest: Mapping[str, Attempt], since: dt.datetime) -> set[str]:
    """Keys whose latest attempt failed or was abandoned and started at or after ``since``."""
    return {
        key
        for key, attempt in latest.items()
        if attempt.state in (RunState.FAILED, RunState.ABANDONED) and attempt.started_at >= since
    }


def own_keys(
    latest: Mapping[K, Attempt], since: dt.datetime, mine: Callable[[str], bool]
) -> set[K]:
    """Keys (period keys, or (job, period) pairs) whose latest attempt succeeded, started at
    or after ``since``, in a run ``mine`` (a run ID predicate: this invocation's runs)
    recorded."""
    return {
        key
        for key, attempt in latest.items()
        if attempt.state is RunState.SUCCEEDED
        and attempt.started_at >= since
        and mine(attempt.run_id)
    }


def first_obstacle(
    order: Sequence[str],
    latest: Mapping[str, Attempt],
    since: dt.datetime,
    now: dt.datetime,
    mine: Callable[[str], bool],
    causes: Mapping[str, Cause],
) -> Obstacle | None:
    """The first obstacle of the keys ``order`` (gaps, in fill order), whatever it is: a
    key whose latest attempt failed since ``since`` (Failure), runs for another run (not
    ``mine``) on a live lease at ``now`` or on one that expired with no run taking it over
    yet (Held, ``expired``: a worker that died), or has no attempt and a cause in ``causes``
    (an upstream failed, abandoned, missing or held: Blocked); None when no key has one."""
    failed = failed_keys(latest, since)
    for key in order:
        found = latest.get(key)
        if key in failed:
            return Failure.from_error(key, latest[key].error)
        if found is not None and found.state is RunState.RUNNING and not mine(found.run_id):
            lapsed = found.lease_expires_at is not None and not found.lease_live(now)
            return Held(found, expired=lapsed)
        if found is None and key in causes:
            return Blocked(key, causes[key])
    return None


def closing_line(
    family: str,
    job: str,
    plan: RangePlan,
    *,
    filled_now: int,
    obstacle: Obstacle | None = None,
    filled_by: str | None = None,
    republished: int = 0,
    reprocess: str = "stale",
    cascade: Mapping[str, int] | None = None,
) -> str:
    """The line a range run ends with; ``plan`` is the window as the run leaves it,
    ``filled_now`` how many due periods this invocation's own runs completed, ``republished``
    how many periods they reprocessed beyond the gaps under ``reprocess`` (the policy: for
    ``stale``, the stale publications they republished), ``obstacle`` the first thing, in fill
    order, that kept a period from this run (``first_obstacle``), ``filled_by`` the other
    worker still filling it (under luigid). Gaps left with no obstacle were left by
    ``task_limit``: the line says so, and the run exits 0 as Luigi's ``RangeDaily`` does.
    ``cascade``: job -> the stale publications this invocation republished through the
    ``requires()`` graph (``--reprocess stale``), counted by job."""
    parts = [f"filled {plan.complete_count}/{plan.total} due ({filled_now} this run)"]
    if cascade and sum(cascade.values()):
        parts.append(describe_counts(cascade))
    elif republished and reprocess == "stale":
        parts.append(f"republished {republished} stale")
    elif republished:
        parts.append(f"reprocessed {republished} (--reprocess {reprocess})")
    if obstacle is not None:
        parts.append(obstacle.describe())
    if plan.gaps and filled_by:
        parts.append(f"{len(plan.gaps)} gaps being filled by {filled_by}")
    elif plan.gaps and obstacle is None and plan.task_limit is not None:
        parts.append(f"task_limit reached: {len(plan.gaps)} gaps left for the next invocation")
    elif plan.gaps:
        parts.append(f"{len(plan.gaps)} gaps remain")
    if plan.skipped_by_policy:
        parts.append(f"{len(plan.skipped_by_policy)} skipped by policy")
    if plan.next_due_at is not None:
        parts.append(f"next due at {plan.next_due_at.isoformat()}")
    return f"gatekeeper: {family} {job}: " + "; ".join(parts)


def percent(done: int, total: int) -> int:
    """Whole percent of ``done`` out of ``total`` (100 when there is nothing to do)."""
    return 100 * done // total if total else 100


def range_status(plan: RangePlan) -> tuple[str, int]:
    """The range's status message and percentage for a fresh ``plan`` of its window:
    ``filled X/Y, contiguous through P, next Q, S skipped by policy`` while gaps remain,
    ``plan.describe()`` once none does."""
    if not plan.gaps:
        return plan.describe(), percent(plan.complete_count, plan.total)
    through = "nothing" if plan.contiguous_through is None else plan.key(plan.contiguous_through)
    return (
        f"filled {plan.complete_count}/{plan.total}, contiguous through {through}, next "
        f"{plan.key(plan.gaps[0])}, {len(plan.skipped_by_policy)} skipped by policy",
        percent(plan.complete_count, plan.total),
    )


def cursor_status(plan: RangePlan, cursor: int) -> tuple[str, int] | None:
    """The range's status while it fills in order, ``cursor`` periods past its session's
    ``plan`` (no ledger query): as ``range_status``; None once the cursor is past the end."""
    if cursor >= len(plan.scheduled):
        return None
    filled = plan.complete_count + cursor
    through = plan.contiguous_through
    if cursor and plan.catchup == "all":
        through = plan.scheduled[cursor - 1]
    shown = "nothing" if through is None else plan.key(through)
    return (
        f"filled {filled}/{plan.total}, contiguous through {shown}, next "
        f"{plan.key(plan.scheduled[cursor])}, {len(plan.skipped_by_policy)} skipped by policy",
        percent(filled, plan.total),
    )


def range_metrics(plan: RangePlan) -> tuple[int, int, float]:
    """Luigi's RangeEvent figures of ``plan``, as luigi's RangeBase computes them: DELAY (the
    due periods from the first missing one to the newest), COMPLETE_COUNT, COMPLETE_FRACTION."""
    kind = plan.period
    missing = [kind.ordinal(p) for p in (*plan.gaps, *plan.skipped_by_policy)]
    delay = len(plan.due) - plan.due.index(kind.at(min(missing))) if missing else 0
    fraction = plan.complete_count / plan.total if plan.total else 1.0
    return delay, plan.complete_count, fraction


def chunk_status(
    keys: Sequence[str], done: Collection[str], failed: Collection[str]
) -> tuple[str, int]:
    """A chunk's status message and percentage: ``filled D/N[, F failed (first P)][, next
    K]``; ``next`` is the first key neither done nor failed, in the chunk's order."""
    count = sum(1 for key in keys if key in done)
    fails = [key for key in keys if key in failed and key not in done]
    pending = next((key for key in keys if key not in done and key not in failed), None)
    return filled_status(len(keys), count, fails, pending)


def filled_status(
    total: int, count: int, fails: Sequence[str] = (), pending: str | None = None
) -> tuple[str, int]:
    """``chunk_status`` of a chunk of ``total`` keys, ``count`` of them done, ``fails`` failed
    (in order), ``pending`` the next to do (None: none)."""
    parts = [f"filled {count}/{total}"]
    if fails:
        parts.append(f"{len(fails)} failed (first {fails[0]})")
    if pending is not None:
        parts.append(f"next {pending}")
    return ", ".join(parts), percent(count, total)


def fill_over(
    strategy: str, scheduled: Sequence[str], done: Collection[str], failed: Collection[str]
) -> bool:
    """True when a fill of ``scheduled`` keys has nothing left to do in this invocation:
    every key is done, or (contiguous) one failed, or (forward/reverse) every key is done or
    failed."""
    if strategy == "contiguous" and any(key in failed for key in scheduled):
        return True
    return all(key in done or key in failed for key in scheduled)


def duration(seconds: float) -> str:
    """``9s``, ``3m05s``, ``2h07m``: a short, fixed-style duration."""
    whole = max(0, int(round(seconds)))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"


def progress_bar(done: int, total: int, elapsed: float, *, failed: int = 0, width: int = 20) -> str:
    """One line: ``[#####...............] 12/40 periods 3.1/s ETA 9s`` (+ ``, F failed``).

    The rate is periods settled (done or failed) per second since the start; the ETA is what
    is left at that rate (``ETA ?`` before the first period settles).
    """
    settled = done + failed
    filled = width * min(settled, total) // total if total else width
    rate = settled / elapsed if elapsed > 0 else 0.0
    left = max(0, total - settled)
    eta = duration(left / rate) if rate > 0 else "?"
    line = f"[{'#' * filled}{'.' * (width - filled)}] {done}/{total} periods {rate:.1f}/s ETA {eta}"
    return f"{line}, {failed} failed" if failed else line


@dataclass(slots=True)
class Throttle:
    """At most one redraw per ``interval`` seconds; the clock is passed to ``ready``."""

    interval: float = 0.1
    last: float | None = None

    def ready(self, now: float) -> bool:
        """True (and remembered) when ``interval`` has passed since the last True."""
        if self.last is not None and now - self.last < self.interval:
            return False
        self.last = now
        return True
