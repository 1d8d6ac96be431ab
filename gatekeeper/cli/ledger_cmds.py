"""Ledger commands: record, abandon, ready, history, evidence, stale, demo."""

from __future__ import annotations

import argparse
import datetime as dt
from collections.abc import Callable
from typing import Any

from gatekeeper.cli.known import (
    add_allow_unknown,
    check_key,
    check_known,
    off_calendar,
    refuse_unknown,
)
from gatekeeper.cli.output import EXIT_NOT_BUSINESS, EXIT_NOT_READY, EXIT_OK, Result, table
from gatekeeper.core.clock import utc_now
from gatekeeper.core.display import printable
from gatekeeper.core.periods import period_key
from gatekeeper.core.records import RunState
from gatekeeper.core.validation import check_timestamp, parse_attempt_text
from gatekeeper.ledger import Ledger


def cmd_record(ledger: Ledger, args: argparse.Namespace) -> Result:
    started = check_timestamp(args.started_at, "started_at") if args.started_at else utc_now()
    changed = ledger.record(
        args.job,
        args.date,
        parse_attempt_text(args.attempt),
        args.run_id,
        args.state,
        started,
        error=args.error,
    )
    latest = ledger.latest(args.job, args.date)
    data = {"changed": changed, "latest": latest.to_json() if latest else None}
    return Result(
        data,
        f"{'recorded' if changed else 'already recorded (no change)'}: "
        f"{args.job} {args.date} attempt {args.attempt} {args.state}",
    )


def cmd_abandon(ledger: Ledger, args: argparse.Namespace) -> Result:
    """Abandon the latest attempt of JOB for DATE (running, its lease live or not). Exit 1,
    nothing written, when there is no attempt; 3 (StateConflict) when it is not running; 2
    for a job the ledger has never seen (the closest names suggested) or a key of another
    period kind than the job's."""
    period_key(args.date)  # a bad date is refused before the names are looked up
    refuse_unknown(ledger, [args.job])
    key = check_key(ledger, args.job, args.date)
    abandoned = ledger.abandon(args.job, key, reason=args.reason)
    if abandoned is None:
        text = f"{args.job} has no attempts for {args.date}; nothing abandoned"
        return Result({"abandoned": None}, text, EXIT_NOT_READY)
    if abandoned.state is RunState.SUCCEEDED:  # its publication had committed
        return Result(
            {"abandoned": None, "succeeded": abandoned.to_json()},
            f"not abandoned: {abandoned.job} {abandoned.business_date} attempt "
            f"{abandoned.attempt} (run {abandoned.run_id}) published before it stopped; "
            "recorded succeeded",
        )
    return Result(
        {"abandoned": abandoned.to_json()},
        f"abandoned: {abandoned.job} {abandoned.business_date} attempt {abandoned.attempt} "
        f"(run {abandoned.run_id}): {abandoned.error}",
    )


def cmd_ready(ledger: Ledger, args: argparse.Namespace) -> Result:
    """The gate for DATE: exit 0 ready, 1 not. A job whose recorded calendar has no business
    day on DATE is not judged (``non_business``); when that is every job, exit 5 (nothing to
    do today), so a cron can tell a holiday from "not ready"."""
    key = period_key(args.date)  # a bad date is refused before the names are looked up
    check_known(ledger, args.jobs, args.allow_unknown)
    off: dict[str, str] = {}
    for job in dict.fromkeys(args.jobs):
        check_key(ledger, job, args.date)
        reason = off_calendar(ledger, job, key)
        if reason is not None:
            off[job] = reason
    judged = [job for job in args.jobs if job not in off]
    if not judged:
        rows = [(job, "non_business", "") for job in off]
        data = {"business_date": key, "ready": False, "business_day": False, "required": []}
        text = f"{key}: NOT A BUSINESS DAY (nothing to do)\n" + _off_text(rows, off)
        return Result({**data, "non_business": off}, text, EXIT_NOT_BUSINESS)
    readiness = ledger.readiness(judged, args.date)
    rows = [
        (job, "non_business", "")
        if job in off
        else (job, "ready", readiness.evidence[job])
        if job in readiness.evidence
        else (job, readiness.blockers[job], "")
        for job in dict.fromkeys(args.jobs)
    ]
    text = f"{readiness.business_date}: {'READY' if readiness else 'NOT READY'}\n"
    data = {**readiness.to_json(), "business_day": True, "non_business": off}
    return Result(data, text + _off_text(rows, off), EXIT_OK if readiness else EXIT_NOT_READY)


