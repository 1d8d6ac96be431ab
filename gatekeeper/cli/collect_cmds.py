"""Collector commands: ``gatekeeper collect databricks`` (runs of another system as attempts).

Exit 0; 1 when a run was skipped for a state not in the collector's state map (or Databricks
could not be read); 3 when the ledger refused a run (a conflict); 2 for bad input, checked
before anything is fetched, opened or written.
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
from gatekeeper.core.validation import check_job_id, check_name, check_timestamp


def cmd_collect_databricks(_: Any, args: argparse.Namespace) -> Result:
    """Parse, build the client, collect into the ledger (opened only then), format."""
    job_id = check_job_id(args.job_id, "--job-id")
    job = check_name(args.job, "--job")
    date_param = check_name(args.date_param, "--date-param")
    since = None if args.since is None else check_timestamp(args.since, "--since")
    from gatekeeper.integrations.collectors import databricks

    client = databricks.workspace_client(profile=args.profile)
    with open_cli_ledger(args.ledger, create=True) as ledger:
        report = databricks.collect(
            ledger, client, job_id=job_id, job=job, date_param=date_param, since=since
        )
    code = (
        EXIT_NOT_READY if report.unknown_states else EXIT_CONFLICT if report.conflicts else EXIT_OK
    )
    text = (
        f"Databricks job {job_id} -> {job}: recorded {report.recorded}, unchanged "
        f"{report.unchanged}, skipped {len(report.skipped)}"
    )
    if report.skipped:
        rows = [(s.run_id, s.kind.value, s.reason) for s in report.skipped]
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
        "run's business-date job parameter. Exit 1 when a run's state is not in "
        "the state map.",
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
