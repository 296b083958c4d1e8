"""``litedelegate`` / ``python -m interpreter``: the command line (see ``interpreter.cli``)."""

from __future__ import annotations

import sys

from interpreter.cli import main

if __name__ == "__main__":
    sys.exit(main())