def _off_text(rows: list[tuple[str, str, str]], off: dict[str, str]) -> str:
    """The table of ``ready``, then why each job off its calendar is not judged."""
    lines = [table(rows, ("job", "status", "run_id"))]
    lines.extend(f"{job}: {reason}" for job, reason in off.items())
    return "\n".join(lines)


def cmd_history(ledger: Ledger, args: argparse.Namespace) -> Result:
    """Attempts of JOB (on DATE). A job the ledger has never seen is refused (exit 2, with
    the closest known names); with ``--allow-unknown`` it is exit 1, saying so. A known job
    with no attempt on DATE is exit 0, saying so."""
    if args.date is not None:
        period_key(args.date)
    check_known(ledger, [args.job], args.allow_unknown)
    if args.date is not None:
        check_key(ledger, args.job, args.date)
    found = ledger.history(args.job, args.date)
    if not found:
        if args.date is None or not ledger.history(args.job):
            return Result(
                [], f"no such job {args.job} in the ledger ({ledger.describe()})", EXIT_NOT_READY
            )
        return Result([], f"{args.job} has no attempts for {args.date}")
    now = ledger.db_now()
    rows = [
        (
            a.business_date,
            a.attempt,
            a.state.value,
            a.run_id,
            a.started_at.isoformat(),
            lease_text(a, now),
            a.error,
            a.reason,
        )
        for a in found
    ]
    heads = ("date", "attempt", "state", "run_id", "started_at", "lease", "error", "reason")
    return Result([a.to_json() for a in found], table(rows, heads))


def lease_text(attempt: Any, now: dt.datetime) -> str:
    if attempt.lease_expires_at is None:
        return ""
    live = "live" if attempt.lease_live(now) else "expired"
    return f"{live} until {attempt.lease_expires_at.isoformat()}"


def cmd_evidence(ledger: Ledger, args: argparse.Namespace) -> Result:
    period_key(args.date)
    check_known(ledger, [args.consumer], args.allow_unknown, "consumer")
    check_key(ledger, args.consumer, args.date)
    revisions = ledger.publications(args.consumer, args.date)
    if not revisions:
        data = {"consumer": args.consumer, "business_date": args.date, "revisions": []}
        off = off_calendar(ledger, args.consumer, period_key(args.date))
        if off is not None:  # a day off its calendar: nothing to publish, exit 5
            text = f"{args.consumer} {args.date}: nothing to publish: {off}"
            return Result({**data, "non_business": off}, text, EXIT_NOT_BUSINESS)
        return Result(data, f"{args.consumer} {args.date}: not published", EXIT_NOT_READY)
    lines = []
    tables = {r.revision: r.table_version for r in ledger.reservations.of(args.consumer, args.date)}
    for pub in revisions:
        producer = "" if pub.run_id is None else f" by attempt {pub.attempt} (run {pub.run_id})"
        delta = (
            ""
            if tables.get(pub.revision) is None
            else f" to {pub.location} at Delta table version {tables[pub.revision]}"
        )
        lines.append(
            f"{pub.consumer} {pub.business_date} revision {pub.revision} published "
            f"{pub.published_at.isoformat()}{producer}{delta} fingerprint "
            f"{pub.fingerprint}" + (f" reason: {printable(pub.reason)}" if pub.reason else "")
        )
        evidence = table(
            [
                (
                    i.job,
                    i.business_date,
                    i.attempt,
                    i.run_id,
                    i.watermark.isoformat() if i.watermark else "",
                )
                for i in pub.items
            ],
            ("job", "date", "attempt", "run_id", "watermark"),
        )
        lines.extend("  " + line for line in evidence.splitlines())
    return Result(
        {
            "consumer": args.consumer,
            "business_date": args.date,
            "revisions": [
                {**p.to_json(), "table_version": tables.get(p.revision)} for p in revisions
            ],
        },
        "\n".join(lines),
    )


