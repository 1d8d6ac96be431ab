"""Prepare a caller's SQL text for the database driver: a small, pure tokenizer.

One pass over the text with a state machine that jumps between special characters with a
regular expression.  It recognises string literals (``'...'`` with ``''``; on PostgreSQL also
``E'...'`` with backslash escapes and ``$tag$...$tag$`` dollar quotes), quoted identifiers
(``"..."``; on SQLite also backticks and brackets) and comments (``-- ...`` and ``/* ... */``,
nested on PostgreSQL).  Outside those, on PostgreSQL, every ``?`` becomes psycopg's ``%s``; every
``%`` anywhere becomes ``%%`` because psycopg 3 scans the whole text for ``%`` when parameters are
passed.  SQLite text is returned unchanged.  On both dialects the scan refuses more than one
statement and statements that would leave gatekeeper's transaction (``COMMIT``, ``BEGIN``...).
"""

from __future__ import annotations

import functools
import re

from gatekeeper.core.errors import InvalidInput

__all__ = ["DIALECTS", "prepare", "session_change"]

DIALECTS = ("sqlite", "postgresql")

# The characters that can start a token other than ordinary text.
_SPECIAL = {
    "postgresql": re.compile(r"""['"$?%/-]"""),
    "sqlite": re.compile(r"""['"`\[/-]"""),
}
_SINGLE = re.compile(r"'[^']*(?:''[^']*)*'")
_ESCAPED = re.compile(r"'[^'\\]*(?:(?:\\.|'')[^'\\]*)*'", re.DOTALL)
_DOUBLE = re.compile(r'"[^"]*(?:""[^"]*)*"')
_BACKTICK = re.compile(r"`[^`]*(?:``[^`]*)*`")
_BRACKET = re.compile(r"\[[^\]]*\]")
_DOLLAR = re.compile(r"\$(?:[A-Za-z_\x80-\U0010ffff][A-Za-z0-9_\x80-\U0010ffff]*)?\$")
_COMMENT_MARK = re.compile(r"/\*|\*/")
_KEYWORDS = re.compile(r"\s*([A-Za-z_]\w*)(?:\s+([A-Za-z_]\w*))?")

_QUOTES = {
    "'": (_SINGLE, "string literal"),
    '"': (_DOUBLE, "quoted identifier"),
    "`": (_BACKTICK, "quoted identifier"),
    "[": (_BRACKET, "bracketed identifier"),
}
_TRANSACTION_CONTROL = frozenset(
    {"BEGIN", "COMMIT", "ROLLBACK", "END", "ABORT", "START", "SAVEPOINT", "RELEASE"}
)
# First keyword -> the second keywords that make it transaction control.
_CONTROL_WHEN_FOLLOWED = {
    "PREPARE": frozenset({"TRANSACTION"}),
    "SET": frozenset({"TRANSACTION", "SESSION"}),
}
_OUTSIDE_TRANSACTION = {
    "sqlite": frozenset({"VACUUM", "ATTACH", "DETACH"}),
    "postgresql": frozenset(),
}
_WHOLE = "gatekeeper commits or rolls back the publication as a whole"


def prepare(sql: str, dialect: str) -> str:
    """Return ``sql`` ready for the driver of ``dialect`` ("sqlite" or "postgresql"); cached.

    Raises InvalidInput(field "sql") for a statement gatekeeper refuses.
    """
    if not isinstance(dialect, str) or dialect not in DIALECTS:
        raise InvalidInput("dialect", dialect, f"expected one of {', '.join(DIALECTS)}")
    if not isinstance(sql, str):
        raise InvalidInput("sql", sql, "expected the SQL statement as a str")
    return _prepare(sql, dialect)


@functools.lru_cache(maxsize=1024)
def _prepare(sql: str, dialect: str) -> str:
    """The cached body of ``prepare``: scan, check the statement, return the driver's text."""
    text, code = _scan(sql, dialect)
    _check_statement(sql, code, dialect)
    return text


def _scan(sql: str, dialect: str) -> tuple[str, str]:
    """Return (the driver's text, the code outside literals with each comment as a space)."""
    pg = dialect == "postgresql"
    special = _SPECIAL[dialect]
    out: list[str] = []
    code: list[str] = []
    pos, size = 0, len(sql)
    while pos < size:
        found = special.search(sql, pos)
        start = found.start() if found else size
        out.append(sql[pos:start])
        code.append(sql[pos:start])
        if found is None:
            break
        end, kind = _token(sql, start, pg)
        token = sql[start:end]
        if kind == "code":
            out.append("%s" if token == "?" else "%%" if token == "%" else token)
            code.append(token)
        else:
            out.append(token.replace("%", "%%") if pg else token)
            code.append(" " if kind == "comment" else "''")
        pos = end
    return "".join(out), "".join(code)


