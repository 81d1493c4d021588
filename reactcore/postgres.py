"""``PostgresSaver`` where it was before ``reactcore.savers``: the same objects as
``reactcore.savers.PostgresSaver`` and ``POSTGRES_SCHEMA`` (the ``postgres`` extra).

The saver, its layout, leases and fencing are described in ``reactcore.savers`` and on
``PostgresSaver`` itself.
"""

from __future__ import annotations

from .savers._postgres import PostgresSaver as PostgresSaver
from .savers._postgres import _RowLeases as _RowLeases
from .savers._postgres_layout import _MIGRATIONS as _MIGRATIONS
from .savers._postgres_layout import _STATEMENTS as _STATEMENTS
from .savers._postgres_layout import POSTGRES_SCHEMA as POSTGRES_SCHEMA

__all__ = ["POSTGRES_SCHEMA", "PostgresSaver"]
