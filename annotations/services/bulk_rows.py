"""Rows inserted with one `executemany` per batch, for imports of a pool's size.

Django's `bulk_create` compiles every value of every row through the field machinery: for a
500,000-item pool that was four fifths of the import's time. Here the values go as they are;
only JSON is encoded (as JSONField does, `json.dumps`) and the creation times are set once.
Inserted items' ids are read back in insertion order (ids only grow within one writer's
batch: SQLite's AUTOINCREMENT, PostgreSQL's sequence called in statement order).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from django.db import connection, models
from django.utils import timezone


def _columns(model: type[models.Model]) -> list[models.Field]:
    return [field for field in model._meta.concrete_fields if not field.primary_key]


def insert_rows(model: type[models.Model], rows: Iterable[Mapping[str, Any]]) -> int:
    """Insert `rows` (values by attribute name: `item_id`, `question`…; a field left out
    takes its default) into the model's table; returns how many."""
    fields = _columns(model)
    now = connection.ops.adapt_datetimefield_value(timezone.now())
    defaults: dict[str, Any] = {}
    for field in fields:
        if isinstance(field, models.DateTimeField) and (field.auto_now or field.auto_now_add):
            defaults[field.attname] = now
        else:  # the field's default, '' for text, None when nullable (as Django does)
            defaults[field.attname] = field.get_default()
    json_names = {f.attname for f in fields if isinstance(f, models.JSONField)}
    cast = "::jsonb" if connection.vendor == "postgresql" else ""
    placeholders = ", ".join(
        f"%s{cast}" if field.attname in json_names else "%s" for field in fields
    )
    table = connection.ops.quote_name(model._meta.db_table)
    names = ", ".join(connection.ops.quote_name(str(field.column)) for field in fields)
    sql = f"INSERT INTO {table} ({names}) VALUES ({placeholders})"
    order = [field.attname for field in fields]

    def values(row: Mapping[str, Any]) -> list[Any]:
        out = []
        for name in order:
            value = row[name] if name in row else defaults[name]
            if name in json_names and value is not None:
                value = json.dumps(value)
            out.append(value)
        return out

    params = [values(row) for row in rows]
    if params:
        with connection.cursor() as cursor:
            cursor.executemany(sql, params)
    return len(params)


def insert_items_returning_ids(
    model: type[models.Model], rows: Sequence[Mapping[str, Any]], *, scope: Mapping[str, Any]
) -> list[int]:
    """Insert `rows`, all matching `scope` (e.g. the new benchmark), and return their ids in
    row order. The scope must be written by this transaction alone (a new benchmark is)."""
    last = (
        model._default_manager.filter(**scope).order_by("-pk").values_list("pk", flat=True).first()
    )
    insert_rows(model, rows)
    new = model._default_manager.filter(**scope)
    if last is not None:
        new = new.filter(pk__gt=last)
    ids = list(new.order_by("pk").values_list("pk", flat=True)[: len(rows)])
    if len(ids) != len(rows):
        raise RuntimeError(f"inserted {len(rows)} rows but found {len(ids)}")
    return ids
