"""Reading and validating the published-numbers files (``eval/papers/published/*.yaml``) into the
types of ``eval/papers/store.py``: every key checked, every cell resolved with its table's model,
embedder and judge; a problem is one ``PublishedError`` line naming the file and the place."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from memharness.eval.papers.store import (
    CONVERSIONS,
    FOLDER,
    FORMATS,
    IDENTITIES,
    KINDS,
    RELATIONS,
    SCHEMA,
    SOURCES,
    Cell,
    Column,
    Identity,
    Paper,
    PublishedError,
    Row,
    Table,
)


def _need(obj: dict[str, Any], key: str, types: Any, where: str) -> Any:
    if not isinstance(obj, dict) or key not in obj:
        raise PublishedError(f"{where}: missing field {key!r}")
    if not isinstance(obj[key], types):
        raise PublishedError(
            f"{where}: field {key!r} should be {types}, got {type(obj[key]).__name__}"
        )
    return obj[key]


def _identity(raw: Any, where: str) -> Identity | None:
    if raw is None:
        return None
    name = _need(raw, "name", str, where)
    ids = _need(raw, "ids", list, where)
    if not ids or not all(isinstance(i, str) and i for i in ids):
        raise PublishedError(f"{where}: 'ids' should be a non-empty list of model ids")
    return Identity(name, tuple(ids))


def _identities(
    raw: dict[str, Any], where: str, defaults: dict[str, Identity | None]
) -> dict[str, Identity | None]:
    out = dict(defaults)
    for key in IDENTITIES:
        if key in raw:
            out[key] = _identity(raw[key], f"{where}.{key}")
    unknown = set(raw) - set(IDENTITIES) - {"protocol"}
    if unknown:
        raise PublishedError(
            f"{where}: unknown setting keys {sorted(unknown)} (expected {IDENTITIES} and protocol)"
        )
    return out


def _datasets(raw: Any) -> tuple[str, ...]:
    return () if raw is None else tuple([raw] if isinstance(raw, str) else raw)


def _category(raw: Any, where: str) -> tuple[str, str] | None:
    if raw is None:
        return None
    if not (isinstance(raw, dict) and len(raw) == 1):
        raise PublishedError(
            f"{where}: 'category' should be one {{label key: label value}}, got {raw!r}"
        )
    return tuple(map(str, next(iter(raw.items()))))  # type: ignore[return-value]


def _source(raw: Any, where: str) -> str:
    if raw not in SOURCES:
        raise PublishedError(f"{where}: source {raw!r} is not one of {SOURCES}")
    return raw


def _harness_unit(source: str, unit: str) -> str:
    """Metrics are fractions (shown in % when the paper uses %); other sources keep the paper's unit."""
    return "fraction" if source == "metrics" and unit == "%" else unit


_COLUMN_KEYS = {
    *"id label dataset category metric source unit harness_unit paper_n decimals".split(),
    *"source_label source_col source_head".split(),
}
_ROW_KEYS = set(
    "id label system why memory setting source_label source_col source_head source_after".split()
)


def _known_keys(raw: dict[str, Any], allowed: set[str], where: str) -> None:
    unknown = set(raw) - allowed
    if unknown:
        raise PublishedError(
            f"{where}: unknown keys {sorted(unknown)} (allowed: {sorted(allowed)})"
        )


def _column(raw: dict[str, Any], where: str) -> Column:
    _known_keys(raw, _COLUMN_KEYS, where)
    source = _source(raw.get("source", "metrics"), where)
    unit = _need(raw, "unit", str, where)
    locate = {k: raw[k] for k in ("source_label", "source_col", "source_head") if k in raw}
    return Column(
        str(_need(raw, "id", (str, int), where)),
        _need(raw, "label", str, where),
        _datasets(raw.get("dataset")),
        _category(raw.get("category"), where),
        raw.get("metric"),
        source,
        unit,
        raw.get("harness_unit", _harness_unit(source, unit)),
        raw.get("paper_n"),
        locate,
        raw.get("decimals"),
    )


