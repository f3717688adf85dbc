"""Every module in this package is imported here so its @register_* decorator runs.

A new module needs no edit of this file: siblings are discovered with pkgutil, in name order.
"""

import importlib
import pkgutil

for _info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if not _info.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_info.name}")
