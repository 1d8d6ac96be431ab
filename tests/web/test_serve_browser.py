"""``gatekeeper serve`` in a real headless Chromium driven by selenium through Debian's
``chromium-driver``: the grid's cells match ``gatekeeper status --json``, a row's strip is
asked for when it is shown, the filters by name and by state find rows never shown, a click
opens the
period (and its evidence links to the upstream's period), hostile text stays text, a
``gatekeeper record`` from another process shows within 5 s without a reload, and the console
stays clean. The docs picture is taken by the same browser set-up:
``python -m tests.helpers.serve_screenshot docs/img/serve.png``."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import gatekeeper as gk
from gatekeeper.cli import main
from tests.helpers.cli import gatekeeper
from tests.helpers.serve import HOSTILE_ERROR, scenario, start, today
from tests.helpers.serve_screenshot import chrome

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def need_driver() -> None:
    """Skip without selenium or chromium-driver (fail under CI, which installs them)."""
    missing = []
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing.append("selenium (pip install -e '.[test]')")
    if shutil.which("chromedriver") is None:
        missing.append("chromedriver (Debian package chromium-driver)")
    if not missing:
        return
    if os.environ.get("CI"):
        pytest.fail(f"CI is set but {', '.join(missing)} is missing")
    pytest.skip(f"needs {', '.join(missing)}")


@pytest.fixture
def browser() -> Iterator[Any]:
    need_driver()
    driver = chrome()
    try:
        yield driver
    finally:
        driver.quit()


def wait_for(check: Callable[[], Any], seconds: float, what: str) -> Any:
    deadline = time.monotonic() + seconds
    while True:
        found = check()
        if found:
            return found
        assert time.monotonic() < deadline, f"not within {seconds} s: {what}"
        time.sleep(0.05)


CELLS = (
    "return Array.from(document.querySelectorAll('.cells i')).map(function(c){"
    "return [c.getAttribute('data-job'),c.getAttribute('data-period'),"
    "c.getAttribute('data-state')];});"
)


def strips_loaded(driver: Any) -> None:
    """Wait until the rows in view have their strips (the page asks for them once shown)."""
    wait_for(
        lambda: driver.execute_script(
            "return document.body.getAttribute('data-strips')&&!Array.from("
            "document.querySelectorAll('.row:not([hidden]):not([data-loaded])')).some("
            "function(r){var b=r.getBoundingClientRect();"
            "return b.bottom>0&&b.top<window.innerHeight;});"
        ),
        10,
        "the strips of the rows shown",
    )


def cell(driver: Any, job: str, period: str) -> Any:
    from selenium.webdriver.common.by import By

    for c in driver.find_elements(By.CSS_SELECTOR, ".cells i"):
        if c.get_attribute("data-job") == job and c.get_attribute("data-period") == period:
            return c
    raise AssertionError(f"no cell {job} {period}")


def test_serve_in_chromium_grid_click_live_update_no_console_errors(
    browser: Any, sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from selenium.webdriver.common.by import By

    with gk.open_ledger(sqlite_url) as ledger:
        scenario(ledger)
    day = [str(today() - dt.timedelta(days=n)) for n in range(6)]
    with start(sqlite_url) as server:
        browser.get(server.url)
        wait_for(
            lambda: browser.find_element(By.TAG_NAME, "body").get_attribute("data-updated"),
            10,
            "the first poll",
        )
        strips_loaded(browser)
        shown = browser.execute_script(CELLS)
        for job in sorted({j for j, _, _ in shown}):
            starts = [p for j, p, _ in shown if j == job]
            capsys.readouterr()
            main(["--ledger", sqlite_url, "status", job, "--start", starts[0], "--json"])
            want = json.loads(capsys.readouterr().out)["periods"]
            assert [[p, s] for j, p, s in shown if j == job] == [
                [p["period"], p["state"]] for p in want
            ]
        # hostile names and errors are text, never elements
        assert browser.execute_script("return document.querySelectorAll('img').length") == 0
        cell(browser, "Sales", day[4]).click()
        panel = browser.find_element(By.ID, "panel")
        wait_for(lambda: panel.get_attribute("data-period") == day[4], 5, "the failed period")
        assert HOSTILE_ERROR in panel.text
        assert browser.execute_script("return document.querySelectorAll('img').length") == 0
        # a published period: its revisions, and the evidence links to the upstream's period
        cell(browser, "Sales", day[5]).click()
        wait_for(lambda: panel.get_attribute("data-period") == day[5], 5, "the published one")
        assert "late <b>data</b>" in panel.text and "fp-2" in panel.text
        panel.find_element(By.CSS_SELECTOR, "a[data-job='Upstream']").click()
        wait_for(lambda: panel.get_attribute("data-job") == "Upstream", 5, "the upstream period")
        assert panel.get_attribute("data-period") == day[5] and "u-5" in panel.text
        # the filter by job name
        browser.find_element(By.ID, "filter").send_keys("stream")
        visible = (
            "return Array.from(document.querySelectorAll('.row')).filter(function(r){"
            "return !r.hidden;}).map(function(r){return r.getAttribute('data-job');});"
        )
        assert browser.execute_script(visible) == ["Upstream"]
        browser.find_element(By.ID, "filter").clear()
        browser.execute_script(
            "document.getElementById('filter').dispatchEvent(new Event('input'))"
        )
        assert len(browser.execute_script(visible)) == 3
        # live: a record from another process shows without a reload
        browser.execute_script("window.gkMarker = 1;")
        assert cell(browser, "Sales", day[1]).get_attribute("data-state") == "missing"
        recorded = gatekeeper(
            "--ledger", sqlite_url, "record", "Sales", day[1], "1", "s-1", "succeeded"
        )
        assert recorded.returncode == 0, recorded.stderr
        wait_for(  # the page polls every second; 30 s only bounds a hang
            lambda: cell(browser, "Sales", day[1]).get_attribute("data-state") == "succeeded",
            30,
            "the live update",
        )
        assert browser.execute_script("return window.gkMarker") == 1  # no reload
        logs = browser.get_log("browser")
    assert not [e for e in logs if e["level"] in ("SEVERE", "WARNING")], logs


SCALE = (
    "var out=[];document.querySelectorAll('.axis').forEach(function(a){"
    "var cells=Array.from(a.querySelectorAll('.cells i')).map(function(c){"
    "return [c.getAttribute('data-period'),c.getBoundingClientRect().left];});"
    "a.querySelectorAll('.scale span').forEach(function(s){out.push([a.getAttribute('data-kind'),"
    "s.className,s.textContent,s.getBoundingClientRect().left,cells]);});});return out;"
)
#: the words of the panel's cells (each a span) that a line break cut in two
WRAPPED = (
    "return Array.from(document.querySelectorAll('#panel td span, #panel th')).filter("
    "function(s){return s.textContent&&s.getClientRects().length>1;}).map(function(s){"
    "return s.textContent;});"
)
MONTHS = "Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split()


def test_serve_grid_reads_dates_titles_unwrapped_words_and_causes(
    browser: Any, sqlite_url: str
) -> None:
    """The axis carries months and days (daily) and days and hours (hourly), each label over
    the column of its period; every cell has a title naming its job, period and state; the
    panel's columns break only between words; a blocked period's panel (and
    /api/jobs/JOB/periods/PERIOD) names its cause, a held one its holder and expiry."""
    from selenium.webdriver.common.by import By

    from tests.helpers.serve import showcase

    slashed = "a/b?c#</script>"  # a name the ledger accepts, reachable from the page too
    failed = str(today() - dt.timedelta(days=4))  # Orders failed; DailySalesLoad blocked
    with gk.open_ledger(sqlite_url) as ledger:
        showcase(ledger)
        ledger.record(slashed, failed, 1, "sl-1", "succeeded", dt.datetime.now(dt.timezone.utc))
    held = str(today() - dt.timedelta(days=1))  # DimCustomer running on a live lease
    with start(sqlite_url) as server:
        browser.get(server.url)
        strips_loaded(browser)
        labels = browser.execute_script(SCALE)
        kinds = {(kind, size) for kind, size, *_ in labels}
        assert kinds == {("daily", "major"), ("daily", "minor"), ("hourly", "major")} | {
            ("hourly", "minor")
        }
        for kind, size, text, left, cells in labels:
            under = [p for p, x in cells if abs(x - left) < 1.5]
            assert under, (kind, text)
            for period in under:  # every row's cell in that column is the labelled period
                if kind == "daily":
                    day = dt.date.fromisoformat(period)
                    want = (
                        f"{MONTHS[day.month - 1]} {day.year}" if size == "major" else str(day.day)
                    )
                else:
                    hour = dt.datetime.fromisoformat(period.replace("Z", "+00:00"))
                    want = (
                        f"{MONTHS[hour.month - 1]} {hour.day}"
                        if size == "major"
                        else f"{hour.hour:02d}"
                    )
                assert text == want, (kind, size, period)
        minors = {text for kind, size, text, *_ in labels if (kind, size) == ("daily", "minor")}
        assert minors <= {"1", "8", "15", "22"} and len(minors) >= 2
        assert {t for k, s, t, *_ in labels if (k, s) == ("hourly", "minor")} <= {
            "00",
            "06",
            "12",
            "18",
        }
        titles = browser.execute_script(
            "return Array.from(document.querySelectorAll('.cells i')).map(function(c){"
            "return [c.getAttribute('data-job'),c.getAttribute('data-period'),"
            "c.getAttribute('data-state'),c.getAttribute('title')];});"
        )
        assert titles and all(t == f"{j} {p}: {s.replace('_', ' ')}" for j, p, s, t in titles)
        panel = browser.find_element(By.ID, "panel")
        # a blocked period: its cause, in the panel and in its JSON
        cell(browser, "DailySalesLoad", failed).click()
        wait_for(lambda: panel.get_attribute("data-period") == failed, 5, "the blocked period")
        detail = server.get(f"/api/jobs/DailySalesLoad/periods/{failed}").json()
        listed = server.get(f"/api/jobs/DailySalesLoad/periods?start={failed}").json()
        assert detail["state"] == "blocked" and detail["held_by"] is None
        assert detail["blocked_by"] == listed["periods"][0]["blocked_by"]
        assert detail["blocked_by"]["job"] == "Orders"
        assert detail["blocked_by"]["state"] == "failed"
        cause = panel.find_element(By.CSS_SELECTOR, ".cause").text
        assert cause == detail["cause"] and cause.startswith(f"blocked: Orders {failed} failed")
        assert "disk full" in cause
        # the failed upstream: every word of its row on one line
        cell(browser, "Orders", failed).click()
        wait_for(lambda: panel.get_attribute("data-job") == "Orders", 5, "the failed one")
        wait_for(lambda: panel.get_attribute("data-period") == failed, 5, "the failed period")
        assert "RuntimeError: disk full on /data" in panel.text
        assert browser.execute_script(WRAPPED) == []
        cell(browser, slashed, failed).click()
        wait_for(lambda: panel.get_attribute("data-job") == slashed, 5, "the slashed job")
        assert "sl-1" in panel.text
        # a held period: its holder and the lease's expiry
        cell(browser, "DimCustomer", held).click()
        wait_for(lambda: panel.get_attribute("data-job") == "DimCustomer", 5, "the held period")
        detail = server.get(f"/api/jobs/DimCustomer/periods/{held}").json()
        assert detail["held_by"]["run_id"] == f"c-{held}" and detail["blocked_by"] is None
        cause = panel.find_element(By.CSS_SELECTOR, ".cause").text
        assert cause == detail["cause"] and cause.startswith(f"held by run c-{held} (attempt 1)")
        assert detail["held_by"]["until"] in cause
        assert browser.execute_script(WRAPPED) == []
        logs = browser.get_log("browser")
    assert not [e for e in logs if e["level"] in ("SEVERE", "WARNING")], logs


def state_of(driver: Any, job: str, period: str) -> str | None:
    """The ``data-state`` of a cell, None while its row's strip is not there."""
    found: str | None = driver.execute_script(
        "var job=arguments[0],period=arguments[1];"
        "var c=Array.from(document.querySelectorAll('.cells i')).find(function(c){"
        "return c.getAttribute('data-job')===job&&c.getAttribute('data-period')===period;});"
        "return c?c.getAttribute('data-state'):null;",
        job,
        period,
    )
    return found


