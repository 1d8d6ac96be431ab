"""Example: retail media campaign exports, Bronze → Silver → Gold, restartable by hand.

    luigi --module example_pipelines.retail_media GoldCampaignDaily --business-date 2026-11-07 \\
          --local-scheduler

``BronzeCampaignExports`` lands the day's simulated ad-platform export as is: a CSV whose fields
are messy (campaign names in any case and separator, ``$1,234.50``/``USD 1234.50`` spend, ``07``
or ``07:00`` hours, thousands separators, one row re-sent). ``SilverCampaigns`` normalizes it to
one row per campaign, channel and hour; ``GoldCampaignDaily`` aggregates that to one row per
campaign and channel plus the day's totals. Money is integer cents throughout. The data is
generated deterministically from the business date: the same date gives the same files.

Every task is a BusinessDateTask, so its attempts are in the ledger. The two transform stages
also append to a JSONL stage event log, ``<output_dir>/pipeline_events.jsonl``, in the format
``gatekeeper plan-recovery --events`` reads: Silver is stage 1 and Gold stage 2 of one pipeline
run (``--pipeline-run``, default ``retail-media-<business date>``). Bronze is the landing of the
source export, not a stage of the run.

The log allows one ``started`` and one outcome per stage and run, so a restart is a new pipeline
run (``--pipeline-run retail-media-2026-11-07-restart``); logging a stage twice under one run ID
is refused before an attempt is recorded. ``--fail-gold`` makes Gold fail after reading Silver
and before writing anything (see docs/recovery_walkthrough.md).
"""

from __future__ import annotations

import csv
import datetime as dt
import hashlib
import json
import os
import re
from collections.abc import Iterable, Sequence
from typing import Any

import luigi

import gatekeeper as gk
from gatekeeper.core.recovery import (
    FAILED,
    NOT_STARTED,
    STARTED,
    SUCCEEDED,
    summarize_event_lines,
)

EVENTS_FILE = "pipeline_events.jsonl"
EXPECTED_STAGES = 2
CHANNELS = ("display", "search", "social")
#: The simulated campaigns: (display name, channel).
CAMPAIGNS: tuple[tuple[str, str], ...] = (
    ("Winter Sale", "search"),
    ("Winter Sale", "social"),
    ("Brand Awareness", "display"),
    ("New Arrivals", "social"),
    ("Loyalty Retargeting", "display"),
)
RAW_HEADER = ("Campaign Name", "Channel", "Hour", "Impr.", "Clicks", "Spend")
SILVER_HEADER = (
    "business_date",
    "campaign_id",
    "channel",
    "hour",
    "impressions",
    "clicks",
    "spend_cents",
)
GOLD_HEADER = (
    "business_date",
    "campaign_id",
    "channel",
    "hours",
    "impressions",
    "clicks",
    "spend_cents",
    "ctr_bp",
)

Fact = tuple[str, str, int, int, int, int]  # name, channel, hour, impressions, clicks, cents


# --------------------------------------------------------------------------- simulated source


def _number(*parts: object) -> int:
    """A deterministic pseudo-random number from its parts."""
    return int(hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()[:8], 16)


def campaign_facts(business_date: dt.date) -> list[Fact]:
    """The day's true hourly figures per campaign and channel (before the export mangles them)."""
    facts: list[Fact] = []
    for name, channel in CAMPAIGNS:
        hours = sorted({_number("hour", business_date, name, channel, k) % 24 for k in range(6)})
        for hour in hours:
            seed = (business_date, name, channel, hour)
            impressions = 500 + _number("impressions", *seed) % 20_000
            clicks = impressions * (5 + _number("ctr", *seed) % 40) // 1000
            cents = impressions * (150 + _number("cpm", *seed) % 1350) // 1000
            facts.append((name, channel, hour, impressions, clicks, cents))
    return facts


def _pick(options: Sequence[str], *seed: object) -> str:
    return options[_number("format", *seed) % len(options)]


