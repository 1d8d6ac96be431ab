"""The closest known names of a name the ledger has never seen, and the error naming them."""

from __future__ import annotations

import pickle

import pytest

from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.names import closest, describe_unknown, family, unknown_names_error

KNOWN = (
    "NetRevenue",
    "Refunds(region=eu)",
    "Refunds(region=us)",
    "DimCustomer",
    "DimProduct",
    "DailySalesLoad",
)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("NetRevnue", ("NetRevenue",)),  # a typo: difflib on the whole name
        ("netrevenue", ("NetRevenue",)),  # case: the same family
        ("Refunds", ("Refunds(region=eu)", "Refunds(region=us)")),  # the family of parameters
        ("refunds", ("Refunds(region=eu)", "Refunds(region=us)")),
        ("Refunds(region=uk)", ("Refunds(region=eu)", "Refunds(region=us)")),
        ("Refunds(region=eu", ("Refunds(region=eu)", "Refunds(region=us)")),
        ("Refnds", ("Refunds(region=eu)", "Refunds(region=us)")),  # a family close by difflib
        ("DimCustomr", ("DimCustomer",)),  # not DimProduct: not close enough
        ("Inventory", ()),  # nothing close
        ("", ()),
    ],
)
def test_closest_names_by_family_then_closeness(name: str, expected: tuple[str, ...]) -> None:
    assert closest(name, KNOWN) == expected


def test_closest_never_suggests_the_name_itself_nor_twice() -> None:
    assert closest("A", ["A", "A", "a"]) == ("a",)


def test_closest_keeps_at_most_the_limit() -> None:
    regions = [f"Refunds(region={r})" for r in "abcdefgh"]
    assert closest("Refunds", regions) == tuple(regions[:5])
    assert closest("Refunds", regions, limit=2) == tuple(regions[:2])


def test_closest_of_an_empty_ledger_is_nothing() -> None:
    assert closest("NetRevenue", ()) == ()


@pytest.mark.parametrize(
    ("name", "expected"),
    [("Refunds(region=eu)", "Refunds"), ("Refunds", "Refunds"), ("A(b=(c))", "A"), ("", "")],
)
def test_family_is_the_name_before_its_parameters(name: str, expected: str) -> None:
    assert family(name) == expected


@pytest.mark.parametrize(
    ("kind", "suggestions", "expected"),
    [
        (
            "job",
            {"NetRevnue": ("NetRevenue",)},
            "no such job 'NetRevnue' (did you mean 'NetRevenue'?)",
        ),
        (
            "consumer",
            {"Refunds": ("Refunds(region=eu)", "Refunds(region=us)")},
            "no such consumer 'Refunds' (did you mean 'Refunds(region=eu)', 'Refunds(region=us)'?)",
        ),
        ("job", {"Inventory": ()}, "no such job 'Inventory'"),
        (
            "job",
            {"B": (), "NetRevnue": ("NetRevenue",)},
            "no such job 'B'; no such job 'NetRevnue' (did you mean 'NetRevenue'?)",
        ),
        ("job", {"a\x1bb": ()}, "no such job 'a\\x1bb'"),  # no control character on a terminal
    ],
)
def test_describe_unknown_names_every_name_and_its_suggestions(
    kind: str, suggestions: dict[str, tuple[str, ...]], expected: str
) -> None:
    assert describe_unknown(kind, suggestions) == expected


def test_unknown_names_error_is_invalid_input_naming_the_ledger() -> None:
    error = unknown_names_error("consumer", {"NetRevnue": ("NetRevenue",)}, "sqlite file x.db")
    assert isinstance(error, InvalidInput)
    assert (error.field, error.value) == ("consumer", ("NetRevnue",))
    assert error.reason == "no such consumer 'NetRevnue' (did you mean 'NetRevenue'?)"
    assert str(error) == (
        "no such consumer 'NetRevnue' (did you mean 'NetRevenue'?) in the ledger "
        "(sqlite file x.db); --allow-unknown accepts a consumer not yet published"
    )
    copy = pickle.loads(pickle.dumps(error))
    assert (str(copy), copy.field, copy.value) == (str(error), error.field, error.value)
