"""Collector commands: ``gatekeeper collect databricks`` (runs of another system as attempts).

Exit codes (``EXIT_CODES``, also in the command's help and docs/databricks.md):
0 the whole listing was read and every run recorded, already held, or skipped for a reason
that needs nothing (no business date, out of order, never executed);
1 a run needs a look: its state is not in the state map, or it is malformed (the others were
recorded); or nothing was recorded: Databricks could not be read, or the listing was not read
whole (``--max-pages``, ``--time-budget``, a page token repeated);
2 bad input, checked before anything is fetched, opened or written;
3 the ledger refused a run (a conflict); 4 the ledger is unavailable.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from gatekeeper.cli.output import (
    EXIT_CONFLICT,
    EXIT_NOT_READY,
    EXIT_OK,
    Result,
    global_options,
    open_cli_ledger,
    table,
)
from gatekeeper.core.validation import (
    check_job_id,
    check_max_pages,
    check_name,
    check_time_budget,
    check_timestamp,
    parse_count_text,
    parse_number_text,
)
from gatekeeper.luigi import integration_config

EXIT_CODES = (
    "exit 0: every run recorded, already held, or skipped for a reason that needs nothing "
    "(no business date, out of order, never executed); 1: a run's state is not in the state "
    "map or a run is malformed (the others recorded), or nothing recorded because Databricks "
    "could not be read or its listing not read whole (--max-pages, --time-budget, a repeated "
    "page token); 2: bad input (nothing fetched or written); 3: the ledger refused a run; "
    "4: the ledger is unavailable"
)


def bounds_of(args: argparse.Namespace) -> tuple[int, float]:
    """(max pages, time budget): each flag, else ``[gatekeeper] databricks_max_pages`` /
    ``databricks_time_budget`` by the one precedence; raises InvalidInput."""
    if args.max_pages is None:
        pages = integration_config.databricks_max_pages()
    else:
        pages = check_max_pages(
            parse_count_text(args.max_pages, "--max-pages", minimum=1), "--max-pages"
        )
    if args.time_budget is None:
        budget = integration_config.databricks_time_budget()
    else:
        seconds = parse_number_text(args.time_budget, "--time-budget")
        budget = check_time_budget(seconds, "--time-budget")
    return pages, budget


def cmd_collect_databricks(_: Any, args: argparse.Namespace) -> Result:
    """Parse, build the client, collect into the ledger (opened only then), format."""
    job_id = check_job_id(args.job_id, "--job-id")
    job = check_name(args.job, "--job")
    date_param = check_name(args.date_param, "--date-param")
    since = None if args.since is None else check_timestamp(args.since, "--since")
    pages, budget = bounds_of(args)
    from gatekeeper.integrations.collectors import databricks

    client = databricks.workspace_client(profile=args.profile, time_budget=budget)
    with open_cli_ledger(args.ledger, create=True) as ledger:
        report = databricks.collect(
            ledger,
            client,
            job_id=job_id,
            job=job,
            date_param=date_param,
            since=since,
            max_pages=pages,
            time_budget=budget,
        )
    look = report.unknown_states or report.malformed
    code = EXIT_NOT_READY if look else EXIT_CONFLICT if report.conflicts else EXIT_OK
    text = (
        f"Databricks job {job_id} -> {job}: recorded {report.recorded}, unchanged "
        f"{report.unchanged}, skipped {len(report.skipped)}"
    )
    if report.skipped:
        rows = [(s.run_id or "-", s.kind.value, s.reason) for s in report.skipped]
        text += "\n" + table(rows, ("run_id", "skipped", "reason"))
    return Result(report.to_json(), text, code)


def register(add: Callable[..., Any]) -> None:
    """Add ``collect SOURCE`` to the parser (one source: databricks)."""
    help_text = "Record the runs of another system as attempts in the ledger."
    p = add("collect", cmd_collect_databricks, help_text, ledger=False, writes=True)
    sources = p.add_subparsers(dest="source", required=True, metavar="SOURCE")
    d = sources.add_parser(
        "databricks",
        parents=[global_options(defaults=False)],
        help="runs of a Databricks job (DATABRICKS_HOST / DATABRICKS_TOKEN or a profile)",
        description="Record the runs of a Databricks job as attempts of JOB, dated by the "
        f"run's business-date job parameter. {EXIT_CODES}.",
    )
    d.add_argument("--job-id", required=True, metavar="N", help="the Databricks job ID")
    d.add_argument("--job", required=True, metavar="NAME", help="the gatekeeper job name")
    d.add_argument(
        "--date-param",
        default="business_date",
        metavar="NAME",
        help="the job parameter holding the business date (default: business_date)",
    )
    d.add_argument(
        "--since",
        metavar="ISO",
        help="only runs started at or after this time (ISO 8601 with offset)",
    )
    d.add_argument(
        "--profile",
        metavar="NAME",
        help="a ~/.databrickscfg profile (default: the SDK's own choice)",
    )
    d.add_argument(
        "--max-pages",
        metavar="N",
        help="read at most N pages of runs/list, else record nothing and exit 1 (default: "
        "$GATEKEEPER_DATABRICKS_MAX_PAGES, [gatekeeper] databricks_max_pages, 1000)",
    )
    d.add_argument(
        "--time-budget",
        metavar="SECONDS",
        help="read Databricks for at most SECONDS, else record nothing and exit 1 (default: "
        "$GATEKEEPER_DATABRICKS_TIME_BUDGET, [gatekeeper] databricks_time_budget, 300)",
    )
