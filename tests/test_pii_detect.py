"""The built-in detectors' cost: linear time on the texts that made the old ones
backtrack or rescan, and slices that change no finding (``_pii_detect``)."""

from __future__ import annotations

import time
from typing import Any

import attrs
import pytest

from reactcore import PIIRedactionHook
from reactcore.hooks._pii_detect import BUILTIN, SLICE_CHARS, find, slices
from tests.test_pii_redaction import CARD, EMAIL, KEY, PHONE

# Texts that made the old phone detector backtrack (a number's digits split every way:
# exponential) or rescan (a chain of groups searched again from each group: quadratic,
# 543 s at 200 KB), and a chain of one-digit groups, each of which may start a number.
PATHOLOGICAL = {
    "plus_and_digits": "+1" + "9" * 30 + "a ",
    "national_groups": "01 ",
    "single_digits": "1 ",
}


@pytest.mark.parametrize("unit", PATHOLOGICAL.values(), ids=PATHOLOGICAL.keys())
def test_pathological_text_is_scanned_in_linear_time(unit: str) -> None:
    """200 KB of text built to make a regex detector backtrack or rescan (the phone
    detector took 543 s on such input) is scanned by every detector in well under the
    generous bound of 5 s (about a tenth of that on an idle machine; ``bench_pii.py``
    shows the time grows linearly)."""
    text = (unit * (200_000 // len(unit) + 1))[:200_000]
    started = time.perf_counter()
    PIIRedactionHook().findings(text)
    assert time.perf_counter() - started < 5


def test_slices_change_no_finding() -> None:
    """A long text is scanned slice by slice; the cuts change nothing: the findings are
    those of each detector over the whole text at once, across many slices."""
    samples = [EMAIL, PHONE, CARD, "10.0.0.1", "2001:db8::8a2e:370:7334", KEY, "555-123-4567"]
    glue = [" ", "\n", ", ", "; ", '"', "\t", " and ", "-", ".", "!"]
    words = [f"{samples[i % 7]}{glue[i % 10]}x{i}{glue[(i * 3) % 10]}" for i in range(12_000)]
    text = "".join(words)
    assert len(text) > 8 * SLICE_CHARS
    assert len(list(slices(text))) > 8
    hook = PIIRedactionHook()
    whole = find(text, [(k, _Whole(d)) for k, d in BUILTIN.items()])
    assert hook.findings(text) == whole
    assert len(whole) > 10_000


@attrs.frozen
class _Whole:
    """A built-in detector run over the whole text at once (not one ``find`` slices)."""

    detector: Any

    def __call__(self, text: str) -> Any:
        return self.detector(text)
