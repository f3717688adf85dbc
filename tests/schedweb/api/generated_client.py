"""Generate a Python client from the served OpenAPI schema with openapi-python-client (pinned in
requirements.txt) into a directory and import it, as a portal developer would.

The only generator setting is `content_type_overrides` (application/yaml read as text: the
generator knows no YAML media type, and the manifest export answers YAML) and no post hooks
(the generated code is used as written, not reformatted).
"""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import yaml

PACKAGE = "schedweb_client"
CONFIG = {"package_name_override": PACKAGE, "project_name_override": "schedweb-client",
          "content_type_overrides": {"application/yaml": "text/plain"}, "post_hooks": []}
# What the generator is expected to say: it takes the JSON form of the two bodies that also come
# as YAML ({"yaml": ...}) and skips their YAML form. Anything else it warns about is a defect.
EXPECTED_WARNINGS = {"POST /api/v1/manifests/import/", "POST /api/v1/scheduler-config/dry-run/"}


def generate(schema: dict, where: Path) -> tuple[str, set[str]]:
    """Generate the client into `where/PACKAGE`; (generator output, operations it warned about)."""
    (where / "schema.json").write_text(json.dumps(schema))
    (where / "config.yaml").write_text(yaml.safe_dump(CONFIG))
    done = subprocess.run(
        [sys.executable, "-m", "openapi_python_client", "generate", "--path", str(where / "schema.json"),
         "--config", str(where / "config.yaml"), "--meta", "none", "--output-path", str(where / PACKAGE)],
        capture_output=True, text=True, timeout=300, check=False)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    return output, set(re.findall(r"WARNING parsing (\w+ \S+) within", output))


def load(where: Path) -> ModuleType:
    """Import the generated package (and every module in it: each must import on its own)."""
    sys.path.insert(0, str(where))
    try:
        package = importlib.import_module(PACKAGE)
        for path in sorted((where / PACKAGE).rglob("*.py")):
            relative = path.relative_to(where).with_suffix("")
            importlib.import_module(".".join(relative.parts).removesuffix(".__init__"))
        return package
    finally:
        sys.path.remove(str(where))


def unload() -> None:
    """Forget the generated modules (another test may generate them again)."""
    for name in [n for n in sys.modules if n == PACKAGE or n.startswith(PACKAGE + ".")]:
        del sys.modules[name]
