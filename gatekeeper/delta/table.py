"""Delta tables as gatekeeper writes and reads them: one business date per commit, the evidence
in the commit's metadata, exactly once through Delta application transactions.

Nothing here touches the ledger or Luigi: ``task.py`` (GatedDeltaTask) sequences the ledger and
these calls; ``history.py``'s ``delta_evidence`` serves readers of a table who do not have the
ledger. ``deltalake`` and ``pyarrow`` (the ``delta`` extra) are imported when first used, never
at import.

Every operation that uses deltalake (``table_state``, ``same_files``, ``date_fingerprint``,
``write_date``, ``fence_date`` here; ``find_commit``, ``delta_evidence`` in ``history.py``) is
a module-level function taking and returning picklable values (never a DeltaTable) and goes
through ``runner.run``: in a fork of a process that started deltalake's runtime it runs in a
spawned helper process.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import importlib
import json
import math
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any, NamedTuple

from gatekeeper.core.errors import GatekeeperError, InvalidInput
from gatekeeper.core.validation import check_column_name, check_partition_values
from gatekeeper.delta import runner as delta_runner

PREFIX = "gatekeeper."


def _extra(module: str) -> Any:
    """``module`` of the ``delta`` extra, imported now; GatekeeperError saying what to install."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise GatekeeperError(
            f"Delta tables need the delta extra ({module} is missing): pip install -e "
            "'.[delta]' in a gatekeeper checkout (or pip install deltalake pyarrow)"
        ) from exc


def _deltalake() -> Any:
    return _extra("deltalake")


def to_arrow(data: Any, field_name: str = "build()") -> Any:
    """``data`` as a ``pyarrow.Table``: a Table, a RecordBatch or reader, or anything exposing
    the Arrow stream interface (polars, pandas >= 2.2, DuckDB) or a pandas DataFrame.
    Raises InvalidInput naming ``field_name`` for anything else."""
    pa = _extra("pyarrow")
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if isinstance(data, pa.RecordBatchReader):
        return data.read_all()
    if hasattr(data, "__arrow_c_stream__"):
        return pa.table(data)
    if type(data).__module__.startswith("pandas"):
        return pa.Table.from_pandas(data, preserve_index=False)
    raise InvalidInput(
        field_name,
        type(data),
        "expected a pyarrow Table or an object with the Arrow stream interface (polars, pandas)",
    )


def check_rows(table: Any, column: str, period: str) -> None:
    """Every row's ``column`` is ``period`` (InvalidInput naming the column and the stray
    value otherwise); reads only ``table``."""
    pc = _extra("pyarrow.compute")
    check_column_name(column, "partition_column")
    if column not in table.column_names:
        raise InvalidInput(
            column,
            None,
            f"no such column in the data (columns: "
            f"{', '.join(table.column_names)}); nothing was written",
        )
    check_partition_values(pc.unique(table[column]).to_pylist(), column, period)


def table_fingerprint(table: Any) -> str:
    """``sha256:<hex>`` of a table's rows, independent of row order, column order, chunking
    and encoding (dictionary or plain, string or large string): each row as canonical JSON
    (sorted column names, tagged dates, decimals and bytes, UTC instants), the rows sorted."""
    names = sorted(table.column_names)
    rows = sorted(
        json.dumps(
            {n: _canonical(row[n]) for n in names},
            sort_keys=True,
            separators=(",", ":"),
            allow_nan=False,
            ensure_ascii=False,
        )
        for row in table.select(names).to_pylist()
    )
    digest = hashlib.sha256(json.dumps(names).encode())
    for row in rows:
        digest.update(b"\n" + row.encode("utf-8"))
    return "sha256:" + digest.hexdigest()


def _canonical(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"$float": repr(value)}
    if isinstance(value, Decimal):
        return {"$decimal": str(value)}
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.timezone.utc)
        return {"$timestamp": value.isoformat()}
    if isinstance(value, (dt.date, dt.time)):
        return {f"${type(value).__name__}": value.isoformat()}
    if isinstance(value, dt.timedelta):
        return {"$duration": str(value)}
    if isinstance(value, (bytes, bytearray)):
        return {"$bytes": bytes(value).hex()}
    if isinstance(value, Mapping):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    return {"$repr": repr(value)}


