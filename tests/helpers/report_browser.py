"""Headless Chromium for the report tests, with the stdlib only: the DOM after load, the
console messages, a screenshot and its pixels; plus the realistic ledger the README's
screenshot shows.

``python -m tests.helpers.report_browser docs/report.png`` rebuilds that screenshot: it writes the
ledger, runs the real ``gatekeeper report`` command and photographs the page.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import gatekeeper as gk

UTC = dt.timezone.utc
#: The scenario's clock: October 2026 at 07:00 UTC on the 23rd, lateness 2h.
NOW = dt.datetime(2026, 10, 23, 7, 0, tzinfo=UTC)
_CONSOLE = re.compile(r":CONSOLE(?::\d+)?\] (.*)")


def find_chromium() -> str | None:
    """The Chromium binary (Debian's ``chromium``, or ``chromium-browser``), or None."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


def need_chromium() -> None:
    """Skip the test without Chromium (fail under CI, which installs it)."""
    import pytest

    if find_chromium() is not None:
        return
    if os.environ.get("CI"):
        pytest.fail("CI is set but chromium is missing (Debian package chromium)")
    pytest.skip("needs chromium (Debian package chromium)")


@dataclass(frozen=True)
class Page:
    """What Chromium saw: the DOM after load and the console messages it logged."""

    dom: str
    console: tuple[str, ...]


def run_chromium(url: str, extra: list[str], *, width: int = 1280, height: int = 900) -> Page:
    """Load ``url`` in a fresh headless Chromium (device scale 1, sRGB) with ``extra``
    arguments (``--dump-dom`` or ``--screenshot=...``); returns stdout and console lines."""
    binary = find_chromium()
    assert binary is not None, "chromium not found"
    with tempfile.TemporaryDirectory(prefix="gk-chromium-") as profile:
        done = subprocess.run(
            [
                binary,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--force-device-scale-factor=1",
                "--force-color-profile=srgb",
                "--hide-scrollbars",
                "--disable-extensions",
                f"--user-data-dir={profile}",
                f"--window-size={width},{height}",
                "--enable-logging=stderr",
                "--v=0",
                *extra,
                url,
            ],
            capture_output=True,
            text=True,
            timeout=90,
            check=False,
        )
    console = tuple(m.group(1) for m in _CONSOLE.finditer(done.stderr))
    assert done.returncode == 0, f"chromium exited {done.returncode}: {done.stderr[-2000:]}"
    return Page(done.stdout, console)


def dump_dom(path: Path, **size: int) -> Page:
    return run_chromium(path.as_uri(), ["--dump-dom"], **size)


def screenshot(path: Path, png: Path, **size: int) -> Page:
    page = run_chromium(path.as_uri(), [f"--screenshot={png}"], **size)
    assert png.exists(), "chromium wrote no screenshot"
    return page


class Elements(HTMLParser):
    """Every element of a document as (tag, attributes), in document order."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[str, dict[str, str]]] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, {k: v or "" for k, v in attrs}))

    def cells(self) -> list[dict[str, str]]:
        """The report's cells: elements carrying ``data-period``."""
        return [a for _, a in self.found if "data-period" in a]

    def first(self, tag: str) -> dict[str, str]:
        return next(a for t, a in self.found if t == tag)


#: Appended (by the tests, to a copy of the report) to record where things are drawn.
PROBE = """<script>(function(){
  function box(el){var r=el.getBoundingClientRect();return [r.left,r.top,r.width,r.height];}
  var failed=document.querySelector('.cells i[data-state="failed"]');
  var swatch=document.querySelector('.legend .sw[data-state="failed"]');
  document.body.setAttribute('data-probe',JSON.stringify({failed:box(failed),
    period:failed.getAttribute('data-period'),legend:box(swatch),
    viewport:[innerWidth,innerHeight]}));
})();</script>"""


def with_probe(report: Path, out: Path) -> Path:
    text = report.read_text(encoding="utf-8")
    out.write_text(text.replace("</body>", PROBE + "</body>"), encoding="utf-8")
    return out


def probe(dom: str) -> dict[str, Any]:
    body = Elements(dom).first("body")
    return dict(json.loads(body["data-probe"]))


def read_png(path: Path) -> tuple[int, int, list[bytes]]:
    """Width, height and RGB rows of an 8-bit, non-interlaced RGB or RGBA PNG (stdlib)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, chunks, header = 8, [], b""
    while pos < len(data):
        (length,), kind = struct.unpack(">I", data[pos : pos + 4]), data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            chunks.append(body)
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert depth == 8 and colour in (2, 6) and interlace == 0, "unsupported PNG layout"
    step = 3 if colour == 2 else 4
    raw = zlib.decompress(b"".join(chunks))
    rows, previous, stride = [], bytearray(width * step), width * step
    for y in range(height):
        start = y * (stride + 1)
        row = _unfilter(raw[start], bytearray(raw[start + 1 : start + 1 + stride]), previous, step)
        rows.append(bytes(b for i in range(0, stride, step) for b in row[i : i + 3]))
        previous = row
    return width, height, rows


def _unfilter(kind: int, row: bytearray, up: bytearray, step: int) -> bytearray:
    for i in range(len(row)):
        left = row[i - step] if i >= step else 0
        corner = up[i - step] if i >= step else 0
        if kind == 1:
            row[i] = (row[i] + left) & 255
        elif kind == 2:
            row[i] = (row[i] + up[i]) & 255
        elif kind == 3:
            row[i] = (row[i] + (left + up[i]) // 2) & 255
        elif kind == 4:
            p = left + up[i] - corner
            pa, pb, pc = abs(p - left), abs(p - up[i]), abs(p - corner)
            pred = left if pa <= pb and pa <= pc else (up[i] if pb <= pc else corner)
            row[i] = (row[i] + pred) & 255
    return row


def pixel(rows: list[bytes], x: int, y: int) -> str:
    """The ``#rrggbb`` colour at (x, y)."""
    return "#" + rows[y][3 * x : 3 * x + 3].hex()


def build_month(url: str) -> None:
    """October 2026 of a sales pipeline, seen at NOW: two dimension loads and a publishing
    sales load, with failed, running, abandoned and missing periods (and, with a catch-up
    window, skipped ones)."""
    ledger = gk.open_ledger(url)
    started = dt.datetime(2026, 10, 1, 3, 0, tzinfo=UTC)
    with ledger:
        for day in range(1, 23):
            date = f"2026-10-{day:02d}"
            if day != 15:
                ledger.record("DimProduct", date, 1, f"prod-{day:02d}-1", "succeeded", started)
            if day == 22:
                ledger.record(
                    "DimCustomer",
                    date,
                    1,
                    "cust-22-1",
                    "failed",
                    started,
                    error="upstream file missing: s3://crm/<export>/2026-10-22.csv",
                )
                ledger.record(
                    "DimCustomer",
                    date,
                    2,
                    "cust-22-2",
                    "failed",
                    started,
                    error='CRM API 503 "Service Unavailable" & retries exhausted',
                )
            else:
                ledger.record("DimCustomer", date, 1, f"cust-{day:02d}-1", "succeeded", started)
        _sales(ledger)


def _sales(ledger: gk.Ledger) -> None:
    """DailySalesLoad from the 3rd: published where both dimensions succeeded; the 9th
    abandoned (its worker died), the 21st running, the 22nd blocked (no attempt)."""
    for day in range(3, 22):
        date = f"2026-10-{day:02d}"
        if day == 15:
            continue
        begun = NOW - dt.timedelta(minutes=20) if day == 21 else NOW - dt.timedelta(days=20 - day)
        attempt = ledger.begin_attempt(
            "DailySalesLoad",
            date,
            f"sales-{day:02d}-1",
            lease_seconds=3600 if day == 21 else 120,
            now=begun,
        )
        if day in (9, 21):
            continue
        ledger.publish(
            "DailySalesLoad",
            date,
            ["DimCustomer", "DimProduct"],
            f"sha256:{day:064x}",
            producer=attempt.run_id,
            now=begun,
        )
        ledger.record(
            "DailySalesLoad", date, attempt.attempt, attempt.run_id, "succeeded", begun, now=begun
        )


def report_command(url: str, out: Path, *jobs: str, extra: tuple[str, ...] = ()) -> Any:
    """Run the real ``gatekeeper report`` over the month at NOW; returns the CompletedProcess."""
    env = {**os.environ, "GATEKEEPER_LEDGER_URL": url}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "gatekeeper.cli",
            "report",
            *jobs,
            "--start",
            "2026-10-01",
            "--stop",
            "2026-11-01",
            "--now",
            NOW.isoformat(),
            "--lateness",
            "2h",
            "--timezone",
            "UTC",
            "-o",
            str(out),
            *extra,
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


JOBS = ("DimCustomer", "DimProduct", "DailySalesLoad")


def main(target: str) -> None:
    """Rebuild the README's screenshot at ``target``."""
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'ledger.db'}"
        build_month(url)
        html = Path(tmp) / "report.html"
        done = report_command(url, html, *JOBS, extra=("--catchup", "last:19"))
        assert done.returncode == 0, done.stderr
        screenshot(html, Path(target), width=1200, height=720)
    print(f"wrote {target}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "docs/report.png")
