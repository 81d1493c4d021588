"""Finding personal data in text: the built-in detectors and their rules.

Each detector finds spans of one kind; ``find`` runs several over a text and keeps
non-overlapping spans (earliest first, then longest, then by priority). Everything here
is a pure function of the text: the same text gives the same findings, in every process.

Every built-in detector takes time linear in the length of the text, whatever the text:
no pattern can backtrack over more than a bounded stretch, the phone numbers and card
numbers are read from chains of digit groups found once each (a candidate is never
searched again from inside itself), and the work at each group is bounded (at most 15
digits for a phone number, 19 for a card, checked with prefix sums). ``find`` runs them
over a long text slice by slice, cut where no finding can span, so no single search is
long (``benchmarks/bench_pii.py`` measures the speed and the longest pause).

The rules, kind by kind:

- ``email``: ``local@domain.tld``, the domain in dot-separated labels and a top-level
  domain of two or more letters (``user@localhost`` is not one).
- ``phone``: an international number (``+``, then 8 to 15 digits in groups separated by
  single spaces, dots or dashes, an area code may be in parentheses); a North-American
  number (``555-123-4567``, ``(555) 123 4567``, ``555.123.4567``, optionally ``1-``
  first: groups of 3, 3 and 4 digits with separators); or a national number with a
  leading ``0`` (``020 7946 0958``, ``01 23 45 67 89``: 9 to 12 digits in two or more
  groups). Digits with no separators and no ``+`` (``5551234567``), dates
  (``2024-01-15``), versions (``1.2.3``) and IPv4 addresses are not phone numbers.
- ``credit_card``: 13 to 19 digits, together or in groups separated by single spaces or
  dashes, passing the Luhn check (``4111111111111111`` is one, ``4111111111111112`` is
  not), not part of a longer number.
- ``ipv4``: four dot-separated numbers 0–255 without leading zeros (``999.1.1.1`` and
  ``1.2.3.4.5`` are not addresses).
- ``ipv6``: a valid IPv6 address in any standard text form (``::`` compression, an IPv4
  tail) with at least four hex digits, so ``a::b`` in code is not taken for one.
- ``api_key``: a token with a known secret prefix — ``sk-`` (OpenAI, Anthropic) and 20
  more characters, ``AKIA``/``ASIA`` and 16 (AWS), ``ghp_``/``gho_``/``ghu_``/``ghs_``/
  ``ghr_`` and 30 (GitHub), ``github_pat_``, ``xox?-`` (Slack), ``AIza`` and 35
  (Google), ``sk_live_``/``sk_test_``/``rk_``/``pk_`` (Stripe), a JWT (``eyJ….eyJ….…``)
  — or any other run of 32 to 256 letters, digits and ``_-+/=`` that looks random: it
  has upper case, lower case and digits, the kind of character (upper, lower, digit,
  other) changes between at least 40 % of neighbouring characters, and the characters
  carry at least 4 bits of entropy each. A random key passes (99 % of random 32-character
  letters-and-digits strings do); a git hash, a UUID, a ``CamelCaseIdentifier2024`` or a
  sentence does not.
"""

from __future__ import annotations

import bisect
import ipaddress
import itertools
import math
import re
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import NamedTuple

import attrs

Spans = Iterator[tuple[int, int]]
Detector = Callable[[str], Spans]


@attrs.frozen
class Finding:
    """A span ``text[start:end]`` of kind ``kind`` (a detector's name)."""

    kind: str
    start: int
    end: int


# --- e-mail ------------------------------------------------------------------------------

_EMAIL = re.compile(
    r"(?<![\w.%+-])[A-Za-z0-9][A-Za-z0-9._%+-]*@"
    r"(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?\.)+[A-Za-z]{2,}(?![\w-])"
)


def emails(text: str) -> Spans:
    return (m.span() for m in _EMAIL.finditer(text))


# --- credit cards ------------------------------------------------------------------------

# Digits in groups separated by one space or one dash: maximal runs, read once (a group
# inside a word is left out of its run after the search, not by backtracking).
_DIGIT_GROUPS = re.compile(r"[0-9]++(?:[ -][0-9]++)*+")
_GROUP = re.compile(r"[0-9]+")
_WORD = re.compile(r"\w")
_DOUBLED = (0, 2, 4, 6, 8, 1, 3, 5, 7, 9)  # a digit doubled, its digits added (Luhn)
_FEWEST, _MOST = 13, 19  # digits of a card number
_CHUNK = 4096