def messy_row(fact: Fact, *seed: object) -> tuple[str, ...]:
    """One export row for ``fact``, each field in one of the formats the platforms emit."""
    name, channel, hour, impressions, clicks, cents = fact
    dollars = f"{cents // 100}.{cents % 100:02d}"
    grouped = f"{cents // 100:,}.{cents % 100:02d}"
    return (
        _pick(
            [name, f"  {name.lower()} ", name.upper().replace(" ", "_"), name.replace(" ", "-")],
            "name",
            *seed,
        ),
        _pick([channel.title(), f" {channel}", f"{channel.upper()} "], "channel", *seed),
        _pick([str(hour), f"{hour:02d}", f"{hour:02d}:00"], "hour", *seed),
        _pick([str(impressions), f"{impressions:,}", f" {impressions} "], "impressions", *seed),
        _pick([str(clicks), f"{clicks}.0"], "clicks", *seed),
        _pick([f"${grouped}", dollars, f"USD {dollars}", grouped], "spend", *seed),
    )


def raw_export_rows(business_date: dt.date) -> list[tuple[str, ...]]:
    """The day's export as the platform sends it: messy fields, shuffled, one row re-sent."""
    facts = campaign_facts(business_date)
    rows = [messy_row(fact, business_date, index) for index, fact in enumerate(facts)]
    resent = _number("resent", business_date) % len(facts)
    rows.append(messy_row(facts[resent], business_date, "resent"))
    return sorted(rows, key=lambda row: _number("order", business_date, *row))


# --------------------------------------------------------------------------- normalization

_AMOUNT = re.compile(r"(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d{1,2}))?")
_COUNT = re.compile(r"(\d{1,3}(?:,\d{3})+|\d+)(?:\.0+)?")
_HOUR = re.compile(r"(\d{1,2})(?::00)?")
_SLUG = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


def parse_campaign_id(raw: str, field: str = "Campaign Name") -> str:
    """``"  winter sale "``, ``WINTER_SALE``, ``Winter-Sale`` → ``winter-sale``."""
    slug = re.sub(r"[\s_-]+", "-", raw.strip().lower())
    if not _SLUG.fullmatch(slug):
        raise gk.InvalidInput(field, raw, "not a campaign name")
    return slug


def parse_channel(raw: str, field: str = "Channel") -> str:
    """A known channel in any case, with blanks around it."""
    value = raw.strip().lower()
    if value not in CHANNELS:
        raise gk.InvalidInput(field, raw, f"expected one of {', '.join(CHANNELS)}")
    return value


def parse_hour(raw: str, field: str = "Hour") -> int:
    """``7``, ``07`` or ``07:00`` → 7 (0-23)."""
    match = _HOUR.fullmatch(raw.strip())
    if match is None or int(match.group(1)) > 23:
        raise gk.InvalidInput(field, raw, "expected an hour 0-23 (7, 07 or 07:00)")
    return int(match.group(1))


def parse_count(raw: str, field: str) -> int:
    """``12,345``, `` 12345 `` or ``12345.0`` → 12345; a fraction is refused."""
    match = _COUNT.fullmatch(raw.strip())
    if match is None:
        raise gk.InvalidInput(field, raw, "expected a whole number")
    return int(match.group(1).replace(",", ""))


def parse_spend_cents(raw: str, field: str = "Spend") -> int:
    """``$1,234.50``, ``USD 1234.50``, ``1234.5`` or ``1234`` dollars → 123450 cents.

    Parsed exactly (no floats); more than two decimals is refused, never rounded.
    """
    text = raw.strip().removeprefix("USD").removeprefix("$").strip()
    match = _AMOUNT.fullmatch(text)
    if match is None:
        raise gk.InvalidInput(field, raw, "expected dollars with at most two decimals")
    whole, fraction = match.group(1).replace(",", ""), match.group(2) or "0"
    return int(whole) * 100 + int(fraction.ljust(2, "0"))


def normalize_row(raw: Sequence[str], where: str) -> tuple[tuple[str, str, int], tuple[int, ...]]:
    """Return ``((campaign_id, channel, hour), (impressions, clicks, spend_cents))``.

    Raises InvalidInput naming ``where`` (e.g. ``row 3``) and the field.
    """
    if len(raw) != len(RAW_HEADER):
        raise gk.InvalidInput(where, list(raw), f"expected {len(RAW_HEADER)} fields")
    name, chan, hr, impressions, clicks, spend = raw
    key = (
        parse_campaign_id(name, f"{where}: Campaign Name"),
        parse_channel(chan, f"{where}: Channel"),
        parse_hour(hr, f"{where}: Hour"),
    )
    values = (
        parse_count(impressions, f"{where}: Impr."),
        parse_count(clicks, f"{where}: Clicks"),
        parse_spend_cents(spend, f"{where}: Spend"),
    )
    if values[1] > values[0]:
        raise gk.InvalidInput(f"{where}: Clicks", clicks, "more clicks than impressions")
    return key, values


