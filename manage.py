#!/usr/bin/env python
"""Django's command-line utility for schedweb."""

import os
import sys


def main() -> None:
    """Run a management command with schedweb.settings unless DJANGO_SETTINGS_MODULE says otherwise."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "schedweb.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
