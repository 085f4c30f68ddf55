"""``python -m p4target``: the same command as the ``p4target`` console script."""

from __future__ import annotations

import sys

from p4target.cli import main

if __name__ == "__main__":
    sys.exit(main())
