"""Pure rules of the records and of readiness: what a ``Readiness`` says of its blockers, the
fingerprint is the SHA-256 of canonical JSON, and a bad watermark is refused naming its field."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

import gatekeeper as gk
from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.readiness import Watermarks

UTC = dt.timezone.utc


D = "2026-10-22"


def test_describe_blockers_lists_each_blocker_or_says_nothing() -> None:
    ready = gk.Readiness(D, ("Dim",), evidence={"Dim": "dim-1"}, attempts={"Dim": 1})
    assert (bool(ready), ready.describe_blockers()) == (True, "nothing")
    blocked = gk.Readiness(
        D,
        ("Dim", "Feed", "Web"),
        blockers={"Web": "running", "Dim": "missing", "Feed": "watermark"},
        attempts={"Web": 3, "Feed": 1},
        details={"Feed": "watermark 2026-10-22T23:00:00+00:00 < 2026-10-23T00:00:00+00:00"},
    )
    assert blocked.describe_blockers() == (
        "Dim (missing), Feed (attempt 1 watermark 2026-10-22T23:00:00+00:00 < "
        "2026-10-23T00:00:00+00:00), Web (attempt 3 running)"
    )


def test_fingerprint_is_the_sha256_of_canonical_json() -> None:
    import hashlib

    canonical = rb'{"a":[1,2.5,"\u00e9"],"b":{"c":null}}'  # ensure_ascii
    payload = {"b": {"c": None}, "a": [1, 2.5, "\u00e9"]}
    assert gk.fingerprint(payload) == "sha256:" + hashlib.sha256(canonical).hexdigest()
    assert gk.fingerprint(canonical) == gk.fingerprint(payload)  # bytes are hashed as they are
    for bad in ({"x": float("nan")}, {"x": {1, 2}}):
        with pytest.raises(InvalidInput) as caught:
            gk.fingerprint(bad)
        assert (caught.value.field, caught.value.value) == ("payload", bad)
        assert caught.value.reason.startswith("not canonical JSON: ")


END = dt.datetime(2026, 10, 23, tzinfo=UTC)  # end of D's interval in UTC


@pytest.mark.parametrize(
    ("required", "observed", "field"),
    [
        ("2026-10-23T00:00:00", {}, "watermark_required"),  # naive: no offset
        (END, {"": END}, "watermarks[]"),
        (END, {"Feed": "yesterday"}, "watermarks[Feed]"),
    ],
)
def test_watermarks_parse_names_the_refused_field(
    required: Any, observed: dict[str, Any], field: str
) -> None:
    with pytest.raises(gk.InvalidInput) as caught:
        Watermarks.parse(required, observed)
    assert caught.value.field == field
