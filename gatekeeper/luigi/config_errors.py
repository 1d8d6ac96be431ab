"""luigi.cfg's interpolation errors as one InvalidInput naming the option and the cause.

- ``config_error(exc)``: the InvalidInput of a ``${VAR}`` not set or a stray ``%`` found in
  ``exc``'s chain, else None.

Shared by the sections gatekeeper reads from luigi.cfg: ``[gatekeeper]`` (``config``),
``[gatekeeper.calendars]`` (``calendar_config``) and ``[gatekeeper.freshness]``
(``freshness``). Reads luigi.cfg's raw line; writes nothing.
"""

from __future__ import annotations

import configparser
import os
import re

import luigi.configuration

from gatekeeper.core.display import redact_url
from gatekeeper.core.errors import InvalidInput


def config_error(exc: BaseException) -> InvalidInput | None:
    """The InvalidInput naming the option and the unset variable of a luigi.cfg interpolation
    error found in ``exc``'s chain (``${VAR}`` not set, a stray ``%``), else None."""
    cause: BaseException | None = exc
    while cause is not None and not isinstance(cause, configparser.InterpolationError):
        cause = cause.__cause__ or cause.__context__
    if cause is None:
        return None
    field = f"{cause.section}.{cause.option}"
    try:
        raw = luigi.configuration.get_config().get(cause.section, cause.option, raw=True)
    except configparser.Error:
        raw = None
    unset = [name for name in re.findall(r"\$\{([^}]+)\}", raw or "") if name not in os.environ]
    secret = "url" in cause.option or "password" in cause.option  # configparser quotes it
    if unset:
        reason = f"environment variable {unset[0]} is not set (luigi.cfg refers to it)"
    elif secret:
        reason = (
            f"luigi.cfg: cannot interpolate it (write %% for a literal %; {type(cause).__name__})"
        )
    else:
        reason = f"luigi.cfg: {' '.join(cause.message.split())}"
    return InvalidInput(field, redact_url(raw) if secret and raw is not None else raw, reason)
