"""What may be shown on a terminal, in a log or on a page: secrets masked, controls escaped.

``redact_url`` shows a ledger URL with ``***`` for its password; ``mask`` hides known secrets
in any other text (a driver's error); ``printable`` escapes the characters that would drive a
terminal or reorder a line (C0 and C1 controls, bidi controls) so that user text is seen as
it is. Names that contain them are refused (``validation.check_name``, ``UNSAFE``); free text
is stored as given and passed through ``printable`` where it is shown.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import unquote

MASK = "***"

#: C0 controls, DEL, C1 controls, the bidi controls (embeddings and overrides U+202A-U+202E,
#: isolates U+2066-U+2069, marks LRM, RLM and ALM), line and paragraph separators, and lone
#: surrogates (which no terminal encoding can carry)
UNSAFE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)
_UNSAFE_BUT_NEWLINE = re.compile(
    "[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
    "\ud800-\udfff]"
)
_URL_USERINFO = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://[^\s/?#@:]*:)[^\s@]*@")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
#: ``password=VALUE`` (also ``sslpassword=``) in a URL query or a libpq keyword string; a
#: quoted value runs to its closing quote, a bare one to ``&`` or a blank
_PASSWORD_PARAM = re.compile(r"(?i)([\w.-]*pass(?:word)?\s*=\s*)('(?:[^'\\]|\\.)*'?|[^&\s]*)")


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: object, *, newlines: bool = False) -> str:
    """``str(text)`` with every control and bidi character shown as a visible escape
    (``\\x1b``, ``\\x07``, ``\\r``, ``\\u202e``), so it cannot retitle or clear a terminal,
    overwrite a line or reorder one. ``newlines=True`` keeps ``\\n`` (for a whole rendering of
    several lines); by default it is escaped too, so the text stays on one line."""
    pattern = _UNSAFE_BUT_NEWLINE if newlines else UNSAFE
    return pattern.sub(_escape, str(text))


def _password_span(text: str) -> tuple[int, int] | None:
    """Where the userinfo's password is in ``text`` (start, end), or None: from the first
    ``:`` after the authority's start (``//``; without one, after the scheme or else from the
    beginning) to the last ``@``."""
    head, at, _ = text.rpartition("@")
    if not at:
        return None
    slashes = head.find("//")
    scheme = _SCHEME.match(head)
    starts = [slashes + 2] if slashes >= 0 else [scheme.end() if scheme else 0, 0]
    for start in starts:
        colon = head.find(":", start)
        if colon >= 0:
            return (colon + 1, len(head)) if colon + 1 < len(head) else None
    return None


def redact_url(url: object) -> str:
    """``url`` with its password shown as ``***``: the userinfo's
    (``postgresql://u:secret@h/db`` -> ``postgresql://u:***@h/db``) and any ``password=``
    parameter (``?password=secret``, ``sslpassword=``). A URL without one is returned
    unchanged. A malformed URL is masked rather than parsed: everything from the first ``:``
    after the authority's start to the last ``@`` is taken for a password."""
    text = str(url)
    span = _password_span(text)
    if span is not None:
        text = text[: span[0]] + MASK + text[span[1] :]
    return _PASSWORD_PARAM.sub(lambda m: m.group(1) + (MASK if m.group(2) else ""), text)


def redact_urls_in(text: object) -> str:
    """``str(text)`` (a message that may quote URLs, such as a transport error) with the
    password of every ``scheme://user:password@`` in it, and every ``password=`` value,
    shown as ``***``."""
    shown = _URL_USERINFO.sub(lambda m: m.group(1) + MASK + "@", str(text))
    return _PASSWORD_PARAM.sub(lambda m: m.group(1) + (MASK if m.group(2) else ""), shown)


def url_secrets(url: object) -> tuple[str, ...]:
    """The passwords ``url`` carries, as written and percent-decoded, longest first (for
    ``mask``: what ``redact_url`` hides)."""
    text = str(url)
    span = _password_span(text)
    found = {text[span[0] : span[1]]} if span is not None else set()
    for match in _PASSWORD_PARAM.finditer(text):
        found.update({match.group(2), match.group(2).strip("'")})
    found |= {unquote(secret) for secret in found}
    return tuple(sorted((s for s in found if s), key=len, reverse=True))


def mask(text: object, secrets: Iterable[str]) -> str:
    """``str(text)`` with every occurrence of each of ``secrets`` replaced by ``***``."""
    shown = str(text)
    for secret in secrets:
        if secret:
            shown = shown.replace(secret, MASK)
    return shown


def mask_exception(exc: BaseException, secrets: Iterable[str]) -> BaseException:
    """``exc`` and every exception it was raised from or during, with ``secrets`` masked in
    their text arguments (a traceback prints them); returns ``exc``."""
    seen: set[int] = set()
    found: BaseException | None = exc
    secrets = tuple(secrets)
    while found is not None and id(found) not in seen and secrets:
        seen.add(id(found))
        found.args = tuple(mask(a, secrets) if isinstance(a, str) else a for a in found.args)
        found = found.__cause__ or found.__context__
    return exc
