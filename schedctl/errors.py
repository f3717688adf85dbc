"""What schedctl reports on stderr, and with which exit code (1: the server said no, 2: bad input)."""

from __future__ import annotations

from collections.abc import Callable


class CliError(Exception):
    """A failure shown as lines on stderr; `exit_code` is the process's exit status."""

    exit_code = 1

    def lines(self) -> list[str]:
        """The stderr lines, each already prefixed as it must appear."""
        return [f"schedctl: {self}"]


class UsageError(CliError):
    """The command line itself is wrong (exit 2, like argparse's own errors)."""

    exit_code = 2


class InputError(CliError):
    """A file given to schedctl is unreadable or malformed: `FILE:LINE: message`, exit 2."""

    exit_code = 2

    def __init__(self, path: str, line: int, message: str) -> None:
        super().__init__(f"{path}:{line}: {message}")
        self.path, self.line, self.message = path, line, message

    def lines(self) -> list[str]:
        """`FILE:LINE: message` (no program prefix: editors jump to it)."""
        return [str(self)]


class ConnectError(CliError):
    """The server could not be reached at all (refused, unknown host, timeout): one line, exit 1."""


# Maps an API error's field path to "FILE:LINE" when the request body came from a file.
Locator = Callable[[str], str | None]


class ApiError(CliError):
    """An HTTP error answer; `fields` is the API envelope's {field path: [messages]}."""

    def __init__(self, status: int, code: str, message: str, fields: dict[str, list[str]] | None = None,
                 locate: Locator | None = None) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status, self.code, self.message = status, code, message
        self.fields = fields or {}
        self.locate = locate

    def lines(self) -> list[str]:
        """One `schedctl: <status> <code>: <field path>: <message>` line per field message.

        Without field messages, the envelope's message; `non_field_errors` has no path to show.
        A location in the submitted file, when known, follows the message in parentheses.
        """
        out = []
        for path, messages in self.fields.items():
            where = self.locate(path) if self.locate else None
            suffix = f" ({where})" if where else ""
            prefix = "" if path == "non_field_errors" else f"{path}: "
            out.extend(f"schedctl: {self.status} {self.code}: {prefix}{m}{suffix}" for m in messages)
        return out or [f"schedctl: {self.status} {self.code}: {self.message}"]
