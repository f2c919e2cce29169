"""Reading user files and writing outputs safely.

Reading: only regular files (never a FIFO, device or directory, which could
block or never end), at most a size cap (:mod:`topologies.limits`), strict
UTF-8, and TOML/JSON parsing that turns every failure -- syntax, nesting too
deep for the parser, undecodable bytes -- into one :class:`SpecError` line.

Writing: :func:`write_atomic` replaces only regular files (a symbolic link is
followed to the regular file it names, and the link is kept), writes a
temporary file in the same directory and renames it over the target, so the
output appears complete or not at all. A new file gets the permissions the
umask allows (``0666 & ~umask``); a replaced file keeps its mode.

Examples
--------
>>> import os, tempfile
>>> d = tempfile.mkdtemp()
>>> p = os.path.join(d, "x.toml")
>>> write_atomic(p, b'a = 1').name
'x.toml'
>>> parse_toml(read_text(p, what="spec"), source=p)
{'a': 1}
>>> try:
...     read_text(d, what="spec")
... except SpecError as e:
...     print(str(e).split(": ", 1)[1])
is a directory; give a regular file
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from topologies.errors import SpecError, brief
from topologies.limits import MAX_INPUT_ENV, max_input_bytes

__all__ = ["read_text", "read_bytes", "parse_toml", "parse_json", "check_depth", "check_target", "check_output_name",
           "write_atomic", "MAX_DEPTH", "FILE_KINDS", "SQLITE_SIDECARS"]

#: Deepest nesting accepted in TOML/JSON input (spec files are 2-3 levels deep).
MAX_DEPTH = 32

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _kind(mode: int) -> str:
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def _label(path) -> str:
    return brief(str(path))


def read_bytes(path: str | Path, *, what: str, max_bytes: int | None = None,
               limit_env: str | None = MAX_INPUT_ENV) -> bytes:
    """The bytes of regular file ``path`` (``what`` names it in errors), at most ``max_bytes``.

    ``limit_env`` names the variable that raises the limit in the error (None: a fixed limit).
    """
    if isinstance(path, str) and not path.strip():
        raise SpecError(f"{what}: empty file name")
    cap = max_input_bytes() if max_bytes is None else int(max_bytes)
    where = f"{what} {_label(path)}"
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise SpecError(f"{where}: does not exist") from None
    except (OSError, ValueError) as exc:
        raise SpecError(f"{where}: cannot read ({getattr(exc, 'strerror', None) or exc})") from None
    if not stat.S_ISREG(st.st_mode):
        raise SpecError(f"{where}: is {_kind(st.st_mode)}; give a regular file")
    raise_it = f" (set {limit_env} to raise it)" if limit_env else ""
    if st.st_size > cap:
        raise SpecError(f"{where}: is {st.st_size:,} bytes, over the {cap:,}-byte limit{raise_it}")
    try:
        # O_NONBLOCK: if the file was swapped for a FIFO since the stat, open does not hang
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise SpecError(f"{where}: cannot read ({exc.strerror})") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise SpecError(f"{where}: is not a regular file; give a regular file")
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            total += len(chunk)
            if total > cap:
                raise SpecError(f"{where}: is over the {cap:,}-byte limit{raise_it}")
            chunks.append(chunk)
    except OSError as exc:
        raise SpecError(f"{where}: cannot read ({exc.strerror})") from None
    finally:
        os.close(fd)
    return b"".join(chunks)


def read_text(path: str | Path, *, what: str, max_bytes: int | None = None,
              limit_env: str | None = MAX_INPUT_ENV) -> str:
    """The UTF-8 text of regular file ``path`` (a leading byte-order mark is dropped)."""
    data = read_bytes(path, what=what, max_bytes=max_bytes, limit_env=limit_env)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SpecError(f"{what} {_label(path)}: is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset "
                        f"{exc.start})") from None


def check_depth(obj, *, source: str, limit: int = MAX_DEPTH) -> None:
    """Raise SpecError if ``obj`` (parsed TOML/JSON) nests deeper than ``limit`` (iterative: no recursion)."""
    stack = [(obj, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth > limit:
            raise SpecError(f"{source}: nested more than {limit} levels deep")
        stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))


def parse_toml(text: str, *, source: str) -> dict:
    """Parse TOML ``text``; every failure is one SpecError line naming ``source``."""
    import tomllib  # here, not at the top: preset runs parse no TOML

    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{source}: not valid TOML: {exc}") from None
    except RecursionError:
        raise SpecError(f"{source}: not valid TOML: nested too deeply") from None
    check_depth(doc, source=source)
    return doc


def parse_json(text: str | bytes, *, source: str):
    """Parse JSON ``text`` (no NaN/Infinity constants); failures are one SpecError line."""
    def no_constants(name):
        raise ValueError(f"{name} is not JSON")
    try:
        doc = json.loads(text, parse_constant=no_constants)
    except RecursionError:
        raise SpecError(f"{source}: not valid JSON: nested too deeply") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise SpecError(f"{source}: not valid JSON: {str(exc)[:200]}") from None
    check_depth(doc, source=source)
    return doc


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


#: File suffixes fabric-emu reads or writes, and what such a file holds: an output is never written under
#: the name of another kind (JSON over a .toml spec, CSV over a sweep database).
FILE_KINDS = {".toml": "a topology spec, model, validation or sweep file (TOML)", ".json": "JSON",
              ".graphml": "GraphML", ".xml": "GraphML", ".csv": "CSV", ".png": "a PNG plot", ".svg": "an SVG plot",
              ".sqlite": "a sweep database (SQLite)", ".sqlite3": "a sweep database (SQLite)",
              ".db": "a sweep database (SQLite)"}
#: What SQLite keeps beside a database (write-ahead log, its index, the rollback journal): replacing one
#: loses or corrupts the sweep's points (tab completion offers ``x.sqlite-wal`` next to ``x.sqlite``).
SQLITE_SIDECARS = ("-wal", "-shm", "-journal")


def check_output_name(path: str | Path, suffixes: tuple[str, ...], *, what: str, kind: str, hint: str = "") -> None:
    """Refuse an output name that says it holds another kind of file than this output (``kind``).

    A name ending in one of ``suffixes`` (the output's own, lower case) or in a suffix fabric-emu does not
    know (``out``, ``x.txt``) passes; one of :data:`FILE_KINDS` that is not the output's, or a SQLite
    sidecar, is refused with ``hint`` appended.

    Examples
    --------
    >>> check_output_name("g.json", (".json",), what="output", kind="--format json")
    >>> try:
    ...     check_output_name("sweep.sqlite-wal", (".csv",), what="-o", kind="--format csv")
    ... except SpecError as e:
    ...     print(str(e)[:60])
    -o 'sweep.sqlite-wal': is the journal of the SQLite database
    """
    name = os.path.basename(str(path))
    low = name.lower()
    side = next((x for x in SQLITE_SIDECARS if low.endswith(x)), None)
    if side:
        raise SpecError(f"{what} {_label(path)}: is the journal of the SQLite database {name[:-len(side)]!r} "
                        f"({side[1:]}); replacing it would lose the sweep's points")
    suffix = Path(low).suffix
    if suffix in suffixes or suffix not in FILE_KINDS:
        return
    stem = Path(name).stem
    raise SpecError(f"{what} {_label(path)}: a {suffix} file holds {FILE_KINDS[suffix]}; {kind} goes in a "
                    f"{suffixes[0]} file (name it {stem}{suffixes[0]}){hint}")


def check_target(path: str | Path, *, what: str = "output") -> tuple[Path, int]:
    """Check that ``path`` may be written by :func:`write_atomic`, before any work is done; return
    ``(target, mode)``: the regular file to replace (a symbolic link's target) and its permissions.

    A command that writes several files, or computes for a while first, checks every output with this
    up front, so that a bad second path does not leave the first file written and exit status 2.

    Examples
    --------
    >>> import tempfile
    >>> check_target(tempfile.mkdtemp() + "/new.json")[0].name
    'new.json'
    >>> try:
    ...     check_target("/no/such/folder/x.json", what="--trace")
    ... except SpecError as e:
    ...     print(e)
    --trace '/no/such/folder/x.json': directory '/no/such/folder' does not exist
    """
    if isinstance(path, str) and not path.strip():
        raise SpecError(f"{what}: empty file name")
    where = f"{what} {_label(path)}"
    if str(path).endswith((os.sep, "/")) or os.path.basename(str(path)) in (".", ".."):
        raise SpecError(f"{where}: names a directory; give a file name")
    target = Path(path)
    try:
        lst = os.lstat(target)
    except FileNotFoundError:
        lst = None
    except (OSError, ValueError) as exc:
        raise SpecError(f"{where}: cannot write ({getattr(exc, 'strerror', None) or exc})") from None
    mode = None
    if lst is not None and stat.S_ISLNK(lst.st_mode):
        real = Path(os.path.realpath(target))
        try:
            st = os.stat(real)
        except OSError:
            raise SpecError(f"{where}: is a symbolic link to a missing file ({_label(real)}); "
                            f"remove the link or write elsewhere") from None
        if not stat.S_ISREG(st.st_mode):
            raise SpecError(f"{where}: is a symbolic link to {_kind(st.st_mode)}; fabric-emu replaces only "
                            f"regular files")
        target, mode = real, stat.S_IMODE(st.st_mode)
    elif lst is not None:
        if not stat.S_ISREG(lst.st_mode):
            raise SpecError(f"{where}: is {_kind(lst.st_mode)}; fabric-emu replaces only regular files")
        mode = stat.S_IMODE(lst.st_mode)
    parent = target.parent
    if not parent.is_dir():
        raise SpecError(f"{where}: directory {_label(parent)} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise SpecError(f"{where}: cannot write in {_label(parent)} (permission denied)")
    if mode is not None and (not mode & 0o222 or not os.access(target, os.W_OK)):
        # the rename would replace it (the folder is writable), and as root even `>` would: a file
        # made read-only (chmod a-w) is kept, as cp and a shell redirection keep it for its owner
        raise SpecError(f"{where}: is read-only; make it writable (chmod u+w) or write elsewhere")
    return target, (0o666 & ~_umask()) if mode is None else mode


def write_atomic(path: str | Path, data: bytes | None = None, *, writer=None, what: str = "output") -> Path:
    """Write ``data`` (or call ``writer(binary_file)``) to ``path`` atomically; return the file written.

    Refuses to replace anything that is not a regular file; a symbolic link is
    written through (its target, which must be a regular file, is replaced; the
    link stays). Nothing is left behind on failure (nor on Ctrl-C).
    """
    if (data is None) == (writer is None):
        raise TypeError("write_atomic: give data or writer")
    target, mode = check_target(path, what=what)
    where, parent = f"{what} {_label(path)}", target.parent
    import tempfile  # here, not at the top: most runs write no file

    try:
        fd, tmp = tempfile.mkstemp(dir=parent, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as exc:
        raise SpecError(f"{where}: cannot write in {_label(parent)} ({exc.strerror})") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            if data is not None:
                fh.write(data)
            else:
                writer(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except OSError as exc:
        _unlink(tmp)
        raise SpecError(f"{where}: cannot write ({exc.strerror})") from None
    except BaseException:
        _unlink(tmp)
        raise
    return target


def _unlink(p: str) -> None:
    try:
        os.unlink(p)
    except OSError:
        pass
