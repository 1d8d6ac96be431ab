"""What may be shown (``gatekeeper.core.display``): URLs with ``***`` for the password, control
and bidi characters as visible escapes. Pure: no ledger here; the CLI, the ledger's messages
and the report are checked end to end in tests/cli/test_cli_control_chars.py."""

from __future__ import annotations

import traceback

import pytest

from gatekeeper.core.display import (
    mask,
    mask_exception,
    printable,
    redact_url,
    redact_urls_in,
    url_secrets,
)
from gatekeeper.core.progress import Failure

PW = "s3cr3t-PW"

REDACTED = [
    ("postgresql://u:s3cr3t-PW@h/db", "postgresql://u:***@h/db"),
    ("postgres://u:s3cr3t-PW@h:5433/db?schema=x", "postgres://u:***@h:5433/db?schema=x"),
    ("postgresql://h/db?password=s3cr3t-PW&schema=x", "postgresql://h/db?password=***&schema=x"),
    (
        "postgresql://h/db?schema=x&sslpassword=s3cr3t-PW",
        "postgresql://h/db?schema=x&sslpassword=***",
    ),
    ("postgresql://u:s3cr3t-PW@h/db?password=s3cr3t-PW", "postgresql://u:***@h/db?password=***"),
    ("postgresq://u:s3cr3t-PW@h/db", "postgresq://u:***@h/db"),  # a typo'd scheme
    ("postgresql://u:p%40ss@h/db", "postgresql://u:***@h/db"),  # percent-encoded
]


@pytest.mark.parametrize(("url", "shown"), REDACTED)
def test_redact_url_masks_the_password(url: str, shown: str) -> None:
    assert redact_url(url) == shown


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://u@h/db",
        "postgresql://h:5432/db?schema=x&busy_timeout=3",
        "postgresql://u:@h/db",  # an empty password: nothing to hide
        "sqlite:///gatekeeper.db",
        "sqlite:////tmp/abs.db?busy_timeout=1&reconnect_window=0",
    ],
)
def test_redact_url_leaves_a_url_without_password_unchanged(url: str) -> None:
    assert redact_url(url) == url
    assert url_secrets(url) == ()


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://u:s3cr3t-PW@[::1/db",  # not parseable
        "postgresql://u:s3/cr3t-PW@h/db",  # a / in the password
        "postgresql://u:s3?cr3t-PW@h/db",  # a ? in the password
        "postgresql://u:s3@cr3t-PW@h/db",  # an unencoded @ in the password
        "postgresql:u:s3cr3t-PW@h/db",  # no //
        "u:s3cr3t-PW@h/db",  # no scheme
        "host=h user=u password=s3cr3t-PW dbname=db",  # a libpq keyword string
        "host=h password='s3cr3t-PW x' dbname=db",
    ],
)
def test_redact_url_never_leaks_a_malformed_url(url: str) -> None:
    assert "cr3t" not in redact_url(url)
    assert all(secret in url for secret in url_secrets(url)) and url_secrets(url)
    assert "cr3t" not in mask(f"libpq says: {url}", url_secrets(url))


def test_mask_hides_raw_and_percent_decoded_secrets() -> None:
    secrets = url_secrets("postgresql://u:p%25zz-s3cr3t@h/db")
    assert mask('invalid percent-encoded token: "p%25zz-s3cr3t"', secrets).count("s3cr3t") == 0
    assert mask("as decoded: p%zz-s3cr3t", secrets).count("s3cr3t") == 0


def test_mask_exception_scrubs_the_whole_chain() -> None:
    try:
        try:
            raise ValueError(f"bad token {PW}")
        except ValueError as inner:
            raise RuntimeError(f"cannot open: {PW}") from inner
    except RuntimeError as exc:
        mask_exception(exc, (PW,))
        assert PW not in "".join(traceback.format_exception(exc))


def test_redact_urls_in_masks_every_url_of_a_message() -> None:
    text = f"POST http://u:{PW}@collector:5000/api failed; postgresql://h/db?password={PW}&x=1"
    shown = redact_urls_in(text)
    assert PW not in shown
    assert "http://u:***@collector:5000/api" in shown and "password=***&x=1" in shown


ESCAPED = [
    ("\x1b]0;pwned\x07", "\\x1b]0;pwned\\x07"),  # retitles a terminal
    ("\x1b[2J", "\\x1b[2J"),  # clears the screen
    ("done\rFAKE", "done\\rFAKE"),  # overwrites the line
    ("abc\u202egnp.exe", "abc\\u202egnp.exe"),  # shows as abcexe.png
    ("\u2066x\u2069 \u200e\u200f\u061c", "\\u2066x\\u2069 \\u200e\\u200f\\u061c"),
    ("a\nb\tc", "a\\nb\\tc"),
    ("\x00\x7f\x85\x9b", "\\x00\\x7f\\x85\\x9b"),  # NUL, DEL and C1 controls (CSI)
    ("line\u2028sep", "line\\u2028sep"),
    ("plain, ünïcödé, 日本語, a \\ backslash", "plain, ünïcödé, 日本語, a \\ backslash"),
]


@pytest.mark.parametrize(("text", "shown"), ESCAPED, ids=ascii)
def test_printable_escapes_control_and_bidi_characters(text: str, shown: str) -> None:
    assert printable(text) == shown


def test_printable_keeps_newlines_when_asked() -> None:
    assert printable("a\x1b\nb\r", newlines=True) == "a\\x1b\nb\\r"


def test_failure_describe_escapes_the_error_for_logs_and_luigid() -> None:
    line = Failure.from_error("2026-10-01", "ValueError: \x1b]0;pwned\x07 abc\u202egnp").describe()
    assert "\x1b" not in line and "\x07" not in line and "\u202e" not in line
    assert "\\x1b]0;pwned\\x07" in line and line.startswith("failed at 2026-10-01 (ValueError:")
