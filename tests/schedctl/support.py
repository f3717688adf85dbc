"""What the CLI tests share: one schedctl run's result, and the live server it runs against."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from schedctl import main


@dataclass
class Run:
    """One schedctl run: exit code, stdout, stderr."""

    code: int
    out: str
    err: str


@dataclass
class Server:
    """The live server's URL and a staff user's token; `run` invokes schedctl against them."""

    url: str
    token: str
    capsys: pytest.CaptureFixture

    def run(self, *argv: str, token: str | None = "default") -> Run:
        """schedctl ARGV --server URL [--token KEY] in this process (token=None: send none)."""
        self.capsys.readouterr()
        key = self.token if token == "default" else token
        code = main.main([*argv, "--server", self.url, *([] if key is None else ["--token", key])])
        captured = self.capsys.readouterr()
        return Run(code, captured.out, captured.err)
