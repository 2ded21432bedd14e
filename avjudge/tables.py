"""Parquet tables of records: manifests read from Parquet, job outputs written to it.

A record's keys are the columns (every key of every record: a column a record lacks is null there), so a
table holds what the JSON lines hold, except that an object empty in every row (``"errors": {}``) is a null:
Parquet has no empty struct. pyarrow comes with the ``ray`` and ``train`` extras.
"""

from __future__ import annotations

import os
from pathlib import Path

from .config import ConfigError

PARQUET = ".parquet"


def is_parquet(path: str | Path) -> bool:
    return Path(path).suffix == PARQUET


def _pyarrow(path: Path):
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError as err:
        raise ConfigError(f"{path}: Parquet needs pyarrow (pip install 'avjudge[ray]')") from err
    return pyarrow


def read_table(path: str | Path) -> list[dict]:
    """The rows of a Parquet file as records."""
    path = Path(path)
    return _pyarrow(path).parquet.read_table(path).to_pylist()


def write_table(path: str | Path, records: list[dict]) -> None:
    """``records`` as a Parquet file, written whole or not at all (a temporary file, then a rename)."""
    path = Path(path)
    pa = _pyarrow(path)
    columns: dict[str, list] = {key: [] for record in records for key in record}  # in order of first appearance
    for name, values in columns.items():
        values.extend(record.get(name) for record in records)
    try:
        arrays = {name: pa.array(values) for name, values in columns.items()}
    except (pa.ArrowInvalid, pa.ArrowTypeError) as err:
        raise ValueError(f"{path}: the records do not fit one table ({err}); write JSONL instead") from err
    empty = [name for name, a in arrays.items() if pa.types.is_struct(a.type) and a.type.num_fields == 0]
    arrays.update({name: pa.nulls(len(records)) for name in empty})
    tmp = path.with_name(f".{path.name}.tmp")
    pa.parquet.write_table(pa.table(arrays), tmp)
    os.replace(tmp, path)