def cmd_stale(ledger: Ledger, args: argparse.Namespace) -> Result:
    """Stale publications of CONSUMER: exit 1 when there are any; a consumer the ledger has
    never seen is refused (exit 2) unless ``--allow-unknown``."""
    if args.since is not None:
        period_key(args.since, "since")
    check_known(ledger, [args.consumer], args.allow_unknown, "consumer")
    if args.since is not None:
        check_key(ledger, args.consumer, args.since, "since")
    found = ledger.stale(args.consumer, args.since)
    rows = [
        (
            s.business_date,
            s.revision,
            s.job,
            s.job_date,
            s.old_attempt,
            s.old_run_id,
            s.new_attempt,
            s.new_run_id,
        )
        for s in found
    ]
    text = (
        table(
            rows,
            (
                "date",
                "revision",
                "upstream",
                "upstream period",
                "old attempt",
                "old run_id",
                "new attempt",
                "new run_id",
            ),
        )
        if rows
        else f"{args.consumer}: no stale publications"
    )
    return Result([s.to_json() for s in found], text, EXIT_NOT_READY if found else EXIT_OK)


def cmd_demo(_: Ledger | None, args: argparse.Namespace) -> Result:
    from gatekeeper.cli.demo import run_demo

    lines = run_demo()
    return Result({"lines": lines}, "\n".join(lines))


def register(add: Callable[..., Any]) -> None:
    """Add the ledger commands to the parser."""
    p = add("record", cmd_record, "Record one observation of an attempt.", writes=True)
    for name in ("job", "date", "attempt", "run_id", "state"):
        p.add_argument(name)
    p.add_argument("--started-at", help="ISO 8601 with offset (default: now)")
    p.add_argument("--error", help="error summary for a failed attempt")
    p = add(
        "abandon",
        cmd_abandon,
        "Record the latest running attempt of JOB for DATE abandoned now, even with a live "
        "lease (its worker can no longer publish); the next run takes the period over.",
        writes=True,
        creates=False,  # only an attempt already recorded can be abandoned
    )
    p.add_argument("job")
    p.add_argument("date")
    p.add_argument("--reason", required=True, help="why (stored as the attempt's error)")
    p = add(
        "ready",
        cmd_ready,
        "Is every job's latest attempt succeeded for DATE? (exit 1 if not; 5 if DATE is a "
        "business day of none of the jobs' calendars)",
    )
    p.add_argument("date")
    p.add_argument("jobs", nargs="+", metavar="job")
    add_allow_unknown(p)
    p = add("history", cmd_history, "Attempts of JOB (for DATE), with leases.")
    p.add_argument("job")
    p.add_argument("date", nargs="?")
    add_allow_unknown(p)
    p = add("evidence", cmd_evidence, "Every revision of a publication with its evidence.")
    p.add_argument("consumer")
    p.add_argument("date")
    add_allow_unknown(p, "consumer")
    p = add(
        "stale",
        cmd_stale,
        "Publications whose upstream evidence a newer succeeded attempt replaced (exit 1 if any).",
    )
    p.add_argument("consumer")
    p.add_argument("--since", help="only dates on or after this one")
    add_allow_unknown(p, "consumer")
    add(
        "demo",
        cmd_demo,
        "Run the backfill-is-not-today scenario on a temporary ledger.",
        ledger=False,
    )
