"""The docs picture of ``gatekeeper serve`` (docs/img/serve.png), through the browser the
tests drive (selenium and Debian's chromium-driver):

    python -m tests.helpers.serve_screenshot docs/img/serve.png

It writes the showcase ledger (``serve.showcase``) in a temporary folder, starts the real
``gatekeeper serve``, opens the consumer's period blocked by its failed upstream (its cause
named in the panel) and saves the page.
"""

from __future__ import annotations

import datetime
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import gatekeeper as gk
from tests.helpers.serve import showcase, start, today


def chrome(width: int = 1280, height: int = 760) -> Any:
    """A headless Chromium through chromedriver, its console log kept."""
    import shutil

    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu"):
        options.add_argument(arg)
    options.add_argument(f"--window-size={width},{height}")
    options.add_argument("--force-device-scale-factor=1")
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if binary:
        options.binary_location = binary
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(options=options, service=Service(shutil.which("chromedriver")))


def main(target: str) -> None:
    with tempfile.TemporaryDirectory(prefix="gk-serve-shot-") as tmp:
        url = f"sqlite:///{Path(tmp) / 'ledger.db'}"
        with gk.open_ledger(url) as ledger:
            showcase(ledger)
        period = today() - datetime.timedelta(days=4)  # Orders failed: DailySalesLoad blocked
        with start(url) as server:
            driver = chrome()
            try:
                driver.get(f"{server.url}#job=DailySalesLoad&period={period}")
                deadline = time.monotonic() + 10
                while not driver.execute_script(
                    "return document.getElementById('panel').getAttribute('data-period')"
                    "&&document.body.getAttribute('data-strips')"  # the rows' cells are in
                ):
                    assert time.monotonic() < deadline, "the period panel never opened"
                    time.sleep(0.05)
                time.sleep(0.3)
                driver.save_screenshot(target)
            finally:
                driver.quit()
    print(f"wrote {target}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "docs/img/serve.png")
