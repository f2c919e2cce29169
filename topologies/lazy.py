"""Lazy package exports: a package's public names resolve (and import their module) on first use.

``import fabric`` then costs nothing until a name is used, so ``fabric-emu --help``
and small runs do not load numpy, scipy or networkx for names they never touch.

Examples
--------
>>> import sys, types
>>> pkg = types.ModuleType("demo_pkg"); sys.modules["demo_pkg"] = pkg
>>> install_lazy_exports("demo_pkg", {"sqrt": ("math", "sqrt")})
>>> sys.modules["demo_pkg"].sqrt(9.0)
3.0
"""

from __future__ import annotations

import importlib
import sys
import types

__all__ = ["install_lazy_exports"]


def install_lazy_exports(package: str, exports: dict[str, tuple[str, str | None]]) -> None:
    """Make ``exports`` (name -> (module, attribute or None for the module)) lazy attributes of ``package``."""
    mod = sys.modules[package]

    def __getattr__(name: str):
        try:
            where, attr = exports[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        module = importlib.import_module(where)
        value = module if attr is None else getattr(module, attr)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__():
        return sorted(set(vars(sys.modules[package])) | set(exports))

    class _Package(types.ModuleType):
        """Keeps an exported function whose name is also a submodule's (``presets``, ``bisection``, ``congestion``).

        Importing a submodule sets it as an attribute of the package; when an export
        of the same name is a function of that submodule, the function is stored instead,
        as eager ``from ... import`` lines would leave it.
        """

        def __setattr__(self, name, value):
            spec = exports.get(name)
            if (spec is not None and spec[1] is not None and isinstance(value, types.ModuleType)
                    and value.__name__ == f"{self.__name__}.{name}"):
                value = getattr(value, spec[1])
            super().__setattr__(name, value)

    mod.__getattr__ = __getattr__
    mod.__dir__ = __dir__
    mod.__class__ = _Package
