"""Tests of the SQL text tokenizer that prepares a statement for the driver (pure, plus drivers)."""

from __future__ import annotations

import re
import sqlite3
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gatekeeper.core.errors import InvalidInput
from gatekeeper.ledger.sqltext import prepare
from tests.helpers.ledgers import PG_DSN, require_pg

DIALECTS = ("sqlite", "postgresql")


def refusal(sql: Any, dialect: str) -> InvalidInput:
    with pytest.raises(InvalidInput) as caught:
        prepare(sql, dialect)
    assert caught.value.field == "sql"
    return caught.value


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELECT ?", "SELECT %s"),
        ("SELECT ?, ?;", "SELECT %s, %s;"),
        ("SELECT 5 % 3", "SELECT 5 %% 3"),
        ("SELECT 'why?'", "SELECT 'why?'"),
        ("SELECT '100%'", "SELECT '100%%'"),
        ("SELECT 'it''s ?', ?", "SELECT 'it''s ?', %s"),
        ("SELECT E'it\\'s ?', ?", "SELECT E'it\\'s ?', %s"),
        ("SELECT e'a\\\\', ?", "SELECT e'a\\\\', %s"),
        ("SELECT type'x?' FROM t WHERE a = ?", "SELECT type'x?' FROM t WHERE a = %s"),
        ('SELECT "col?" FROM "t""?" WHERE a = ?', 'SELECT "col?" FROM "t""?" WHERE a = %s'),
        ("SELECT 1 -- why?\n, ?", "SELECT 1 -- why?\n, %s"),
        ("SELECT 1 -- 50%", "SELECT 1 -- 50%%"),
        ("SELECT /* ? */ ?", "SELECT /* ? */ %s"),
        ("SELECT /* a /* ? */ b? */ ?", "SELECT /* a /* ? */ b? */ %s"),
        ("SELECT 4 / 2 - 1, ?", "SELECT 4 / 2 - 1, %s"),
        ("SELECT $$a?b's$$, ?", "SELECT $$a?b's$$, %s"),
        ("SELECT $fn$ $$ ? $$ $fn$, ?", "SELECT $fn$ $$ ? $$ $fn$, %s"),
        ("SELECT $a$ 10% $a$", "SELECT $a$ 10%% $a$"),
        ("SELECT $1, ?", "SELECT $1, %s"),
        ("SELECT a$b$ FROM t WHERE x = ?", "SELECT a$b$ FROM t WHERE x = %s"),
        ("SELECT 'a;b', ? -- ;\n;", "SELECT 'a;b', %s -- ;\n;"),
        ("SELECT ?; -- done\n", "SELECT %s; -- done\n"),
        ("SELECT '?' || ? || 'caf\u00e9 ?'", "SELECT '?' || %s || 'caf\u00e9 ?'"),
    ],
)
def test_prepare_translates_placeholders_and_percent_on_postgresql(sql: str, expected: str) -> None:
    assert prepare(sql, "postgresql") == expected


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT ?, '100%', 'why?' -- c?",
        'SELECT "a?", `b?`, [c?] FROM t WHERE x = ?;',
        "SELECT $1, :name, @x, $y FROM t",
        "SELECT /* a /* b */ ?",
        "SELECT 'it''s' -- 50%",
    ],
)
def test_prepare_leaves_sqlite_text_unchanged(sql: str) -> None:
    assert prepare(sql, "sqlite") == sql


def test_prepare_is_cached() -> None:
    sql = "SELECT ? AS cached_probe"
    assert prepare(sql, "postgresql") is prepare(sql, "postgresql")


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize(
    ("sql", "keyword"),
    [
        ("BEGIN", "BEGIN"),
        ("begin transaction;", "BEGIN"),
        ("COMMIT", "COMMIT"),
        ("  -- finish\n/* now */ Commit;", "COMMIT"),
        ("ROLLBACK", "ROLLBACK"),
        ("ROLLBACK TO SAVEPOINT s", "ROLLBACK"),
        ("END", "END"),
        ("ABORT", "ABORT"),
        ("START TRANSACTION", "START"),
        ("SAVEPOINT s", "SAVEPOINT"),
        ("RELEASE SAVEPOINT s", "RELEASE"),
        ("PREPARE TRANSACTION 'x'", "PREPARE TRANSACTION"),
        ("SET TRANSACTION ISOLATION LEVEL SERIALIZABLE", "SET TRANSACTION"),
        ("set /* x */ transaction read only", "SET TRANSACTION"),
        ("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY", "SET SESSION"),
    ],
)
def test_prepare_refuses_transaction_control(sql: str, keyword: str, dialect: str) -> None:
    error = refusal(sql, dialect)
    assert error.reason == (
        f"{keyword} controls the transaction; "
        "gatekeeper commits or rolls back the publication as a whole"
    )