def _running_sums(values: list[int]) -> list[int]:
    """The prefix sums of ``values`` (``0`` first), a chunk at a time: never one long C
    call holding the interpreter."""
    sums = [0]
    for at in range(0, len(values), _CHUNK):
        chunk = itertools.accumulate(values[at : at + _CHUNK], initial=sums[-1])
        sums.extend(itertools.islice(chunk, 1, None))
    return sums


def _luhn_sums(digits: str) -> tuple[list[int], list[int]]:
    """Prefix sums of ``digits`` for the Luhn check: ``even[i]`` adds the first ``i``
    digits doubling those at even places, ``odd[i]`` those at odd places. The check of
    ``digits[a:b]`` doubles every second digit from its right end, which are the places of
    the parity of ``b``: ``(even if b % 2 == 0 else odd)[b] - …[a]`` is its Luhn sum."""
    values = [ord(c) - 48 for c in digits]
    even = [_DOUBLED[v] if i % 2 == 0 else v for i, v in enumerate(values)]
    odd = [v if i % 2 == 0 else _DOUBLED[v] for i, v in enumerate(values)]
    return _running_sums(even), _running_sums(odd)


def _card_groups(text: str, run: re.Match[str]) -> tuple[list[int], list[int]]:
    """Where the digit groups of ``run`` start and end, but a first one that goes on a
    word before it, or a last one that goes on into a word after it."""
    starts, ends = [], []
    for m in _GROUP.finditer(text, run.start(), run.end()):
        starts.append(m.start())
        ends.append(m.end())
    if starts and starts[0] > 0 and _WORD.match(text, starts[0] - 1):
        del starts[0], ends[0]
    if starts and _WORD.match(text, ends[-1]):
        del starts[-1], ends[-1]
    return starts, ends


def credit_cards(text: str) -> Spans:
    """Consecutive groups of one run, 13–19 digits in all, Luhn-valid: the longest from
    each starting group, groups never split (so never part of a longer number). With the
    Luhn sums of the run's prefixes, each candidate is checked in constant time."""
    for run in _DIGIT_GROUPS.finditer(text):
        if run.end() - run.start() < _FEWEST:
            continue
        starts, ends = _card_groups(text, run)
        digits = "".join(text[a:b] for a, b in zip(starts, ends, strict=True))
        if len(digits) < _FEWEST:
            continue
        sums = _luhn_sums(digits)
        counts = _running_sums([b - a for a, b in zip(starts, ends, strict=True)])
        first = 0
        while first < len(starts):
            begin = counts[first]  # digits before the first group
            last = bisect.bisect_right(counts, begin + _MOST) - 2
            fewest = bisect.bisect_left(counts, begin + _FEWEST) - 1
            while last >= fewest:
                end = counts[last + 1]
                if (sums[end % 2][end] - sums[end % 2][begin]) % 10 == 0:
                    break
                last -= 1
            if last < fewest:
                first += 1
                continue
            yield starts[first], ends[last]
            first = last + 1


# --- IP addresses ------------------------------------------------------------------------

_IPV4 = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?!\w|\.\d)")
_IPV6 = re.compile(
    r"(?<![\w:.])(?=[0-9A-Fa-f]*:)[0-9A-Fa-f:]{2,39}"
    r"(?:(?<=:)\d{1,3}(?:\.\d{1,3}){3})?(?![\w:]|\.\d)"
)
_HEX = re.compile(r"[0-9A-Fa-f]")


def is_ipv4(value: str) -> bool:
    try:
        ipaddress.IPv4Address(value)
    except ValueError:
        return False
    return True


def ipv4s(text: str) -> Spans:
    return (m.span() for m in _IPV4.finditer(text) if is_ipv4(m[0]))


def ipv6s(text: str) -> Spans:
    for m in _IPV6.finditer(text):
        value = m[0]
        try:
            ipaddress.IPv6Address(value)
        except ValueError:
            continue
        if len(_HEX.findall(value.rsplit(":", 1)[0] if "." in value else value)) >= 4:
            yield m.span()


# --- phone numbers -----------------------------------------------------------------------

# A chain: digit groups (or groups in parentheses) joined by at most one separator (none
# is needed next to a parenthesis). The pattern is unambiguous and possessive, and chains
# are maximal: each character is read once, and no chain is tried again from inside it.
_CHAIN = re.compile(r"\+?(?:\(\d++\)|\d++)(?:[ .-]?+(?:\(\d++\)|\d++))*+")
_GROUP_IN_CHAIN = re.compile(r"([ .-]?)(\(?)(\d+)\)?")
_DATE_START = re.compile(r"\d{4}[-./]\d{1,2}[-./]\d{1,2}|\d{1,2}[-./]\d{1,2}[-./]\d{4}")
_BEFORE = re.compile(r"[\w.+-]")  # a number does not start right after one of these
_AFTER = re.compile(r"\w|[.-]\d")  # nor end right before one of these
_FEWEST_DIGITS, _MOST_DIGITS = 8, 15  # of any phone number (E.164 at most)
_FEWEST_NATIONAL, _MOST_NATIONAL = 9, 12
_WINDOW = _MOST_DIGITS + 1  # more groups than a number can take (each has a digit)


