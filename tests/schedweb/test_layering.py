"""Layering: the pages (schedweb.dashboard) and the audit log (schedweb.audit) never import the API
app (schedweb.api); the rules both sides apply live in the domain app, schedweb.core (issue 21).

Every import statement counts, at module level or inside a function, absolute or relative.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHECKED_PACKAGES = ("schedweb/dashboard", "schedweb/audit")
FORBIDDEN = "schedweb.api"

def _module_of(path: Path) -> str:
    """The dotted module name of a file under ROOT (a package's __init__ is the package)."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_names(source: str, module: str, *, is_package: bool = False) -> set[str]:
    """What every import statement in `source` imports, as absolute dotted names (relative ones
    resolved against `module`): `import a.b` gives a.b, `from a.b import c` gives a.b.c."""
    found: set[str] = set()
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package
                for _ in range(node.level - 1):
                    anchor = anchor.rpartition(".")[0]
                base = f"{anchor}.{base}" if base else anchor
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def is_forbidden(name: str) -> bool:
    """The API app itself or anything inside it (not a look-alike such as schedweb.apiary)."""
    return name == FORBIDDEN or name.startswith(FORBIDDEN + ".")


def api_imports() -> set[tuple[str, str]]:
    """(file, imported name) for every name of schedweb.api the checked packages import."""
    found: set[tuple[str, str]] = set()
    for package in CHECKED_PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            names = imported_names(path.read_text(encoding="utf-8"), _module_of(path),
                                   is_package=path.name == "__init__.py")
            found.update((path.relative_to(ROOT).as_posix(), n) for n in names if is_forbidden(n))
    return found


@pytest.mark.parametrize(("source", "module", "is_package", "expected"), [
    pytest.param("import schedweb.api.models", "schedweb.dashboard.x", False, {"schedweb.api.models"},
                 id="import"),
    pytest.param("from schedweb.api import services as s", "schedweb.dashboard.x", False,
                 {"schedweb.api.services"}, id="from-package"),
    pytest.param("from schedweb import api", "schedweb.audit.x", False, {"schedweb.api"}, id="from-root"),
    pytest.param("def f():\n    from ..api.units import to_api\n", "schedweb.dashboard.forms", False,
                 {"schedweb.api.units.to_api"}, id="relative-in-function"),
    pytest.param("from .models import AuditEntry", "schedweb.audit", True,
                 {"schedweb.audit.models.AuditEntry"}, id="package-init"),
    pytest.param("import schedweb.apiary\ns = 'schedweb.api'", "schedweb.audit.x", False, {"schedweb.apiary"},
                 id="look-alike-and-string"),
])
def test_imported_names(source: str, module: str, is_package: bool, expected: set[str]) -> None:
    assert imported_names(source, module, is_package=is_package) == expected


@pytest.mark.parametrize(("name", "forbidden"), [
    ("schedweb.api", True), ("schedweb.api.models.ApiToken", True), ("schedweb.apiary", False),
    ("schedweb.core.access.QueueAccess", False), ("schedweb", False),
])
def test_is_forbidden(name: str, forbidden: bool) -> None:
    assert is_forbidden(name) is forbidden


def test_dashboard_and_audit_do_not_import_the_api_app() -> None:
    assert api_imports() == set()
