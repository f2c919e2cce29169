"""The sweep store: one SQLite file, one row per point, every input and output column, nothing lost.

Layout (schema version :data:`SCHEMA_VERSION`):

``fabric_emu``
    ``key``/``value`` pairs: ``application = fabric-emu-sweep``, ``schema_version``,
    ``created_with`` (package version). A file without this table is not ours.
``sweeps``
    One row per ``sweep run`` invocation: when, the op, the swept keys (JSON), points.
``points``
    ``point_id`` (primary key: hash of the normalised inputs and the package
    version), ``seq`` (order of first appearance), ``op``, ``status`` (``ok`` or
    ``error``), ``error``, ``elapsed_s``, ``version``, ``inputs_json``,
    ``outputs_json``, then one column per input key (options, ``--set`` keys,
    ``fail``, ``degrade``) and one per output (``time_us``, ``busbw_GBps``,
    ``step_time_s``, ...). Columns are added (``ALTER TABLE``) when a sweep
    brings new keys; they are never removed.

The file is in WAL mode with ``synchronous=FULL`` and every finished point is
its own transaction, so a crash, Ctrl-C or SIGKILL loses no finished point;
re-running the same sweep skips the points already stored (``ok`` or
``error``). A file that is not SQLite, is corrupt, or is someone else's SQLite
database raises :class:`StoreError` before anything is written.

Examples
--------
>>> import tempfile, os
>>> d = tempfile.mkdtemp()
>>> st = Store.open(os.path.join(d, "s.sqlite"))
>>> st.put("abc", {"op": "all_reduce", "routing": "ecmp"}, "ok", {"time_us": 1.5}, 0.1, inputs={})
>>> st.done_ids() == {"abc"}, st.rows()[0]["time_us"]
(True, 1.5)
>>> st.close()
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import time

from topologies.errors import FabricEmuError, brief

__all__ = ["Store", "StoreError", "SCHEMA_VERSION", "APPLICATION", "FIXED_COLUMNS"]

SCHEMA_VERSION = 1
APPLICATION = "fabric-emu-sweep"
#: Columns every points row has, before the input and output columns.
FIXED_COLUMNS = ("point_id", "seq", "op", "status", "error", "elapsed_s", "version", "inputs_json", "outputs_json")
_HEADER = b"SQLite format 3\x00"
_COL_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class StoreError(FabricEmuError):
    """The sweep file cannot be used (not SQLite, corrupt, foreign, newer schema)."""


def _affinity(value) -> str:
    if isinstance(value, bool) or isinstance(value, int):
        return "INTEGER"
    if isinstance(value, float):
        return "REAL"
    return "TEXT"


#: SQLite INTEGER is a signed 64-bit integer; a larger Python int (a grid value such as hosts = 10^21,
#: refused by its point's evaluation) is passed as text instead of crashing the store; its INTEGER column
#: keeps it as a REAL (1e+21) whichever point is stored first; inputs_json keeps every digit.
_SQL_INT_RANGE = (-(2**63), 2**63 - 1)


def _sql_value(v):
    if isinstance(v, int) and not isinstance(v, bool) and not _SQL_INT_RANGE[0] <= v <= _SQL_INT_RANGE[1]:
        return str(v)
    if v is None or isinstance(v, (int, float, str)):
        return v
    if isinstance(v, (list, tuple, dict)):
        return json.dumps(v)
    return str(v)


class Store:
    """An open sweep file. Use :meth:`open` (read-write, creates) or :meth:`open` with ``readonly``."""

    def __init__(self, conn: sqlite3.Connection, path: str, readonly: bool) -> None:
        self.conn = conn
        self.path = path
        self.readonly = readonly
        self._columns = self._read_columns()

    # ------------------------------------------------------------------ opening
    @classmethod
    def open(cls, path: str, *, readonly: bool = False) -> "Store":
        """Open (or, unless ``readonly``, create) the sweep file at ``path``.

        Raises
        ------
        StoreError
            If the file exists and is not a fabric-emu sweep file (checked before any write).
        """
        shown = brief(str(path))
        exists = os.path.exists(path)
        if exists and not os.path.isfile(path):
            raise StoreError(f"--db {shown}: not a regular file")
        if not exists and readonly:
            raise StoreError(f"--db {shown}: no such file (run 'fabric-emu sweep run ... --db {shown}' first)")
        folder = os.path.dirname(os.path.abspath(path))
        if not exists and not os.path.isdir(folder):
            raise StoreError(f"--db {shown}: the folder {brief(folder)} does not exist (create it first)")
        if not exists and not os.access(folder, os.W_OK):
            raise StoreError(f"--db {shown}: the folder {brief(folder)} is not writable")
        size = os.path.getsize(path) if exists else 0
        if size:
            with open(path, "rb") as fh:
                head = fh.read(len(_HEADER))
            if head != _HEADER:
                raise StoreError(f"--db {shown}: not an SQLite file; refusing to touch it (give a new file name)")
        try:
            if readonly:
                conn = sqlite3.connect(f"file:{os.path.abspath(path)}?mode=ro", uri=True, timeout=30)
            else:
                conn = sqlite3.connect(path, timeout=30, isolation_level=None)
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"--db {shown}: corrupt SQLite file ({exc}); refusing to touch it") from None
        if size and "fabric_emu" not in tables:
            conn.close()
            what = f"tables: {', '.join(sorted(tables)[:5])}" if tables else "no fabric-emu tables"
            raise StoreError(f"--db {shown}: an SQLite database that is not a fabric-emu sweep ({what}); "
                             f"refusing to touch it (give a new file name)")
        try:
            if "fabric_emu" in tables:
                meta = dict(conn.execute("SELECT key, value FROM fabric_emu"))
                if meta.get("application") != APPLICATION:
                    raise StoreError(f"--db {shown}: not a fabric-emu sweep file (application "
                                     f"{brief(meta.get('application'))}); refusing to touch it")
                ver = int(meta.get("schema_version", "0"))
                if ver > SCHEMA_VERSION:
                    raise StoreError(f"--db {shown}: schema version {ver} is newer than this fabric-emu's "
                                     f"{SCHEMA_VERSION}; upgrade fabric-emu")
                if "points" not in tables:
                    raise StoreError(f"--db {shown}: corrupt sweep file (no points table)")
                if not readonly:
                    check = conn.execute("PRAGMA quick_check").fetchone()[0]
                    if check != "ok":
                        raise StoreError(f"--db {shown}: corrupt SQLite file ({check}); refusing to touch it")
            elif readonly:
                raise StoreError(f"--db {shown}: empty file, no sweep stored yet")
            if not readonly:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=FULL")
                if "fabric_emu" not in tables:
                    cls._create(conn)
        except StoreError:
            conn.close()
            raise
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise StoreError(f"--db {shown}: corrupt SQLite file ({exc}); refusing to touch it") from None
        return cls(conn, str(path), readonly)

    @staticmethod
    def _create(conn: sqlite3.Connection) -> None:
        from workloads.sweep.params import package_version

        conn.execute("BEGIN IMMEDIATE")
        conn.execute("CREATE TABLE fabric_emu (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        conn.executemany("INSERT INTO fabric_emu VALUES (?, ?)",
                         [("application", APPLICATION), ("schema_version", str(SCHEMA_VERSION)),
                          ("created_with", package_version())])
        conn.execute("CREATE TABLE sweeps (sweep_id INTEGER PRIMARY KEY, started REAL, op TEXT, "
                     "swept_keys TEXT, points INTEGER, version TEXT)")
        conn.execute("CREATE TABLE points (point_id TEXT PRIMARY KEY, seq INTEGER NOT NULL, op TEXT NOT NULL, "
                     "status TEXT NOT NULL, error TEXT, elapsed_s REAL, version TEXT, inputs_json TEXT NOT NULL, "
                     "outputs_json TEXT)")
        conn.execute("COMMIT")

    def close(self) -> None:
        self.conn.close()

    # ------------------------------------------------------------------ columns
    def _read_columns(self) -> list[str]:
        return [r[1] for r in self.conn.execute("PRAGMA table_info(points)")]

    def _ensure_columns(self, values: dict) -> None:
        for k, v in values.items():
            if k in self._columns:
                continue
            if not _COL_RE.fullmatch(k):
                raise StoreError(f"column {brief(k)}: not a valid column name")
            self.conn.execute(f'ALTER TABLE points ADD COLUMN "{k}" {_affinity(v)}')
            self._columns.append(k)

    @property
    def columns(self) -> list[str]:
        return list(self._columns)

    # ------------------------------------------------------------------ writing
    def begin_sweep(self, op: str, swept_keys: list[str], n_points: int) -> None:
        from workloads.sweep.params import package_version

        self.conn.execute("INSERT INTO sweeps (started, op, swept_keys, points, version) VALUES (?, ?, ?, ?, ?)",
                          (time.time(), op, json.dumps(list(swept_keys)), n_points, package_version()))

    def put(self, point_id: str, columns: dict, status: str, outputs, elapsed_s: float, *, inputs: dict,
            seq: int | None = None) -> None:
        """Store one finished point in its own transaction (``outputs`` is a dict, or the error text)."""
        from workloads.sweep.params import package_version

        out_cols = outputs if status == "ok" else {}
        raw = {k: v for k, v in {**columns, **out_cols}.items() if k not in FIXED_COLUMNS}
        row = {k: _sql_value(v) for k, v in raw.items()}
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            self._ensure_columns(raw)  # a column's type from the values as given (an int over 64 bits: INTEGER)
            if seq is None:
                seq = self.conn.execute("SELECT COALESCE(MAX(seq), -1) + 1 FROM points").fetchone()[0]
            fixed = {"point_id": point_id, "seq": seq, "op": columns.get("op", ""), "status": status,
                     "error": None if status == "ok" else str(outputs), "elapsed_s": elapsed_s,
                     "version": package_version(), "inputs_json": json.dumps(inputs, sort_keys=True, default=str),
                     "outputs_json": json.dumps(out_cols, sort_keys=True, default=str) if status == "ok" else None}
            allc = {**fixed, **row}
            names = ", ".join(f'"{k}"' for k in allc)
            marks = ", ".join("?" for _ in allc)
            self.conn.execute(f"INSERT OR REPLACE INTO points ({names}) VALUES ({marks})", list(allc.values()))
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise

    # ------------------------------------------------------------------ reading
    def done_ids(self, *, ok_only: bool = False) -> set[str]:
        """Ids of the stored points (``ok_only``: only those that succeeded)."""
        q = "SELECT point_id FROM points" + (" WHERE status = 'ok'" if ok_only else "")
        return {r[0] for r in self.conn.execute(q)}

    def swept_keys(self) -> list[str]:
        keys: list[str] = []
        for (text,) in self.conn.execute("SELECT swept_keys FROM sweeps ORDER BY sweep_id"):
            for k in json.loads(text or "[]"):
                if k not in keys:
                    keys.append(k)
        return keys

    def rows(self, *, status: str | None = None) -> list[dict]:
        """Every stored point as a dict of all columns, in ``seq`` order."""
        cur = self.conn.execute("SELECT * FROM points" + (" WHERE status = ?" if status else "") + " ORDER BY seq",
                                (status,) if status else ())
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r)) for r in cur]

    def count(self) -> dict:
        return dict(self.conn.execute("SELECT status, COUNT(*) FROM points GROUP BY status"))