class TableState(NamedTuple):
    """A Delta table's current version and its transaction version for one app ID."""

    version: int
    transaction_version: int | None


def open_table(
    uri: str, storage_options: dict[str, str] | None = None, version: int | None = None
) -> Any:
    """The DeltaTable at ``uri`` (at ``version``), or None when there is no table yet. Only
    for the operations below (they run where ``delta_runner`` says); never returned by them."""
    deltalake = _deltalake()
    if not deltalake.DeltaTable.is_deltatable(uri, storage_options=storage_options):
        return None
    return deltalake.DeltaTable(uri, version=version, storage_options=storage_options)


def table_state(uri: str, storage_options: dict[str, str] | None, app: str) -> TableState | None:
    """The table's version and transaction version for ``app``; None when there is no table."""
    return delta_runner.run(_table_state, uri, storage_options, app)


def _table_state(uri: str, storage_options: dict[str, str] | None, app: str) -> TableState | None:
    table = open_table(uri, storage_options)
    if table is None:
        return None
    return TableState(table.version(), table.transaction_version(app))


def same_files(
    uri: str,
    storage_options: dict[str, str] | None,
    column: str,
    period: str,
    committed_version: int,
) -> bool:
    """True when the date's data files now are those at ``committed_version`` (cheap: the log
    only); False when they changed or that version can no longer be loaded."""
    return delta_runner.run(_same_files, uri, storage_options, column, period, committed_version)


def _same_files(
    uri: str,
    storage_options: dict[str, str] | None,
    column: str,
    period: str,
    committed_version: int,
) -> bool:
    where = [(column, "=", period)]
    now = open_table(uri, storage_options)
    try:
        then = open_table(uri, storage_options, committed_version)
    except Exception:  # noqa: BLE001 - a vacuumed or cleaned log: compare the rows instead
        return False
    return now is not None and then is not None and _files(then, where) == _files(now, where)


def _files(table: Any, where: list[tuple[str, str, str]]) -> list[str]:
    """The data files of the partition ``where`` (deltalake >= 1.1 names the filter
    ``file_pruning_predicate``; older ones ``partition_filters``)."""
    try:
        return sorted(table.file_uris(file_pruning_predicate=where))
    except TypeError:
        return sorted(table.file_uris(partition_filters=where))


def date_fingerprint(
    uri: str, storage_options: dict[str, str] | None, column: str, period: str
) -> tuple[int, str] | None:
    """(table version, ``table_fingerprint`` of the date's rows now); None without a table."""
    return delta_runner.run(_date_fingerprint, uri, storage_options, column, period)


def _date_fingerprint(
    uri: str, storage_options: dict[str, str] | None, column: str, period: str
) -> tuple[int, str] | None:
    table = open_table(uri, storage_options)
    if table is None:
        return None
    rows = table.to_pyarrow_table(filters=[(column, "=", period)])
    return table.version(), table_fingerprint(rows)


def write_date(
    uri: str,
    table: Any,
    *,
    column: str,
    period: str,
    revision: int,
    metadata: dict[str, str],
    storage_options: dict[str, str] | None,
    base_version: int | None,
) -> int | None:
    """One Delta commit replacing ``period``'s rows (``column = period``) with ``table``,
    carrying ``metadata`` and the application transaction (app ID, ``revision``), made
    against the table as it was at ``base_version`` (None: there was no table; the commit
    creates it). Returns the version it made; None when it lost a race: a commit carrying the
    same app ID landed after ``base_version``, or the table was created since (nothing of
    this commit is in the table then). See ``commit_at``."""
    return delta_runner.run(
        _write_date,
        uri,
        table,
        column,
        period,
        revision,
        metadata,
        storage_options,
        base_version,
    )


