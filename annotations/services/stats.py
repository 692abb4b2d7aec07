"""Planner statistics after bulk writes.

PostgreSQL plans from statistics that autovacuum refreshes late (or never, where it is off):
right after a bulk import or assignment, a query can be planned for the empty tables it saw
before, and read millions of rows. The services that write in bulk refresh the statistics of
what they touched; on SQLite there is nothing to do (its planner reads the indexes).
"""

from __future__ import annotations

from django.db import connection

# Fewer rows than this leave the statistics to autovacuum.
ANALYZE_AFTER = 1000


def tables_analyze(*models) -> None:
    """`ANALYZE` the tables of `models` on PostgreSQL; nothing elsewhere."""
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        for model in models:
            cursor.execute(f"ANALYZE {connection.ops.quote_name(model._meta.db_table)}")
