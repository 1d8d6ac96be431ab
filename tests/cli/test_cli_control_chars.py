"""No control or bidi character reaches a terminal or a page.

Names (job, run ID, consumer, producer...) that contain one are refused, naming the field and
showing the value escaped, and nothing is written. Free text (an attempt's error, a
republication's reason) is stored as given and shown escaped by every command's output, its
``--json`` (``json.dumps`` escapes them) and the HTML report. The ``gatekeeper`` command, in
process, on a SQLite file and a PostgreSQL schema (the ``ledger_url`` fixture).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import gatekeeper as gk
from tests.helpers.cli import gatekeeper
from tests.helpers.ledgers import T0, snapshot, succeed

D = "2026-10-01"
RAW = ("\x1b", "\x07", "\r", "\u202e", "\u2066", "\x85")
HOSTILE_ERROR = "\x1b]0;pwned\x07boom\x1b[2J\rFAKE\nfake-row abc\u202egnp.exe"
SHOWN_ERROR = "\\x1b]0;pwned\\x07boom\\x1b[2J\\rFAKE\\nfake-row abc\\u202egnp.exe"
WINDOW = ("--start", D, "--stop", "2026-10-03", "--now", "2026-10-05T00:00:00+00:00")
WINDOW += ("--lateness", "0s", "--timezone", "UTC")


def assert_no_raw_controls(*texts: str) -> None:
    for text in texts:
        for char in RAW:
            assert char not in text, (ascii(char), ascii(text))


# -- names: refused, escaped in the message, nothing written ----------------------------------
BAD_NAMES = {
    "ESC": ("ab\x1b]0;pwned\x07", "\\x1b]0;pwned\\x07"),
    "BEL": ("ab\x07", "\\x07"),
    "CR": ("ab\rFAKE", "\\rFAKE"),
    "RLO": ("abc\u202egnp.exe", "\\u202egnp.exe"),
    "RLI": ("a\u2067b", "\\u2067b"),
    "RLM": ("a\u200fb", "\\u200fb"),
    "C1 NEL": ("a\x85b", "\\x85b"),
}


@pytest.mark.parametrize("field", ["job", "run_id"])
@pytest.mark.parametrize("case", sorted(BAD_NAMES))
def test_cli_record_refuses_a_name_with_control_characters(
    ledger_url: str, tmp_path: Path, case: str, field: str
) -> None:
    value, escaped = BAD_NAMES[case]
    with gk.open_ledger(ledger_url) as ledger:
        before = snapshot(ledger)
        args = {"job": "A", "run_id": "r1", field: value}
        done = gatekeeper(
            "record", args["job"], D, "1", args["run_id"], "failed", "--ledger", ledger_url,
            cwd=tmp_path,
        )  # fmt: skip
        assert done.returncode == 2, done.stdout + done.stderr
        assert done.stderr.startswith(f"gatekeeper: InvalidInput: invalid {field}=")
        assert escaped in done.stderr and "control or bidi" in done.stderr, done.stderr
        assert done.stderr.count("\n") == 1
        assert_no_raw_controls(done.stdout, done.stderr)
        assert snapshot(ledger) == before


def _publish(ledger: gk.Ledger, **override: Any) -> Any:
    args: dict[str, Any] = {
        "consumer": "Sales",
        "business_date": D,
        "required_jobs": ["A"],
        "fingerprint": "fp-1",
    }
    args.update(override)
    return ledger.publish(**args)


NAME_CALLS: list[tuple[str, Callable[[gk.Ledger, str], Any]]] = [
    ("job", lambda lg, v: lg.begin_attempt(v, D, "r1", lease_seconds=30, now=T0)),
    ("run_id", lambda lg, v: lg.begin_attempt("B", D, v, lease_seconds=30, now=T0)),
    ("consumer", lambda lg, v: _publish(lg, consumer=v)),
    ("producer", lambda lg, v: _publish(lg, producer=v)),
    ("location", lambda lg, v: _publish(lg, location=v)),
    ("jobs[]", lambda lg, v: _publish(lg, required_jobs=["A", v])),
]


@pytest.mark.parametrize("case", ["ESC", "RLO"])
@pytest.mark.parametrize(("field", "call"), NAME_CALLS, ids=[f for f, _ in NAME_CALLS])
def test_ledger_refuses_names_with_control_characters(
    ledger: gk.Ledger, field: str, call: Callable[[gk.Ledger, str], Any], case: str
) -> None:
    succeed(ledger, "A", D)
    before = snapshot(ledger)
    value, escaped = BAD_NAMES[case]
    with pytest.raises(gk.InvalidInput) as caught:
        call(ledger, value)
    assert caught.value.field == field and caught.value.value == value
    assert escaped in str(caught.value)
    assert_no_raw_controls(str(caught.value))
    assert snapshot(ledger) == before


# -- free text: stored as given, shown escaped --------------------------------------------------
def test_cli_error_text_is_stored_as_given_and_printed_escaped(
    ledger_url: str, tmp_path: Path
) -> None:
    recorded = gatekeeper(
        "record", "A", D, "1", "r1", "failed", "--error", HOSTILE_ERROR, "--ledger", ledger_url,
    )  # fmt: skip
    assert recorded.returncode == 0, recorded.stderr
    with gk.open_ledger(ledger_url) as ledger:
        assert ledger.latest("A", D).error == HOSTILE_ERROR  # type: ignore[union-attr]
    history = gatekeeper("history", "A", "--ledger", ledger_url)
    jobs = gatekeeper("jobs", "--ledger", ledger_url)
    status = gatekeeper("status", "A", *WINDOW, "--ledger", ledger_url)
    again = gatekeeper(
        "record", "A", D, "1", "r1", "failed", "--error", HOSTILE_ERROR, "--ledger", ledger_url,
    )  # fmt: skip
    as_json = gatekeeper("history", "A", "--json", "--ledger", ledger_url)
    runs = (recorded, history, jobs, status, again, as_json)
    assert [r.returncode for r in runs] == [0, 0, 0, 1, 0, 0], [r.stderr for r in runs]
    for run in runs:
        assert_no_raw_controls(run.stdout, run.stderr)
    assert SHOWN_ERROR in history.stdout
    assert "\\x1b]0;pwned\\x07" in status.stdout
    # a newline in a cell cannot fake a row: the table keeps one line per attempt
    assert len(history.stdout.splitlines()) == 2
    assert not any(line.startswith("fake-row") for line in history.stdout.splitlines())
    assert json.loads(as_json.stdout)[0]["error"] == HOSTILE_ERROR  # ensure_ascii escapes


def test_cli_republish_reason_is_stored_as_given_and_printed_escaped(
    ledger: gk.Ledger, ledger_url: str
) -> None:
    succeed(ledger, "A", D)
    assert _publish(ledger) is True
    reason = "late data\x1b[2J\rOK abc\u202egnp"
    assert ledger.republish("Sales", D, ["A"], "fp-2", reason=reason) is True
    assert {p.revision: p.reason for p in ledger.publications("Sales", D)}[2] == reason
    done = gatekeeper("evidence", "Sales", D, "--ledger", ledger_url)
    assert done.returncode == 0, done.stderr
    assert_no_raw_controls(done.stdout, done.stderr)
    assert "reason: late data\\x1b[2J\\rOK abc\\u202egnp" in done.stdout


def test_cli_report_shows_error_text_and_names_escaped(sqlite_url: str, tmp_path: Path) -> None:
    with gk.open_ledger(sqlite_url) as ledger:
        ledger.record("A", D, 1, "r1", "failed", T0, error=HOSTILE_ERROR)
    report = tmp_path / "report.html"
    done = gatekeeper("report", "A", *WINDOW, "--output", str(report), "--ledger", sqlite_url)
    assert done.returncode == 0, done.stderr
    page = report.read_text(encoding="utf-8")
    assert_no_raw_controls(page, done.stdout, done.stderr)
    assert "\\x1b]0;pwned\\x07boom" in page  # the attention list and the tooltip
    assert "abc\\u202egnp.exe" in page
