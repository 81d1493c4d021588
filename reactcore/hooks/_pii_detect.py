"""Finding personal data in text: the built-in detectors and their rules.

Each detector finds spans of one kind; ``find`` runs several over a text and keeps
non-overlapping spans (earliest first, then longest, then by priority). Everything here
is a pure function of the text: the same text gives the same findings, in every process.

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

import ipaddress
import itertools
import math
import re
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence

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

# Digits in groups separated by one space or one dash, not inside a word.
_DIGIT_GROUPS = re.compile(r"(?<![\w])\d+(?:[ -]\d+)*(?!\w)")
_GROUP = re.compile(r"\d+")


def luhn(digits: str) -> bool:
    """Whether the digit string passes the Luhn check (as card numbers do)."""
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = ord(char) - 48
        if index % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def credit_cards(text: str) -> Spans:
    """Consecutive groups of one run, 13–19 digits in all, Luhn-valid: the longest from
    each starting group, groups never split (so never part of a longer number)."""
    for run in _DIGIT_GROUPS.finditer(text):
        groups = [(m.start() + run.start(), m.end() + run.start()) for m in _GROUP.finditer(run[0])]
        first = 0
        while first < len(groups):
            found = None
            digits = ""
            for last in range(first, len(groups)):
                digits += text[groups[last][0] : groups[last][1]]
                if len(digits) > 19:
                    break
                if len(digits) >= 13 and luhn(digits):
                    found = last
            if found is None:
                first += 1
                continue
            yield groups[first][0], groups[found][1]
            first = found + 1


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

_SEP = r"[ .-]"
_PHONE = re.compile(
    r"(?<![\w.+-])(?:"
    # international: + and a country code, then groups (an area code in parentheses)
    rf"\+\d{{1,3}}(?:{_SEP}?\(\d{{1,5}}\)|{_SEP}?\d{{1,12}})+"
    # North-American: (optional 1-) 3-3-4 with separators, the area code maybe in ()
    rf"|(?:1{_SEP})?(?:\(\d{{3}}\){_SEP}?|\d{{3}}{_SEP})\d{{3}}{_SEP}\d{{4}}"
    # national, with the trunk prefix 0: two or more groups
    rf"|(?:\(0\d{{1,4}}\)|0\d{{1,4}})(?:{_SEP}?\d{{2,8}})+"
    r")(?!\w|[.-]\d)"
)
_DATE_START = re.compile(r"\d{4}[-./]\d{1,2}[-./]\d{1,2}|\d{1,2}[-./]\d{1,2}[-./]\d{4}")


def _phone(value: str) -> bool:
    digits = sum(c.isdigit() for c in value)
    if value.startswith("+"):
        return 8 <= digits <= 15
    if _DATE_START.match(value) or is_ipv4(value):
        return False
    if value.startswith(("0", "(0")):
        groups = re.findall(r"\d+", value)
        return 9 <= digits <= 12 and len(groups) >= 2
    return True  # the North-American shape says it all


_GROUP_END = re.compile(r"\d+\)?")
_NUMBER_GOES_ON = re.compile(r"[.-]\d")


def phones(text: str) -> Spans:
    """Each candidate, or else its longest valid start that ends a group: digits that
    follow a number (``+44 20 7946 0958 10.0.0.1``) are not taken into it."""
    for m in _PHONE.finditer(text):
        ends = [g.end() for g in _GROUP_END.finditer(m[0])]
        for end in reversed(ends):
            value, at = m[0][:end], m.start() + end
            if end < len(m[0]) and _NUMBER_GOES_ON.match(text, at):
                continue
            if _phone(value) and _PHONE.fullmatch(value):
                yield m.start(), at
                break


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


def find(text: str, detectors: Sequence[tuple[str, Detector]]) -> list[Finding]:
    """The spans of ``text`` the ``detectors`` (name, detector; in priority order) find,
    without overlaps: the earliest span first, then the longest, then the first
    detector's; a span overlapping one already kept is dropped."""
    found: list[tuple[int, int, int, str]] = []
    for priority, (kind, detector) in enumerate(detectors):
        found.extend((start, -end, priority, kind) for start, end in detector(text))
    found.sort()
    kept: list[Finding] = []
    reached = 0
    for start, minus_end, _, kind in found:
        if start >= reached:
            kept.append(Finding(kind, start, -minus_end))
            reached = -minus_end
    return kept
