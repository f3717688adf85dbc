"""The prerendered /metrics body in a file beside the SQLite database: a scrape opens no connection.

With SQLite every process of the site shares one machine (and the database file's directory),
so the cycle's process writes the body next to the database (`<database>-metrics`, or the
METRICS_BODY_FILE setting; "" = keep it in the MetricsBody row instead) and a scrape reads it
without touching the database: no connection to open, no WAL checkpoint when it closes, no
wait behind the cycle. The first line is a JSON header (cycle id, when rendered, the newest
success's start), the rest the exposition. Written to a temporary file and renamed (a reader
sees the old body or the new one, never half), under an exclusive lock so that the newer-only
check and the rename are one step between processes. Each shard's instance has its own file
(`path(shard)`), as it has its own row.
"""

from __future__ import annotations

import fcntl
import json
import os
from datetime import datetime
from pathlib import Path
from urllib.parse import quote

from django.conf import settings
from django.db import connections


def path(shard: str = "") -> Path | None:
    """Where the body of instance `shard` lives: METRICS_BODY_FILE when set, else beside a
    file-backed SQLite database, else None (the MetricsBody row); a shard's is that path with
    `.shard-<name>` appended (quoted: one file name whatever the shard's name)."""
    configured = getattr(settings, "METRICS_BODY_FILE", None)
    if configured is not None:
        base = Path(configured) if configured else None
    else:
        db = connections["default"].settings_dict
        name = str(db.get("NAME") or "")
        if not db["ENGINE"].endswith("sqlite3") or not name or name == ":memory:" or name.startswith("file:"):
            return None
        base = Path(name + "-metrics")
    if base is None or not shard:
        return base
    return base.with_name(f"{base.name}.shard-{quote(shard, safe='')}")


def load(where: Path) -> tuple[int, datetime, datetime | None, str] | None:
    """(cycle id, rendered, last success, body), or None when there is no readable body."""
    try:
        text = where.read_text(encoding="utf-8")
        head, body = text.split("\n", 1)
        meta = json.loads(head)
        last = meta.get("last_success")
        return (int(meta["cycle_id"]), datetime.fromisoformat(meta["rendered"]),
                datetime.fromisoformat(last) if last else None, body)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def store(where: Path, cycle_id: int, rendered: datetime, last_success: datetime | None, body: str) -> bool:
    """Replace the body unless the one there is of a newer cycle (or a later render of this
    one); True when replaced."""
    head = json.dumps({"cycle_id": cycle_id, "rendered": rendered.isoformat(),
                       "last_success": last_success.isoformat() if last_success else None})
    where.parent.mkdir(parents=True, exist_ok=True)
    with open(f"{where}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        current = load(where)
        if current is not None and (current[0], current[1]) >= (cycle_id, rendered):
            return False
        temporary = f"{where}.{os.getpid()}.tmp"
        with open(temporary, "w", encoding="utf-8") as out:
            out.write(head + "\n" + body)
        os.replace(temporary, where)
        return True
