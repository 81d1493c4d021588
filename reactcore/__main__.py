"""``python -m reactcore``: the ``reactcore`` command."""

from __future__ import annotations

import sys

from ._cli import main

sys.exit(main())
