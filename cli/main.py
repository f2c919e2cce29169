"""Console entry point of ``fabric-emu``.

PyPI has an unrelated SSH library called ``fabric``; when both are installed in
one environment, ``import fabric`` may find the wrong one. The entry point checks
which ``fabric`` it gets before importing anything else and says how to fix it.
"""

from __future__ import annotations

import sys

__all__ = ["main", "check_fabric_package"]


def check_fabric_package() -> str | None:
    """Return an error message if ``import fabric`` would not find fabric-emu's package.

    Looks the package up without importing it (importing would load numpy and
    scipy before ``--help``): fabric-emu's ``fabric/__init__.py`` carries the
    ``__fabric_emu__`` marker.
    """
    import importlib.util

    loaded = sys.modules.get("fabric")
    if loaded is not None:
        marked, where = bool(getattr(loaded, "__fabric_emu__", False)), getattr(loaded, "__file__", "?")
    else:
        try:
            spec = importlib.util.find_spec("fabric")
        except (ImportError, ValueError) as exc:  # pragma: no cover - broken installs only
            return f"cannot import fabric-emu's 'fabric' package ({exc})"
        if spec is None or not spec.origin:
            return "cannot find fabric-emu's 'fabric' package; reinstall fabric-emu"
        where = spec.origin
        try:
            with open(spec.origin, encoding="utf-8", errors="replace") as fh:
                marked = "__fabric_emu__ = True" in fh.read(200_000)
        except OSError:  # pragma: no cover - unreadable install
            marked = False
    if not marked:
        return (f"the 'fabric' package found at {where} is not fabric-emu's (the SSH library 'fabric' is "
                f"probably installed in this environment); install fabric-emu in its own virtual environment: "
                f"python3 -m venv .venv && .venv/bin/pip install .")
    return None


def main(argv: list[str] | None = None) -> None:
    """Run the CLI (exit status 2 on bad input, with one red line on stderr)."""
    for stream in (sys.stdout, sys.stderr):  # a non-UTF-8 terminal or PYTHONIOENCODING=ascii: escape, never crash
        try:
            stream.reconfigure(errors="backslashreplace")
        except (AttributeError, ValueError):  # pragma: no cover - replaced or detached streams
            pass
    problem = check_fabric_package()
    if problem:
        sys.stderr.write(f"error: {problem}\n")
        sys.exit(2)
    import os
    import signal

    from cli.app import Terminated, cli

    def terminated(signum, frame):
        raise Terminated

    try:
        signal.signal(signal.SIGTERM, terminated)  # unwind (temporary files removed) instead of dying
    except (ValueError, OSError):  # pragma: no cover - not the main thread
        pass

    try:
        cli.main(args=argv, prog_name="fabric-emu")
    except BrokenPipeError:  # e.g. `fabric-emu topo list | head -1`: the reader left, nothing to report
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
    except OSError as exc:  # stdout on a full disk (/dev/full), a closed terminal, ...
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.stderr.write(f"error: cannot write the output ({exc.strerror or exc})\n")
        except (OSError, ValueError):  # pragma: no cover - stderr gone too
            pass
        sys.exit(1)


if __name__ == "__main__":  # pragma: no cover
    main()
