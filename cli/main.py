"""Console entry point of ``fabric-emu``.

PyPI has an unrelated SSH library called ``fabric``; when both are installed in
one environment, ``import fabric`` may find the wrong one. The entry point checks
which ``fabric`` it gets before importing anything else and says how to fix it.
"""

from __future__ import annotations

import sys

__all__ = ["main", "check_fabric_package"]


def check_fabric_package() -> str | None:
    """Return an error message if ``import fabric`` is not fabric-emu's package."""
    try:
        import fabric
    except Exception as exc:  # pragma: no cover - broken installs only
        return f"cannot import fabric-emu's 'fabric' package ({exc})"
    if not getattr(fabric, "__fabric_emu__", False):
        where = getattr(fabric, "__file__", "?")
        return (f"the 'fabric' package found at {where} is not fabric-emu's (the SSH library 'fabric' is "
                f"probably installed in this environment); install fabric-emu in its own virtual environment: "
                f"python3 -m venv .venv && .venv/bin/pip install .")
    return None


def main(argv: list[str] | None = None) -> None:
    """Run the CLI (exit status 2 on bad input, with one red line on stderr)."""
    problem = check_fabric_package()
    if problem:
        sys.stderr.write(f"error: {problem}\n")
        sys.exit(2)
    from cli.app import cli

    cli.main(args=argv, prog_name="fabric-emu")


if __name__ == "__main__":  # pragma: no cover
    main()