def _token(sql: str, start: int, pg: bool) -> tuple[int, str]:
    """Return (end, kind) of the token at ``start``: kind "code", "literal" or "comment"."""
    char = sql[start]
    after = sql[start + 1 : start + 2]
    if char == "-":
        if after != "-":
            return start + 1, "code"
        newline = sql.find("\n", start)
        return (len(sql) if newline < 0 else newline), "comment"
    if char == "/":
        if after != "*":
            return start + 1, "code"
        return _block_comment_end(sql, start, pg), "comment"
    if char == "$":
        return _dollar_end(sql, start)
    if char in "?%":
        return start + 1, "code"
    pattern, what = _QUOTES[char]
    if pg and char == "'" and _is_escape_string(sql, start):
        pattern, what = _ESCAPED, "escape string literal"
    match = pattern.match(sql, start)
    if match is None:
        raise InvalidInput("sql", sql, f"unterminated {what} starting at offset {start}")
    return match.end(), "literal"


def _is_escape_string(sql: str, quote: int) -> bool:
    """True when the quote at ``quote`` opens a PostgreSQL ``E'...'`` string."""
    if quote < 1 or sql[quote - 1] not in "eE":
        return False
    return quote < 2 or not _is_identifier_char(sql[quote - 2])


def _is_identifier_char(char: str) -> bool:
    return char.isalnum() or char in "_$"


def _block_comment_end(sql: str, start: int, nested: bool) -> int:
    """Return the end of the ``/* ... */`` comment at ``start`` (nested on PostgreSQL)."""
    if not nested:
        close = sql.find("*/", start + 2)
        if close < 0:
            raise InvalidInput("sql", sql, f"unterminated block comment at offset {start}")
        return close + 2
    depth, pos = 1, start + 2
    while depth:
        mark = _COMMENT_MARK.search(sql, pos)
        if mark is None:
            raise InvalidInput("sql", sql, f"unterminated block comment at offset {start}")
        depth += 1 if mark.group() == "/*" else -1
        pos = mark.end()
    return pos


def _dollar_end(sql: str, start: int) -> tuple[int, str]:
    """Return (end, kind) at a ``$``: a dollar-quoted literal, else a single code character.

    ``$1`` is a positional parameter and ``a$b`` an identifier, neither a dollar quote.
    """
    if start > 0 and _is_identifier_char(sql[start - 1]):
        return start + 1, "code"
    opening = _DOLLAR.match(sql, start)
    if opening is None:
        return start + 1, "code"
    close = sql.find(opening.group(), opening.end())
    if close < 0:
        raise InvalidInput(
            "sql", sql, f"unterminated dollar quote {opening.group()} at offset {start}"
        )
    return close + len(opening.group()), "literal"


def _check_statement(sql: str, code: str, dialect: str) -> None:
    """Refuse an empty statement, more than one, or one that controls the transaction."""
    semicolon = code.find(";")
    if semicolon >= 0 and code[semicolon + 1 :].strip():
        reason = "more than one statement; pass one statement per call (a trailing ; is fine)"
        raise InvalidInput("sql", sql, reason)
    statement = code if semicolon < 0 else code[:semicolon]
    if not statement.strip():
        raise InvalidInput("sql", sql, "empty statement")
    keywords = _KEYWORDS.match(statement)
    if keywords is None:
        return
    first = keywords.group(1).upper()
    second = (keywords.group(2) or "").upper()
    if first in _TRANSACTION_CONTROL or second in _CONTROL_WHEN_FOLLOWED.get(first, ()):
        what = f"{first} {second}" if first in _CONTROL_WHEN_FOLLOWED else first
        raise InvalidInput("sql", sql, f"{what} controls the transaction; {_WHOLE}")
    if first in _OUTSIDE_TRANSACTION[dialect]:
        raise InvalidInput(
            "sql", sql, f"{first} cannot run inside gatekeeper's transaction on {dialect}; {_WHOLE}"
        )


_SESSION = {
    "postgresql": frozenset({"SET", "RESET", "DISCARD", "PREPARE", "DEALLOCATE", "LOAD"}),
    "sqlite": frozenset({"PRAGMA"}),
}


def session_change(sql: str, dialect: str) -> str | None:
    """The keyword of a statement that plainly changes the connection's session beyond the
    transaction (``SET`` but not ``SET LOCAL``, ``RESET``, ``DISCARD``, ``PREPARE``,
    ``DEALLOCATE``, ``LOAD``; SQLite's ``PRAGMA``), or None: the write handle's early, clear
    refusal. What guarantees the session is ``Dialect.settle_session``, which no text can
    bypass."""
    prepare(sql, dialect)  # the same refusals first
    keywords = _KEYWORDS.match(_scan(sql, dialect)[1])
    if keywords is None:
        return None
    first, second = keywords.group(1).upper(), (keywords.group(2) or "").upper()
    if first in _SESSION[dialect] and not (first == "SET" and second == "LOCAL"):
        return first
    return None