def normalize_export(rows: Iterable[Sequence[str]], business_date: dt.date) -> list[list[Any]]:
    """Silver rows (``SILVER_HEADER`` order, sorted) of an export's data rows.

    A re-sent row (same campaign, channel and hour, same figures) is kept once; the same key
    with different figures is refused with InvalidInput, never resolved by guessing.
    """
    seen: dict[tuple[str, str, int], tuple[tuple[int, ...], str]] = {}
    for number, raw in enumerate(rows, start=2):  # line 1 is the header
        where = f"row {number}"
        key, values = normalize_row(raw, where)
        if key in seen and seen[key][0] != values:
            raise gk.InvalidInput(where, list(raw), f"contradicts {seen[key][1]} for {key}")
        seen.setdefault(key, (values, where))
    date = business_date.isoformat()
    return [[date, *key, *values] for key, (values, _) in sorted(seen.items())]


def daily_aggregates(silver: Iterable[Sequence[Any]]) -> list[list[Any]]:
    """Gold rows (``GOLD_HEADER`` order) of Silver rows: sums per campaign and channel.

    ``ctr_bp`` is the click-through rate in basis points, rounded down.
    """
    groups: dict[tuple[str, str, str], list[int]] = {}
    for date, cid, chan, _hour, impressions, clicks, cents in silver:
        sums = groups.setdefault((str(date), str(cid), str(chan)), [0, 0, 0, 0])
        for index, value in enumerate((1, impressions, clicks, cents)):
            sums[index] += int(value)
    return [
        [*key, hours, impressions, clicks, cents, clicks * 10_000 // impressions]
        for key, (hours, impressions, clicks, cents) in sorted(groups.items())
    ]


# --------------------------------------------------------------------------- files and events


def write_csv(
    target: luigi.LocalTarget,
    header: Sequence[str],
    rows: Iterable[Sequence[Any]],
) -> None:
    """Write a CSV atomically (Luigi renames the finished file into place)."""
    with target.open("w") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)


def read_csv(target: luigi.LocalTarget, header: Sequence[str]) -> list[list[str]]:
    """The data rows of a CSV; raises InvalidInput when its header is not ``header``."""
    with target.open("r") as handle:
        rows = list(csv.reader(handle))
    if not rows or rows[0] != list(header):
        raise gk.InvalidInput(target.path, rows[0] if rows else None, f"expected {list(header)}")
    return rows[1:]