def _row(raw: dict[str, Any], where: str) -> Row:
    _known_keys(raw, _ROW_KEYS, where)
    setting = raw.get("setting") or {}
    _known_keys(setting, {*IDENTITIES, "protocol"}, f"{where}.setting")
    if not isinstance(raw.get("system"), (str, type(None))) or not isinstance(
        raw.get("memory") or {}, dict
    ):
        raise PublishedError(
            f"{where}: 'system' should be a memory name or null, 'memory' a mapping"
        )
    locate = {
        k: raw[k] for k in ("source_label", "source_col", "source_head", "source_after") if k in raw
    }
    row = Row(
        str(_need(raw, "id", (str, int), where)),
        _need(raw, "label", str, where),
        raw.get("system"),
        raw.get("why"),
        dict(raw.get("memory") or {}),
        {k: _identity(setting[k], f"{where}.setting.{k}") for k in IDENTITIES if k in setting},
        dict(setting.get("protocol") or {}),
        locate,
    )
    if row.system is None and not row.why:
        raise PublishedError(
            f"{where}: a row without a system needs 'why' (which system it is, why not here)"
        )
    return row


_CELL_KEYS = {
    *"value low high sd relation ratio note quote value_text decimals metric source".split(),
    *"unit harness_unit dataset category".split(),
}


def _cell(raw: Any, table: Table, row: Row, col: Column, paper: str, where: str) -> Cell:
    spec = raw if isinstance(raw, dict) else {"value": raw}
    _known_keys(spec, _CELL_KEYS, where)
    for key in ("value", "low", "high", "sd"):
        if isinstance(spec.get(key), bool) or not isinstance(
            spec.get(key), (int, float, type(None))
        ):
            raise PublishedError(
                f"{where}: {key} should be a number or null, got {spec.get(key)!r}"
            )
    source = _source(spec.get("source", col.source), where)
    unit = spec.get("unit", col.unit)
    if "harness_unit" in spec:
        harness_unit = spec["harness_unit"]
    elif "unit" in spec or "source" in spec:
        harness_unit = _harness_unit(source, unit)
    else:
        harness_unit = col.harness_unit
    ident = {k: row.setting.get(k, getattr(table, k)) for k in IDENTITIES}
    cell = Cell(
        paper=paper,
        table=table.id,
        row=row.id,
        column=col.id,
        system=row.system,
        memory=row.memory,
        datasets=_datasets(spec["dataset"]) if "dataset" in spec else col.datasets,
        category=_category(spec["category"], where) if "category" in spec else col.category,
        metric=spec.get("metric", col.metric),
        source=source,
        unit=unit,
        harness_unit=harness_unit,
        value=spec.get("value"),
        low=spec.get("low"),
        high=spec.get("high"),
        sd=spec.get("sd"),
        relation=spec.get("relation", "="),
        ratio=spec.get("ratio"),
        note=spec.get("note"),
        quote=spec.get("quote"),
        value_text=spec.get("value_text"),
        decimals=int(
            spec.get("decimals", col.decimals if col.decimals is not None else table.decimals)
        ),
        protocol={**table.protocol, **row.protocol},
        paper_n=col.paper_n,
        **ident,
    )
    _check_cell(cell, table, where)
    return cell


def _check_cell(cell: Cell, table: Table, where: str) -> None:
    if cell.relation not in RELATIONS:
        raise PublishedError(f"{where}: relation {cell.relation!r} is not one of {RELATIONS}")
    if cell.relation == "in" and (cell.low is None or cell.high is None or cell.value is not None):
        raise PublishedError(f"{where}: relation 'in' takes low and high (a range), not value")
    if cell.relation != "in" and cell.value is None and not cell.note:
        raise PublishedError(f"{where}: a cell without a value needs a 'note' saying why")
    if cell.metric is None and cell.ratio is None and not cell.note:
        raise PublishedError(
            f"{where}: a cell no run folder can reproduce (metric null) needs a 'note'"
        )
    if (cell.harness_unit, cell.unit) not in CONVERSIONS and cell.harness_unit != cell.unit:
        raise PublishedError(f"{where}: no conversion from {cell.harness_unit!r} to {cell.unit!r}")
    if cell.ratio is not None:
        for key in ("numerator", "denominator", "column"):
            if key not in cell.ratio:
                raise PublishedError(f"{where}: ratio needs numerator, denominator and column")
        ids = {r.id for r in table.rows}
        if not {cell.ratio["numerator"], cell.ratio["denominator"]} <= ids or cell.ratio[
            "column"
        ] not in {c.id for c in table.columns}:
            raise PublishedError(
                f"{where}: ratio names a row or column the table does not have: {cell.ratio}"
            )
    if table.source.get("format") == "text" and cell.numbers() and not cell.quote:
        raise PublishedError(f"{where}: a value from prose needs the 'quote' it comes from")


_TABLE_KEYS = set(
    "id kind caption experiment source setting rows columns cells decimals note".split()
)