class _Group(NamedTuple):
    """A group of digits of a chain: where it starts (its parenthesis, not the separator
    before it) and ends, whether a separator comes before it, whether it is in
    parentheses, and its digits."""

    start: int
    end: int
    sep: bool
    paren: bool
    digits: str


def _groups(text: str, chain: re.Match[str]) -> Iterator[_Group]:
    at = chain.start() + (chain[0][0] == "+")
    return (
        _Group(m.start(2), m.end(), bool(m[1]), bool(m[2]), m[3])
        for m in _GROUP_IN_CHAIN.finditer(text, at, chain.end())
    )


def _north_american(groups: Sequence[_Group]) -> bool:
    """(``1`` and a separator), a 3-digit area code in parentheses or followed by a
    separator, 3 digits, a separator, 4 digits."""
    if len(groups) == 4:
        if groups[0].paren or groups[0].digits != "1" or not groups[1].sep:
            return False
        groups = groups[1:]
    area, exchange, line = groups
    return (
        len(area.digits) == 3
        and (area.paren or exchange.sep)
        and not exchange.paren
        and len(exchange.digits) == 3
        and line.sep
        and not line.paren
        and len(line.digits) == 4
    )


def _ends_number(text: str, at: int) -> bool:
    """Whether a number may end at ``text[at]`` (it does not go on)."""
    return not _AFTER.match(text, at)


def _not_a_date(value: str) -> bool:
    return not _DATE_START.match(value) and not is_ipv4(value)


def _longest_number(text: str, groups: Sequence[_Group], plus: bool) -> int:
    """How many of ``groups`` (the first where a number may start) the longest phone
    number there takes; 0 for none. At most 15 digits are looked at."""
    first = groups[0]
    if not plus and (first.digits[0] != "0" or (first.paren and len(first.digits) > 5)):
        # North-American: one shape, so one count of groups to check
        count = 4 if first.digits == "1" else 3
        last = count - 1
        fits = (
            last < len(groups)
            and _north_american(groups[:count])
            and _ends_number(text, groups[last].end)
            and _not_a_date(text[first.start : groups[last].end])
        )
        return count if fits else 0
    if not plus and len(first.digits) < 2:
        return 0  # a national number's first group is 0 and at least one more digit
    longest, digits = 0, 0
    for last in range(len(groups)):
        group = groups[last]
        digits += len(group.digits)
        if digits > (_MOST_DIGITS if plus else _MOST_NATIONAL):
            break
        if last > 0 and (
            (group.paren and (not plus or len(group.digits) > 5))
            or (not plus and len(group.digits) < 2)
        ):
            break  # a national number's later groups: 2 digits or more, no parentheses
        if not _ends_number(text, group.end):
            continue
        if plus:
            fits = digits >= _FEWEST_DIGITS and not first.paren
        else:
            fits = last > 0 and digits >= _FEWEST_NATIONAL
            fits = fits and _not_a_date(text[first.start : group.end])
        if fits:
            longest = last + 1
    return longest


def phones(text: str) -> Spans:
    """Each chain of digit groups is read once, through a window of the next 16 groups
    (more than a number can take): from each group where a number may start, the longest
    number there (the rules in the module docstring), then on after it."""
    for chain in _CHAIN.finditer(text):
        if chain.end() - chain.start() < _FEWEST_DIGITS:
            continue
        plus = chain[0][0] == "+"
        groups = _groups(text, chain)
        window = list(itertools.islice(groups, _WINDOW))
        while window:
            start = window[0].start - plus
            taken = 0
            if start == 0 or not _BEFORE.match(text, start - 1):
                taken = _longest_number(text, window, plus)
            if taken:
                yield start, window[taken - 1].end
            del window[: taken or 1]
            window.extend(itertools.islice(groups, _WINDOW - len(window)))
            plus = False


# --- API keys and other secrets ----------------------------------------------------------

