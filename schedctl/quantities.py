"""`cpu=4,memory=8Gi,nvidia.com/gpu=1`: vcctl's resource list flags as the API's resource map."""

from __future__ import annotations

import argparse


def resource_list(text: str) -> dict[str, str]:
    """`name=quantity` pairs separated by commas, as {name: quantity} (the server parses the
    quantities); an empty name, a pair without `=` or a name given twice is a usage error."""
    out: dict[str, str] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        name, sep, amount = part.partition("=")
        name, amount = name.strip(), amount.strip()
        if not sep or not name or not amount:
            raise argparse.ArgumentTypeError(f"expected name=quantity pairs (cpu=4,memory=8Gi), not {part!r}")
        if name in out:
            raise argparse.ArgumentTypeError(f"{name} given twice in {text!r}")
        out[name] = amount
    if not out:
        raise argparse.ArgumentTypeError("expected at least one name=quantity pair (cpu=4,memory=8Gi)")
    return out


def positive(text: str) -> int:
    """A whole number above 0 (argparse type)."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number above 0, not {text!r}")
    return value


def boolean(text: str) -> bool:
    """true/false (also yes/no, 1/0), as vcctl's --reclaimable takes it."""
    low = text.strip().lower()
    if low in ("true", "yes", "1"):
        return True
    if low in ("false", "no", "0"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, not {text!r}")