def _write_date(
    uri: str,
    table: Any,
    column: str,
    period: str,
    revision: int,
    metadata: dict[str, str],
    storage_options: dict[str, str] | None,
    base_version: int | None,
) -> int | None:
    deltalake = _deltalake()
    app = deltalake.Transaction(metadata[PREFIX + "app_id"], revision)
    return commit_at(
        uri,
        storage_options,
        base_version,
        lambda target, properties: deltalake.write_deltalake(
            target,
            table,
            mode="overwrite" if base_version is not None else "error",
            predicate=f"{column} = '{period}'" if base_version is not None else None,
            partition_by=[column],
            storage_options=storage_options,
            commit_properties=properties,
        ),
        custom_metadata=metadata,
        app_transactions=[app],
    )


def fence_date(
    uri: str,
    schema: Any,
    *,
    column: str,
    app: str,
    metadata: dict[str, str],
    storage_options: dict[str, str] | None,
    base_version: int | None,
    transaction_version: int | None,
) -> int | None:
    """The fence of a takeover: one Delta commit that changes no rows but carries the app ID
    ``app`` (at ``transaction_version``, the one the table had for it at ``base_version``, so
    it never goes down) and ``metadata``, made against the table at ``base_version`` (None:
    there was no table; the commit creates it, empty, with ``schema`` partitioned by
    ``column``).

    Any commit of the app ID made against an older version (a predecessor's, in flight)
    fails once this one is in the table. Returns the version it made; None when it lost a
    race (see ``write_date``)."""
    return delta_runner.run(
        _fence_date,
        uri,
        schema,
        column,
        app,
        metadata,
        storage_options,
        base_version,
        transaction_version,
    )


def _fence_date(
    uri: str,
    schema: Any,
    column: str,
    app: str,
    metadata: dict[str, str],
    storage_options: dict[str, str] | None,
    base_version: int | None,
    transaction_version: int | None,
) -> int | None:
    deltalake, pa = _deltalake(), _extra("pyarrow")

    def empty_commit(target: Any, properties: Any) -> None:
        creating = base_version is None
        deltalake.write_deltalake(
            target,
            (schema if creating else pa.schema(target.schema().to_arrow())).empty_table(),
            mode="error" if creating else "append",
            partition_by=[column] if creating else None,
            storage_options=storage_options,
            commit_properties=properties,
        )

    return commit_at(
        uri,
        storage_options,
        base_version,
        empty_commit,
        custom_metadata=metadata,
        app_transactions=[deltalake.Transaction(app, transaction_version or 0)],
    )


def commit_at(
    uri: str,
    storage_options: dict[str, str] | None,
    base_version: int | None,
    commit: Callable[[Any, Any], None],
    **properties: Any,
) -> int | None:
    """``commit(target, commit_properties)`` made against the table at ``base_version``:
    the version it made, or None when it lost a race (nothing of it is in the table).

    Against a version: the DeltaTable loaded at ``base_version`` is the target, so every
    commit that landed after it is a winning commit delta-rs checks this one against; one
    carrying the same app ID fails it (``ConcurrentTransaction``), others (other dates) are
    rebased over as usual. Without a version (no table): the URI is the target and
    ``max_commit_retries=0``, since delta-rs retries a creation that found version 0 taken by
    committing on top of the table without checking conflicts; a table that exists by the
    time the write loads it fails it too. Other errors propagate."""
    deltalake = _deltalake()
    if base_version is None:
        target: Any = uri
        properties["max_commit_retries"] = 0
    else:
        target = open_table(uri, storage_options, base_version)
        if target is None:
            return None  # the table is gone: read it again
    try:
        commit(target, deltalake.CommitProperties(**properties))
    except commit_conflicts():
        return None
    except deltalake.exceptions.DeltaError:
        if base_version is None and deltalake.DeltaTable.is_deltatable(
            uri, storage_options=storage_options
        ):
            return None  # created by another writer after we read there was none
        raise
    return 0 if base_version is None else int(target.version())


def commit_conflicts() -> tuple[type[BaseException], ...]:
    """The errors of a Delta commit that lost a race with a concurrent one."""
    return (_deltalake().exceptions.CommitFailedError,)