VISIBLE = (
    "return Array.from(document.querySelectorAll('.row')).filter(function(r){"
    "return !r.hidden;}).map(function(r){return r.getAttribute('data-job');});"
)


def test_serve_loads_a_strip_when_shown_and_filters_rows_never_shown(
    browser: Any, sqlite_url: str
) -> None:
    """300 jobs: the page holds their summaries and only the rows in view ask for their
    strips; filtering by state finds a failed job far down (its strip never loaded) and its
    strip comes once it is shown; scrolling to the last row brings its strip."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    now = dt.datetime.now(dt.timezone.utc)
    day = str(today() - dt.timedelta(days=1))
    with gk.open_ledger(sqlite_url) as ledger:
        for n in range(300):
            state = "failed" if n == 250 else "succeeded"
            ledger.record(f"Bulk{n:03d}", day, 1, f"b-{n}", state, now)
    with start(sqlite_url) as server:
        browser.get(server.url)
        strips_loaded(browser)
        loaded = "return document.querySelectorAll('.row[data-loaded]').length"
        assert 0 < browser.execute_script(loaded) < 100
        far = "return document.querySelector('.row[data-job=Bulk250]').hasAttribute('data-loaded')"
        assert browser.execute_script(far) is False
        Select(browser.find_element(By.ID, "state")).select_by_value("failed")
        assert browser.execute_script(VISIBLE) == ["Bulk250"]
        wait_for(
            lambda: state_of(browser, "Bulk250", day) == "failed",
            10,
            "the failed job's strip",
        )
        Select(browser.find_element(By.ID, "state")).select_by_value("")
        assert len(browser.execute_script(VISIBLE)) == 300
        browser.execute_script("document.querySelector('.row[data-job=Bulk299]').scrollIntoView()")
        wait_for(
            lambda: state_of(browser, "Bulk299", day) == "succeeded",
            10,
            "the last row's strip",
        )
        # the name and the state together
        browser.find_element(By.ID, "filter").send_keys("Bulk29")
        Select(browser.find_element(By.ID, "state")).select_by_value("failed")
        assert browser.execute_script(VISIBLE) == []
        logs = browser.get_log("browser")
    assert not [e for e in logs if e["level"] in ("SEVERE", "WARNING")], logs
