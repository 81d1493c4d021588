"""What the benchmark scripts share: their options, quiet logs, and a settled heap."""

from __future__ import annotations

import argparse
import gc
import logging
from collections.abc import Sequence
from typing import Any, TypeVar

import attrs
import structlog

Plan = TypeVar("Plan")


def parse(doc: str, quick: Any, full: Any, argv: Sequence[str] | None) -> tuple[Any, Any]:
    """The script's options (``--quick``, ``--backend``, ``--repeat``, ``--json``) and the
    plan they select; then logs are quietened and the heap frozen, ready to measure."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, 3 repeats")
    parser.add_argument("--backend", choices=("asyncio", "trio", "both"), default="both")
    parser.add_argument("--repeat", type=int, help="repeats per measurement (default 5; 3 quick)")
    parser.add_argument("--json", metavar="PATH", help="also write the rows as JSON")
    args = parser.parse_args(argv)
    plan = quick if args.quick else full
    if args.repeat is not None:
        plan = attrs.evolve(plan, repeat=args.repeat)
    # The library only gets loggers; a script may configure them: errors only.
    structlog.configure(
        wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR),
        cache_logger_on_first_use=True,
    )
    gc.collect()
    gc.freeze()  # what is loaded by now stays: the collections between measurements are quick
    return args, plan


def backends(args: Any) -> tuple[str, ...]:
    """The backends the options ask for."""
    return ("asyncio", "trio") if args.backend == "both" else (args.backend,)


def fmt(value: float | None, spec: str) -> str:
    """``value`` formatted for a table, ``-`` where there is none."""
    return "-" if value is None else format(value, spec)