def _table(
    raw: dict[str, Any], paper: str, defaults: dict[str, Identity | None], where: str
) -> Table:
    tid = str(_need(raw, "id", (str, int), where))
    where = f"{where} {tid}"
    _known_keys(raw, _TABLE_KEYS, where)
    kind = raw.get("kind", "table")
    if kind not in KINDS:
        raise PublishedError(f"{where}: kind {kind!r} is not one of {KINDS}")
    source = _need(raw, "source", dict, where)
    for key in ("anchor", "end", "format"):
        _need(source, key, str, f"{where}.source")
    if source["format"] not in FORMATS:
        raise PublishedError(f"{where}.source: format {source['format']!r} is not one of {FORMATS}")
    setting = raw.get("setting") or {}
    table = Table(
        paper,
        tid,
        kind,
        _need(raw, "caption", str, where),
        source,
        None,
        None,
        None,
        dict(setting.get("protocol") or {}),
        [],
        [],
        {},
        int(raw.get("decimals", 1)),
        raw.get("note"),
        raw.get("experiment"),
    )
    if table.experiment is not None and not isinstance(table.experiment, str):
        raise PublishedError(f"{where}: 'experiment' should be the name of a conf/experiment file")
    for key, ident in _identities(setting, f"{where}.setting", defaults).items():
        setattr(table, key, ident)
    table.rows = [
        _row(r, f"{where} row {i}") for i, r in enumerate(_need(raw, "rows", list, where))
    ]
    table.columns = [
        _column(c, f"{where} column {i}") for i, c in enumerate(_need(raw, "columns", list, where))
    ]
    for kind_, items in (("row", table.rows), ("column", table.columns)):
        ids = [x.id for x in items]
        if len(set(ids)) != len(ids):
            raise PublishedError(f"{where}: duplicate {kind_} ids in {ids}")
    for row_id, by_col in (_need(raw, "cells", dict, where)).items():
        if str(row_id) not in {r.id for r in table.rows}:
            raise PublishedError(f"{where}: cells name row {row_id!r}, which is not in rows")
        for col_id, spec in (by_col or {}).items():
            if str(col_id) not in {c.id for c in table.columns}:
                raise PublishedError(
                    f"{where}: cells of row {row_id!r} name column {col_id!r}, not in columns"
                )
            row, col = table.row(str(row_id)), table.column(str(col_id))
            table.cells[(row.id, col.id)] = _cell(
                spec, table, row, col, paper, f"{where} cell {row_id}/{col_id}"
            )
    if not table.cells:
        raise PublishedError(f"{where}: no cells")
    return table


def load_paper(path: str | Path) -> Paper:
    """Load and validate one published-numbers file."""
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as err:
        raise PublishedError(f"{path}: not valid YAML: {err}") from None
    where = path.name
    _known_keys(raw, {"schema", "version", "paper", "defaults", "tables"}, where)
    if _need(raw, "schema", int, where) != SCHEMA:
        raise PublishedError(
            f"{where}: schema {raw['schema']} is not the supported schema {SCHEMA}"
        )
    meta = _need(raw, "paper", dict, where)
    key = _need(meta, "key", str, f"{where}.paper")
    if key != path.stem:
        raise PublishedError(f"{where}: paper.key {key!r} should equal the file name {path.stem!r}")
    defaults = _identities(
        raw.get("defaults") or {}, f"{where}.defaults", {k: None for k in IDENTITIES}
    )
    tables = [
        _table(t, key, defaults, f"{where}: table") for t in _need(raw, "tables", list, where)
    ]
    ids = [t.id.lower() for t in tables]
    if len(set(ids)) != len(ids):
        raise PublishedError(f"{where}: duplicate table ids {ids}")
    return Paper(
        key,
        _need(meta, "title", str, f"{where}.paper"),
        _need(meta, "short", str, f"{where}.paper"),
        _need(meta, "source", str, f"{where}.paper"),
        _need(raw, "version", int, where),
        path,
        tables,
    )


def load_all(folder: str | Path = FOLDER) -> list[Paper]:
    """Every ``*.yaml`` in the folder, sorted by name."""
    files = sorted(Path(folder).glob("*.yaml"))
    if not files:
        raise PublishedError(f"no published-numbers files (*.yaml) in {folder}")
    return [load_paper(f) for f in files]


def find_paper(key: str, folder: str | Path = FOLDER) -> Paper:
    path = Path(folder) / f"{key}.yaml"
    if not path.is_file():
        known = sorted(p.stem for p in Path(folder).glob("*.yaml"))
        raise PublishedError(f"no published numbers for paper {key!r} in {folder}; known: {known}")
    return load_paper(path)
