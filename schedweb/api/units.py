"""Stored resource maps (milli-cpu, bytes, milli-scalars) to what the API and manifests show."""

from __future__ import annotations

from typing import Any

# Re-exported for schedweb.api.manifest_export and tests/schedweb/api/test_units.py; the conversion is
# the core app's (schedweb.core.quantities), shared with the pages' edit forms.
from schedweb.core.quantities import to_quantities  # noqa: F401


def to_api(stored: dict[str, Any] | None) -> dict[str, int | float] | None:
    """Stored units to output units: cpu in cores, memory in bytes, scalars in their units.

    The same conversion as the edit forms (core.validation.resources_for_input), so every
    output map can be sent back as input.
    """
    from schedweb.core.validation import resources_for_input

    return resources_for_input(stored)