_KNOWN_KEYS = re.compile(
    r"(?<![\w-])(?:"
    r"sk-[A-Za-z0-9_-]{20,}"
    r"|(?:AKIA|ASIA)[0-9A-Z]{16}"
    r"|gh[pousr]_[A-Za-z0-9]{30,}"
    r"|github_pat_[A-Za-z0-9_]{30,}"
    r"|xox[abposr]-[A-Za-z0-9-]{10,}"
    r"|AIza[0-9A-Za-z_-]{35}"
    r"|(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}"
    r"|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"
    r")(?![\w-])"
)
_TOKEN = re.compile(r"(?<![\w+/=-])[A-Za-z0-9_+/-]{32,}={0,2}(?![\w+/=-])")
_TOKEN_MAX = 256
ENTROPY_BITS = 4.0
CLASS_CHANGES = 0.4


def _char_class(char: str) -> int:
    return 0 if char.isupper() else 1 if char.islower() else 2 if char.isdigit() else 3


def entropy(value: str) -> float:
    """Shannon entropy of the characters of ``value``, in bits per character."""
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values())


def _random_looking(value: str) -> bool:
    if len(value) > _TOKEN_MAX:
        return False
    classes = [_char_class(c) for c in value]
    if not {0, 1, 2} <= set(classes):
        return False
    changes = sum(a != b for a, b in itertools.pairwise(classes))
    return changes >= CLASS_CHANGES * (len(value) - 1) and entropy(value) >= ENTROPY_BITS


def api_keys(text: str) -> Spans:
    yield from (m.span() for m in _KNOWN_KEYS.finditer(text))
    yield from (m.span() for m in _TOKEN.finditer(text) if _random_looking(m[0]))


# --- all together ------------------------------------------------------------------------

BUILTIN: Mapping[str, Detector] = {
    "credit_card": credit_cards,
    "email": emails,
    "api_key": api_keys,
    "ipv6": ipv6s,
    "ipv4": ipv4s,
    "phone": phones,
}
"""The built-in detectors by name, in priority order (the first wins a tie)."""


def pattern_detector(pattern: re.Pattern[str]) -> Detector:
    """A detector of a caller's regex (empty matches are ignored)."""

    def spans(text: str) -> Spans:
        return (m.span() for m in pattern.finditer(text) if m.end() > m.start())

    return spans


SLICE_CHARS = 32 * 1024
"""A long text is scanned by the built-in detectors in slices of about this many
characters, so no single regex search holds the interpreter (and, in a worker thread, the
event loop waiting for the GIL) for long."""
# Characters no finding of a detector contains and none of its patterns looks at, on
# either side, otherwise than at the text's ends: a cut right after one changes nothing.
# Phone and card numbers have spaces inside; the other kinds never do.
_CUT = re.compile(r"[\n\r\t\v\f\"',;<>\[\]{}|\\`!?*&#$^~]")
_CUT_OR_SPACE = re.compile(r"[\s\"',;<>\[\]{}|\\`!?*&#$^~]")
_CUTS = {d: _CUT if k in ("phone", "credit_card") else _CUT_OR_SPACE for k, d in BUILTIN.items()}


def slices(text: str, cut: re.Pattern[str] = _CUT) -> Iterator[tuple[int, int]]:
    """``text`` as consecutive ``(start, end)`` slices of at least ``SLICE_CHARS`` (the
    last one shorter), each ending right after a character of ``cut``; a text with no such
    character further on is one slice to its end."""
    at = 0
    while len(text) - at > SLICE_CHARS:
        found = cut.search(text, at + SLICE_CHARS)
        if found is None:
            break
        yield at, found.end()
        at = found.end()
    yield at, len(text)


def _spans(text: str, detector: Detector) -> Spans:
    """What ``detector`` finds in ``text``: a built-in one slice by slice."""
    cut = _CUTS.get(detector)
    if cut is None or len(text) <= SLICE_CHARS:
        yield from detector(text)
        return
    for start, end in slices(text, cut):
        yield from ((start + a, start + b) for a, b in detector(text[start:end]))


def find(text: str, detectors: Sequence[tuple[str, Detector]]) -> list[Finding]:
    """The spans of ``text`` the ``detectors`` (name, detector; in priority order) find,
    without overlaps: the earliest span first, then the longest, then the first
    detector's; a span overlapping one already kept is dropped. Linear in the length of
    ``text`` for the built-in detectors."""
    found: list[tuple[int, int, int, str]] = []
    for priority, (kind, detector) in enumerate(detectors):
        found.extend((start, -end, priority, kind) for start, end in _spans(text, detector))
    found.sort()
    kept: list[Finding] = []
    reached = 0
    for start, minus_end, _, kind in found:
        if start >= reached:
            kept.append(Finding(kind, start, -minus_end))
            reached = -minus_end
    return kept