@pytest.mark.parametrize("sql", ["VACUUM", "vacuum main", "ATTACH 'x.db' AS x", "DETACH x"])
def test_prepare_refuses_sqlite_statements_outside_transactions(sql: str) -> None:
    error = refusal(sql, "sqlite")
    assert "cannot run inside gatekeeper's transaction" in error.reason
    assert prepare(sql, "postgresql") == sql


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize(
    "sql",
    [
        "SELECT 'COMMIT'",
        "SELECT 1 AS begin_at",
        "-- COMMIT\nSELECT 1",
        "/* BEGIN */ SELECT 1",
        "UPDATE t SET x = 1",
        "SET search_path TO x",
        "PREPARE q AS SELECT 1",
        "ending",
    ],
)
def test_prepare_accepts_statements_that_only_mention_keywords(sql: str, dialect: str) -> None:
    assert prepare(sql, dialect) == sql


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize(
    "sql",
    ["SELECT 1; SELECT 2", "SELECT 1;;", "SELECT 1; -- x\nDROP TABLE t", "INSERT 1;COMMIT"],
)
def test_prepare_refuses_more_than_one_statement(sql: str, dialect: str) -> None:
    assert "more than one statement" in refusal(sql, dialect).reason


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("sql", ["SELECT 1;", "SELECT 1 ;  \n", "SELECT 1; -- c\n/* d */ "])
def test_prepare_accepts_a_trailing_semicolon(sql: str, dialect: str) -> None:
    assert prepare(sql, dialect) == sql


@pytest.mark.parametrize(
    ("sql", "dialects", "what"),
    [
        ("SELECT 'abc", DIALECTS, "unterminated string literal"),
        ("SELECT 'it''s", DIALECTS, "unterminated string literal"),
        ('SELECT "abc', DIALECTS, "unterminated quoted identifier"),
        ("SELECT 1 /* abc", DIALECTS, "unterminated block comment"),
        ("SELECT 1 /* a /* b */", ("postgresql",), "unterminated block comment"),
        ("SELECT E'it\\'s", ("postgresql",), "unterminated escape string literal"),
        ("SELECT E'a\\'?'", ("sqlite",), "unterminated string literal"),
        ("SELECT $$abc", ("postgresql",), "unterminated dollar quote $$"),
        ("SELECT $tag$abc$tag", ("postgresql",), "unterminated dollar quote $tag$"),
        ("SELECT `abc", ("sqlite",), "unterminated quoted identifier"),
        ("SELECT [abc", ("sqlite",), "unterminated bracketed identifier"),
    ],
)
def test_prepare_refuses_unterminated_tokens(
    sql: str, dialects: tuple[str, ...], what: str
) -> None:
    for dialect in dialects:
        assert what in refusal(sql, dialect).reason


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("sql", ["", "   \n", ";", "-- only a comment", "/* c */ ;", None, 3, b"x"])
def test_prepare_refuses_empty_or_non_str_sql(sql: Any, dialect: str) -> None:
    refusal(sql, dialect)


@pytest.mark.parametrize("dialect", ["mysql", "", None, "POSTGRESQL"])
def test_prepare_refuses_unknown_dialect(dialect: Any) -> None:
    with pytest.raises(InvalidInput) as caught:
        prepare("SELECT 1", dialect)
    assert caught.value.field == "dialect"


_WORDS = st.sampled_from(["SELECT", "s", "x", "1", ",", "(", ")", "+", " ", "\n"])
_BODY = st.lists(st.sampled_from(["a", "?", "%", " ", "''", "s"])).map("".join)
_COMMENT_BODY = st.lists(st.sampled_from(["a", "?", "%", " ", "'", '"', "s"])).map("".join)
_TOKENS = st.one_of(
    _WORDS.map(lambda w: (w, 0)),
    st.just(("?", 1)),
    st.just(("%", 0)),
    _BODY.map(lambda b: (f"'{b}'", 0)),
    _COMMENT_BODY.map(lambda b: (f"/*{b}*/", 0)),
    _COMMENT_BODY.map(lambda b: (f"--{b}\n", 0)),
)


def _undo(text: str) -> str:
    """psycopg's reading of the text: ``%s`` is a placeholder (shown as ``?``), ``%%`` is ``%``."""
    return re.sub(r"%%|%s", lambda m: "%" if m.group() == "%%" else "?", text)


@given(st.lists(_TOKENS, max_size=30))
def test_prepare_round_trips_random_statements(tokens: list[tuple[str, int]]) -> None:
    sql = "SELECT " + "".join(text for text, _ in tokens)
    placeholders = sum(count for _, count in tokens)
    prepared = prepare(sql, "postgresql")
    assert re.findall(r"%%|%s", prepared).count("%s") == placeholders
    assert _undo(prepared) == sql
    assert prepare(sql, "sqlite") == sql


def test_prepare_runs_on_sqlite3() -> None:
    sql = prepare("SELECT ?, 'why?', '100%', 'a?b' /* d? */ -- c?", "sqlite")
    with sqlite3.connect(":memory:") as conn:
        row = conn.execute(sql, (7,)).fetchone()
    conn.close()
    assert row == (7, "why?", "100%", "a?b")


@pytest.mark.postgres
def test_prepare_runs_on_psycopg() -> None:
    require_pg()
    import psycopg

    sql = prepare("SELECT ?, 'why?', '100%', $$a?b$$ -- c?", "postgresql")
    with psycopg.connect(PG_DSN, connect_timeout=5) as conn:
        row = conn.execute(sql, (7,)).fetchone()
    assert row == (7, "why?", "100%", "a?b")