def append_event(path: str, run_id: str, stage: int, event: str) -> None:
    """Append one stage event (``ts`` from the real clock, UTC) to the JSONL log; writes."""
    line = json.dumps(
        {
            "ts": dt.datetime.now(dt.timezone.utc).isoformat(),
            "run_id": run_id,
            "stage": stage,
            "event": event,
        }
    )
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(line + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def logged_status(path: str, run_id: str, stage: int) -> str:
    """The status the event log gives ``stage`` of ``run_id`` (``not_started`` without a log).

    Raises InvalidInput when the log is malformed (it is read whole, as the planner reads it).
    """
    if not os.path.exists(path):
        return NOT_STARTED
    with open(path, encoding="utf-8") as handle:
        summary = summarize_event_lines(handle, EXPECTED_STAGES)
    for run in summary["runs"]:
        if run["run_id"] == run_id:
            return str(run["stages"][stage - 1]["status"])
    return NOT_STARTED


# --------------------------------------------------------------------------- Luigi tasks


class _RetailMediaTask(gk.BusinessDateTask):
    """A task of this pipeline: files under ``output_dir``."""

    output_dir = luigi.Parameter(
        default="data/outputs",
        significant=False,
        positional=False,
        description="Directory of the Bronze/Silver/Gold files and the stage event log",
    )

    def path(self, *parts: str) -> str:
        return os.path.join(str(self.output_dir), *parts)

    def dated(self, *folders: str, suffix: str = ".csv") -> luigi.LocalTarget:
        """The target ``<output_dir>/<folders>/<business date><suffix>``."""
        return luigi.LocalTarget(self.path(*folders, f"{self.business_date.isoformat()}{suffix}"))


class BronzeCampaignExports(_RetailMediaTask):
    """Lands the day's raw campaign export unchanged (the pipeline's source, not a logged stage)."""

    def output(self) -> luigi.LocalTarget:
        return self.dated("bronze", "campaign_exports")

    def run(self) -> None:
        write_csv(self.output(), RAW_HEADER, raw_export_rows(self.business_date))


class _LoggedStage(_RetailMediaTask):
    """A stage of the pipeline run: logs started, then succeeded or failed, around ``produce()``."""

    stage_number = 0
    pipeline_run = luigi.Parameter(
        default="",
        significant=False,
        positional=False,
        description="Run ID in the stage event log (default retail-media-<business date>); a "
        "restart needs a new one",
    )

    @property
    def pipeline_run_id(self) -> str:
        return str(self.pipeline_run) or f"retail-media-{self.business_date.isoformat()}"

    def events_path(self) -> str:
        return self.path(EVENTS_FILE)

    def before_attempt(self, ledger: gk.Ledger) -> None:
        """Refuse, recording nothing, when the log already holds this stage of this run."""
        run_id, log = self.pipeline_run_id, self.events_path()
        status = logged_status(log, run_id, self.stage_number)
        if status != NOT_STARTED:
            raise gk.InvalidInput(
                "pipeline_run",
                run_id,
                f"{log} already records stage {self.stage_number} ({self.job_id}) of this run "
                f"as {status}, and a run logs each stage once; a restart is a new pipeline "
                f"run, e.g. --pipeline-run {run_id}-restart",
            )

    def run(self) -> None:
        log, run_id = self.events_path(), self.pipeline_run_id
        append_event(log, run_id, self.stage_number, STARTED)
        try:
            self.produce()
        except BaseException:
            append_event(log, run_id, self.stage_number, FAILED)
            raise
        append_event(log, run_id, self.stage_number, SUCCEEDED)

    def produce(self) -> None:
        raise NotImplementedError(f"{type(self).__name__} must implement produce()")


class SilverCampaigns(_LoggedStage):
    """Stage 1: the export normalized, one row per campaign, channel and hour."""

    stage_number = 1

    def requires(self) -> BronzeCampaignExports:
        return BronzeCampaignExports(business_date=self.business_date, output_dir=self.output_dir)

    def output(self) -> luigi.LocalTarget:
        return self.dated("silver", "campaigns")

    def produce(self) -> None:
        raw = read_csv(self.input(), RAW_HEADER)
        write_csv(self.output(), SILVER_HEADER, normalize_export(raw, self.business_date))


class GoldCampaignDaily(_LoggedStage):
    """Stage 2: daily aggregates per campaign and channel, and the day's totals."""

    stage_number = 2
    fail_gold = luigi.BoolParameter(
        default=False,
        significant=False,
        positional=False,
        description="Fail after reading Silver, before writing anything (recovery walkthrough)",
    )

    def requires(self) -> SilverCampaigns:
        return SilverCampaigns(
            business_date=self.business_date,
            output_dir=self.output_dir,
            pipeline_run=self.pipeline_run,
        )

    def output(self) -> dict[str, luigi.LocalTarget]:
        return {
            "daily": self.dated("gold", "campaign_daily"),
            "totals": self.dated("gold", "campaign_daily", suffix=".totals.json"),
        }

    def produce(self) -> None:
        source = self.input()
        rows = daily_aggregates(read_csv(source, SILVER_HEADER))
        if self.fail_gold:
            raise RuntimeError(
                f"{self.job_id} {self.business_date}: injected failure "
                "(--fail-gold), nothing written"
            )
        write_csv(self.output()["daily"], GOLD_HEADER, rows)
        with self.output()["totals"].open("w") as handle:
            json.dump(
                day_totals(self.business_date, rows, source.path), handle, indent=2, sort_keys=True
            )
            handle.write("\n")


def day_totals(
    business_date: dt.date,
    gold: Sequence[Sequence[Any]],
    silver_path: str,
) -> dict[str, Any]:
    """The day's totals over Gold rows, with the Silver file they came from and its sha256."""
    with open(silver_path, "rb") as handle:
        digest = hashlib.sha256(handle.read()).hexdigest()
    return {
        "business_date": business_date.isoformat(),
        "rows": len(gold),
        "impressions": sum(int(r[4]) for r in gold),
        "clicks": sum(int(r[5]) for r in gold),
        "spend_cents": sum(int(r[6]) for r in gold),
        "source": {"file": os.path.basename(silver_path), "sha256": digest},
    }
