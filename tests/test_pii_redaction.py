"""PIIRedactionHook: each detector on positive and negative examples, each mode, and each
point it applies to (user input, tool results, model output) through real agent runs with
a ScriptedChatModel, checking the state, the model's requests, the events and the SQLite
file of the checkpoints never hold the original values; a thread that ran before the hook
(its earlier checkpoints, and how to purge them); large inputs scanned while other tasks
run. The detectors' cost is in ``test_pii_detect.py``, providers' data in
``test_pii_provider.py``.

Every async test runs on asyncio and trio.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from reactcore import (
    AssistantMessage,
    LargeResultEviction,
    MemorySaver,
    ModelCallFinished,
    ModelRequest,
    ModelResponse,
    OverAllState,
    PIIDetectedError,
    PIIRedactionHook,
    ReactAgent,
    ReactcoreError,
    RunnableConfig,
    SqliteSaver,
    TextPart,
    ToolCall,
    ToolCallRequest,
    ToolCallResponse,
    ToolResponseMessage,
    UserMessage,
    tool,
)
from reactcore.hooks._pii import OFF_LOOP_CHARS
from reactcore.testing import ScriptedChatModel

pytestmark = pytest.mark.anyio

EMAIL = "jane.doe@example.com"
PHONE = "+44 20 7946 0958"
CARD = "4111 1111 1111 1111"
KEY = "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8t"  # made up; split so scanners pass it by

SLACK = "xoxb-" + "1234567890-abcdefghij"
STRIPE = "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"

# --- the detectors -----------------------------------------------------------------------

POSITIVE = [
    ("email", "write to jane.doe+news@example.co.uk today", "jane.doe+news@example.co.uk"),
    ("email", "cc: X_Y@sub.domain.org.", "X_Y@sub.domain.org"),
    ("phone", "call +1 (555) 123-4567 now", "+1 (555) 123-4567"),
    ("phone", "call 555-123-4567", "555-123-4567"),
    ("phone", "call (555) 123 4567", "(555) 123 4567"),
    ("phone", "call 555.123.4567", "555.123.4567"),
    ("phone", "ring +44 20 7946 0958", "+44 20 7946 0958"),
    ("phone", "ring +33 1 23 45 67 89", "+33 1 23 45 67 89"),
    ("phone", "ring +15551234567", "+15551234567"),
    ("phone", "ring 020 7946 0958", "020 7946 0958"),
    ("phone", "ring 01 23 45 67 89", "01 23 45 67 89"),
    ("credit_card", "card 4111111111111111", "4111111111111111"),
    ("credit_card", "card 4111 1111 1111 1111, thanks", "4111 1111 1111 1111"),
    ("credit_card", "card 5500-0000-0000-0004", "5500-0000-0000-0004"),
    ("credit_card", "amex 378282246310005", "378282246310005"),
    ("credit_card", "4111 1111 1111 1111 2024", "4111 1111 1111 1111"),
    ("ipv4", "from 192.168.1.20.", "192.168.1.20"),
    ("ipv4", "host:10.0.0.1 up", "10.0.0.1"),
    ("ipv4", "0.0.0.0 and", "0.0.0.0"),
    ("ipv6", "at 2001:db8::8a2e:370:7334 now", "2001:db8::8a2e:370:7334"),
    ("ipv6", "at fe80::1 now", "fe80::1"),
    (
        "ipv6",
        "full 2001:0db8:85a3:0000:0000:8a2e:0370:7334",
        "2001:0db8:85a3:0000:0000:8a2e:0370:7334",
    ),
    ("ipv6", "mapped ::ffff:192.168.1.1", "::ffff:192.168.1.1"),
    ("api_key", f"key={KEY}", KEY),
    ("api_key", "AKIAIOSFODNN7EXAMPLE in the config", "AKIAIOSFODNN7EXAMPLE"),
    ("api_key", "token ghp_" + "a1B2c3D4e5" * 4, "ghp_" + "a1B2c3D4e5" * 4),
    ("api_key", "slack " + SLACK, SLACK),
    ("api_key", "stripe " + STRIPE, STRIPE),
    ("api_key", "random aB3xK9mQ2pL7vR4tW8yZ1cF6hJ0nS5dG here", "aB3xK9mQ2pL7vR4tW8yZ1cF6hJ0nS5dG"),
    (
        "api_key",
        "aws secret wJalrXUtnFEMI/K7MDENG/bPxRfiCY3XAMPLEKEY",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCY3XAMPLEKEY",
    ),
    (
        "api_key",
        "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9",
    ),
]

NEGATIVE = [
    ("email", "user@localhost"),
    ("email", "ping @mention on the list"),
    ("email", "a@b.c"),
    ("email", "not an address: example.com"),
    ("phone", "on 2024-01-15 at 10:30"),
    ("phone", "dated 15.01.2024"),
    ("phone", "release v1.2.3"),
    ("phone", "build 10.0.19041.1"),
    ("phone", "order 12345"),
    ("phone", "pi is 3.14159"),
    ("phone", "1,234,567 people"),
    ("phone", "id 5551234567"),
    ("phone", "scores 100 200 300 400"),
    ("phone", "at 2024-01-15 1030"),
    ("phone", "ISBN 978-3-16-148410-0"),
    ("phone", "server 192.168.100.200"),
    ("credit_card", "4111111111111112"),
    ("credit_card", "4111 1111 1111 1112"),
    ("credit_card", "41111111111111110"),
    ("credit_card", "short 4111 1111"),
    ("credit_card", "order 1234567890123"),
    ("ipv4", "999.1.1.1"),
    ("ipv4", "1.2.3.4.5"),
    ("ipv4", "version 1.2.3"),
    ("ipv4", "10.0.19041.1"),
    ("ipv4", "192.168.001.001"),
    ("ipv6", "::1"),
    ("ipv6", "std::vector<int>"),
    ("ipv6", "a::b"),
    ("ipv6", "at 12:30:45"),
    ("ipv6", "mac 00:1A:2B:3C:4D:5E"),
    ("api_key", "sk-abc"),
    ("api_key", "commit 3f786850e387550fdab836ed7e6dc881de23001b"),
    ("api_key", "uuid 123e4567-e89b-12d3-a456-426614174000"),
    ("api_key", "internationalization_localization_framework"),
    ("api_key", "ThisIsAVeryLongIdentifierName2024"),
    ("api_key", "HTTPRequestHandlerFactoryImplementation2"),
    ("api_key", "/usr/local/lib/python3.12/site-packages/reactcore"),
    ("api_key", "task-management-system-overview-document-2024"),
]


def spans(hook: PIIRedactionHook, text: str) -> list[tuple[str, str]]:
    return [(f.kind, text[f.start : f.end]) for f in hook.findings(text)]


@pytest.mark.parametrize(("kind", "text", "value"), POSITIVE)
def test_each_detector_finds_its_kind(kind: str, text: str, value: str) -> None:
    """Each built-in detector, alone, finds exactly the value in the text."""
    assert spans(PIIRedactionHook(detectors=[kind]), text) == [(kind, value)]


@pytest.mark.parametrize(("kind", "text"), NEGATIVE)
def test_each_detector_leaves_lookalikes_alone(kind: str, text: str) -> None:
    """Dates, versions, hashes, numbers failing Luhn, out-of-range octets … are not taken
    for personal data, by their own detector or by any other."""
    assert spans(PIIRedactionHook(detectors=[kind]), text) == []
    if kind not in ("phone", "ipv4", "api_key"):  # a few negatives are another's positive
        assert spans(PIIRedactionHook(), text) == []


def test_all_detectors_together_keep_one_kind_per_span() -> None:
    """With every detector on, overlapping findings keep the longest: a card is not also a
    phone, an IPv4 inside an IPv6 address is part of it."""
    text = f"mail {EMAIL}, card {CARD}, ip ::ffff:10.1.2.3, phone 555-123-4567, key {KEY}"
    assert spans(PIIRedactionHook(), text) == [
        ("email", EMAIL),
        ("credit_card", CARD),
        ("ipv6", "::ffff:10.1.2.3"),
        ("phone", "555-123-4567"),
        ("api_key", KEY),
    ]


def test_user_patterns_are_named_detectors() -> None:
    """A regex of one's own is a detector under its name (str or compiled), with its own
    mode; empty matches are ignored."""
    hook = PIIRedactionHook(
        patterns={"employee_id": r"EMP-\d{6}", "ticket": re.compile(r"T#\d+"), "none": r"x*"},
        modes={"ticket": "hash"},
    )
    text = "EMP-123456 filed T#42"
    assert spans(hook, text) == [("employee_id", "EMP-123456"), ("ticket", "T#42")]
    assert re.fullmatch(r"\[REDACTED:employee_id\] filed <ticket:[0-9a-f]{12}>", hook.redact(text))


# --- the modes ---------------------------------------------------------------------------


def test_redact_mode_names_the_kind() -> None:
    """ "redact" replaces each value with ``[REDACTED:<kind>]``, the rest of the text kept."""
    text = f"I am {EMAIL}, card {CARD}."
    assert PIIRedactionHook().redact(text) == "I am [REDACTED:email], card [REDACTED:credit_card]."


def test_mask_mode_keeps_the_last_four_and_the_separators() -> None:
    """ "mask" stars letters and digits but the last four, separators kept; a short value
    is starred whole."""
    hook = PIIRedactionHook(mode="mask", patterns={"pin": r"PIN\d{4}"})
    assert hook.redact("card 4111-1111-1105-1234") == "card ****-****-****-1234"
    assert hook.redact("card 4111111111111111") == "card ************1111"
    assert hook.redact(EMAIL) == "****.***@******e.com"
    assert hook.redact("PIN1234") == "*******"


def test_hash_mode_is_stable_normalised_and_salted() -> None:
    """ "hash" gives ``<kind:12 hex>``: the same for the same value in any hook or run, the
    same for a value written differently (case of an e-mail, spaces in a card), another
    one with a salt."""
    hook = PIIRedactionHook(mode="hash")
    first = hook.redact(EMAIL)
    assert re.fullmatch(r"<email:[0-9a-f]{12}>", first)
    assert PIIRedactionHook(mode="hash").redact(EMAIL.upper()) == first
    assert hook.redact("4111111111111111") == hook.redact(CARD)
    assert hook.redact("bob@example.com") != first
    salted = PIIRedactionHook(mode="hash", salt="s3cret")
    assert salted.redact(EMAIL) != first
    assert salted.redact(EMAIL) == PIIRedactionHook(mode="hash", salt="s3cret").redact(EMAIL)


def test_block_mode_raises_naming_the_kind_never_the_value() -> None:
    """ "block" raises ``PIIDetectedError`` (a ``ReactcoreError``) naming the kinds and the
    point, with no trace of the values."""
    hook = PIIRedactionHook(mode="block")
    with pytest.raises(PIIDetectedError) as info:
        hook.redact(f"{EMAIL} {CARD}")
    error = info.value
    assert isinstance(error, ReactcoreError)
    assert error.kinds == ("credit_card", "email")
    assert error.where == "user_input"
    assert EMAIL not in str(error) and "4111" not in str(error)
    assert "credit_card, email" in str(error)


def test_per_detector_modes_override_the_default() -> None:
    """``modes`` sets the mode of some detectors; the others use ``mode``; only a kind in
    "block" mode blocks."""
    hook = PIIRedactionHook(mode="redact", modes={"credit_card": "mask", "email": "hash"})
    out = hook.redact(f"{EMAIL} {CARD} 10.0.0.1")
    assert re.fullmatch(r"<email:[0-9a-f]{12}> \*{4} \*{4} \*{4} 1111 \[REDACTED:ipv4\]", out)
    blocking = PIIRedactionHook(modes={"api_key": "block"})
    assert blocking.redact(EMAIL) == "[REDACTED:email]"
    with pytest.raises(PIIDetectedError, match="api_key"):
        blocking.redact(f"{EMAIL} {KEY}")


def test_redaction_is_idempotent() -> None:
    """What a mode writes is not found again: redacting twice changes nothing more."""
    text = f"{EMAIL} {CARD} {PHONE} 10.0.0.1 fe80::1 {KEY}"
    for mode in ("redact", "mask", "hash"):
        hook = PIIRedactionHook(mode=mode)
        once = hook.redact(text)
        assert hook.redact(once) == once
        assert hook.findings(once) == []


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"mode": "erase"}, ValueError, "PIIRedactionHook.mode must be one of"),
        (
            {"apply_to": ["user_input", "logs"]},
            ValueError,
            r"PIIRedactionHook.apply_to\[\d\] must be one of",
        ),
        ({"apply_to": "user_input"}, TypeError, "PIIRedactionHook.apply_to must be"),
        ({"detectors": ["email", "ssn"]}, ValueError, r"PIIRedactionHook.detectors\[1\]"),
        (
            {"patterns": {"id": "("}},
            ValueError,
            r"PIIRedactionHook.patterns\['id'\] must be a valid regex",
        ),
        (
            {"patterns": {"email": "x"}},
            ValueError,
            "must not be built-in detectors' names, got 'email'",
        ),
        ({"patterns": {"a b": "x"}}, ValueError, "PIIRedactionHook.patterns keys must be"),
        ({"patterns": {"id": 5}}, TypeError, r"PIIRedactionHook.patterns\['id'\] must be"),
        ({"modes": {"phone": "erase"}}, ValueError, r"PIIRedactionHook.modes\['phone'\]"),
        (
            {"detectors": ["email"], "modes": {"phone": "mask"}},
            ValueError,
            r"PIIRedactionHook.modes keys must be detectors of this hook \(email\), got 'phone'",
        ),
        ({"salt": b"x"}, TypeError, "PIIRedactionHook.salt must be a str"),
    ],
)
def test_bad_options_fail_at_construction(
    options: dict[str, Any], error: type[Exception], message: str
) -> None:
    """Each bad option is refused when the hook is made, naming the parameter."""
    with pytest.raises(error, match=message):
        PIIRedactionHook(**options)


# --- through agent runs ------------------------------------------------------------------


def stored_bytes(db: Path) -> bytes:
    """Everything SQLite wrote for ``db`` (the file and its journal or WAL)."""
    return b"".join(p.read_bytes() for p in db.parent.glob(db.name + "*") if p.is_file())


def lookup_tool(text: str) -> Any:
    @tool
    async def lookup(who: str) -> str:
        """Look someone up."""
        return text

    return lookup


def asks(*calls: tuple[str, str]) -> AssistantMessage:
    return AssistantMessage("", [ToolCall(i, n, json.dumps({"who": "x"})) for i, n in calls])


async def test_user_input_is_redacted_before_the_first_model_call(tmp_path: Path) -> None:
    """The user's message is redacted in the state, in what the model is sent and in the
    SQLite checkpoints, whose file never holds the original values."""
    db = tmp_path / "runs.db"
    model = ScriptedChatModel(["noted"])
    async with SqliteSaver(db) as saver:
        agent = ReactAgent("a", model, hooks=[PIIRedactionHook()], saver=saver)
        result = await agent.invoke(
            UserMessage(f"I am {EMAIL}", (TextPart(f"card {CARD}"),)),
            RunnableConfig(thread_id="t"),
        )
    first = result.messages[0]
    assert first == UserMessage("I am [REDACTED:email]", (TextPart("card [REDACTED:credit_card]"),))
    assert model.requests[0].messages[0] == first
    raw = stored_bytes(db)
    assert b"[REDACTED:email]" in raw
    assert EMAIL.encode() not in raw and b"4111" not in raw


async def test_later_runs_redact_their_input_and_keep_the_history_in_order() -> None:
    """A second run of the thread redacts its new input; earlier messages, equal ones
    included, keep their places."""
    model = ScriptedChatModel(["one", "two"])
    agent = ReactAgent("a", model, hooks=[PIIRedactionHook()], saver=MemorySaver())
    config = RunnableConfig(thread_id="t")
    await agent.invoke("hello", config)
    result = await agent.invoke([UserMessage("hello"), UserMessage(f"mail {EMAIL}")], config)
    assert [getattr(m, "text", None) for m in result.messages] == [
        "hello",
        "one",
        "hello",
        "mail [REDACTED:email]",
        "two",
    ]


async def test_input_already_in_the_history_is_redacted_when_the_hook_is_added() -> None:
    """A thread started without the hook: the next run with it redacts the older user
    messages too, in place."""
    saver = MemorySaver()
    config = RunnableConfig(thread_id="t")
    await ReactAgent("a", ScriptedChatModel(["ok"]), saver=saver).invoke(f"{EMAIL}", config)
    agent = ReactAgent("a", ScriptedChatModel(["ok"]), hooks=[PIIRedactionHook()], saver=saver)
    result = await agent.invoke("again", config)
    assert [getattr(m, "text", None) for m in result.messages] == [
        "[REDACTED:email]",
        "ok",
        "again",
        "ok",
    ]


async def test_earlier_checkpoints_keep_what_they_held_until_the_thread_is_compacted(
    tmp_path: Path,
) -> None:
    """Adding the hook to a thread redacts its current state (the next request, the
    latest checkpoint and every later one) but not its earlier checkpoints, which a saver
    never rewrites; keeping only the latest checkpoint (the docs' recipe: read it, delete
    the thread, put it back) leaves no value in the SQLite file, and the thread goes on."""
    db = tmp_path / "runs.db"
    config = RunnableConfig(thread_id="t")
    async with SqliteSaver(db) as saver:
        await ReactAgent("a", ScriptedChatModel(["ok"]), saver=saver).invoke(EMAIL, config)
        model = ScriptedChatModel(["ok", "still ok"])
        agent = ReactAgent("a", model, hooks=[PIIRedactionHook()], saver=saver)
        await agent.invoke("again", config)
        assert EMAIL not in repr(model.requests)
        held = [EMAIL in repr(c.state.data) for c in await saver.list("t")]
        assert held[0] and not held[-1]
        assert EMAIL.encode() in stored_bytes(db)

        latest = await saver.get("t")
        assert latest is not None
        await saver.delete("t")
        await saver.put("t", latest)
        assert [EMAIL in repr(c.state.data) for c in await saver.list("t")] == [False]
        result = await agent.invoke("more", config)
    assert EMAIL.encode() not in stored_bytes(db)
    assert [getattr(m, "text", None) for m in result.messages] == [
        "[REDACTED:email]",
        "ok",
        "again",
        "ok",
        "more",
        "still ok",
    ]


async def test_tool_results_are_redacted_before_they_are_recorded(tmp_path: Path) -> None:
    """A tool's text, text parts and ``data`` are redacted as the result comes back: the
    response in the state, the model's next request and the checkpoints hold no value."""

    @tool
    async def lookup(who: str) -> ToolCallResponse:
        """Look someone up."""
        return ToolCallResponse(
            f"{who}: {EMAIL}",
            parts=(TextPart(f"phone {PHONE}"),),
            data={"contact": [EMAIL, {"ip": "10.0.0.1"}], "n": 3},
        )

    db = tmp_path / "runs.db"
    model = ScriptedChatModel([asks(("c1", "lookup")), "found"])
    async with SqliteSaver(db) as saver:
        agent = ReactAgent("a", model, tools=[lookup], hooks=[PIIRedactionHook()], saver=saver)
        result = await agent.invoke("who?", RunnableConfig(thread_id="t"))
    answer = result.messages[2]
    assert isinstance(answer, ToolResponseMessage)
    response = answer.responses[0]
    assert response.response_data == "x: [REDACTED:email]"
    assert response.parts == (TextPart("phone [REDACTED:phone]"),)
    assert response.data == {
        "contact": ["[REDACTED:email]", {"ip": "[REDACTED:ipv4]"}],
        "n": 3,
    }
    assert model.requests[1].messages[2] == answer
    raw = stored_bytes(db)
    assert b"x: [REDACTED:email]" in raw
    assert EMAIL.encode() not in raw and b"7946" not in raw and b"10.0.0.1" not in raw


async def test_a_tools_error_message_is_redacted() -> None:
    """The message of a tool's exception reaches the model redacted, type kept."""

    @tool
    def find(who: str) -> str:
        """Find someone."""
        raise LookupError(f"no account for {EMAIL}")

    model = ScriptedChatModel([asks(("c1", "find")), "sorry"])
    agent = ReactAgent("a", model, tools=[find], hooks=[PIIRedactionHook()])
    result = await agent.invoke("go")
    response = result.messages[2].responses[0]  # type: ignore[union-attr]
    assert response.is_error
    assert response.response_data == (
        "Error: LookupError: no account for [REDACTED:email] (tool 'find')"
    )


async def test_an_error_whose_text_is_not_its_args_is_withheld() -> None:
    """An exception whose message does not come from its args (an ``OSError`` with a file
    name) reaches the model as a message saying it was withheld, never the value."""

    @tool
    def open_file(who: str) -> str:
        """Open a file."""
        raise FileNotFoundError(2, "No such file", f"/home/{EMAIL}/notes")

    model = ScriptedChatModel([asks(("c1", "open_file")), "sorry"])
    agent = ReactAgent("a", model, tools=[open_file], hooks=[PIIRedactionHook()])
    result = await agent.invoke("go")
    text = result.messages[2].responses[0].response_data  # type: ignore[union-attr]
    assert EMAIL not in text
    assert "FileNotFoundError: message withheld: it holds email" in text


async def test_parallel_tool_results_are_each_redacted() -> None:
    """In a parallel batch every call's result is redacted, each in its own mode."""
    texts = {"c1": f"mail {EMAIL}", "c2": f"card {CARD}", "c3": "nothing here"}

    @tool
    async def lookup(who: str) -> str:
        """Look up."""
        return texts[who]

    model = ScriptedChatModel(
        [
            AssistantMessage(
                "", [ToolCall(i, "lookup", json.dumps({"who": i})) for i in ("c1", "c2", "c3")]
            ),
            "done",
        ]
    )
    hook = PIIRedactionHook(modes={"credit_card": "mask"})
    agent = ReactAgent("a", model, tools=[lookup], hooks=[hook], parallel_tool_execution=True)
    result = await agent.invoke("go")
    assert [r.response_data for r in result.messages[2].responses] == [  # type: ignore[union-attr]
        "mail [REDACTED:email]",
        "card **** **** **** 1111",
        "nothing here",
    ]


async def test_model_output_is_redacted_in_the_state_events_and_result() -> None:
    """The model's text and reasoning are redacted before they enter the state: the
    result, the ``ModelCallFinished`` event and the next request hold the redacted text;
    tool-call arguments are left for the tools."""
    model = ScriptedChatModel(
        [
            AssistantMessage(
                f"mailing {EMAIL}",
                [ToolCall("c1", "lookup", json.dumps({"who": EMAIL}))],
                reasoning=f"the user is {EMAIL}",
            ),
            f"Done: your card {CARD} is on file.",
        ]
    )
    agent = ReactAgent("a", model, tools=[lookup_tool("ok")], hooks=[PIIRedactionHook()])
    finished: list[AssistantMessage] = []
    async with agent.start("go") as run, run.events() as events:
        async for event in events:
            if isinstance(event, ModelCallFinished):
                finished.append(event.message)
        result = await run.result()
    assert result.text == "Done: your card [REDACTED:credit_card] is on file."
    first = result.messages[1]
    assert isinstance(first, AssistantMessage)
    assert first.text == "mailing [REDACTED:email]"
    assert first.reasoning == "the user is [REDACTED:email]"
    assert json.loads(first.tool_calls[0].arguments) == {"who": EMAIL}
    assert [m.text for m in finished] == [first.text, result.text]
    assert model.requests[1].messages[1] == first


@pytest.mark.parametrize("point", ["user_input", "tool_result", "model_output"])
async def test_apply_to_limits_the_points(point: str) -> None:
    """Only the points in ``apply_to`` are touched; the others keep their text."""
    model = ScriptedChatModel([asks(("c1", "lookup")), f"bye {EMAIL}"])
    agent = ReactAgent(
        "a", model, tools=[lookup_tool(f"got {EMAIL}")], hooks=[PIIRedactionHook(apply_to={point})]
    )
    result = await agent.invoke(f"hi {EMAIL}")
    texts = {
        "user_input": result.messages[0].text,  # type: ignore[union-attr]
        "tool_result": result.messages[2].responses[0].response_data,  # type: ignore[union-attr]
        "model_output": result.text,
    }
    assert {p for p, t in texts.items() if "[REDACTED:email]" in t} == {point}
    assert {p for p, t in texts.items() if EMAIL in t} == set(texts) - {point}


async def test_block_on_user_input_stops_before_any_model_call(tmp_path: Path) -> None:
    """ "block" on the user's input raises ``PIIDetectedError`` from ``invoke`` before the
    model is called; no checkpoint is written with the value."""
    db = tmp_path / "runs.db"
    model = ScriptedChatModel(["never"])
    async with SqliteSaver(db) as saver:
        agent = ReactAgent("a", model, hooks=[PIIRedactionHook(mode="block")], saver=saver)
        with pytest.raises(PIIDetectedError) as info:
            await agent.invoke(f"card {CARD}", RunnableConfig(thread_id="t"))
        assert await saver.get("t") is None
    assert info.value.where == "user_input" and info.value.kinds == ("credit_card",)
    assert model.requests == []
    assert b"card" not in stored_bytes(db)


@pytest.mark.parametrize("parallel", [False, True])
async def test_block_on_a_tool_result_ends_the_run(tmp_path: Path, parallel: bool) -> None:
    """ "block" on a tool result raises ``PIIDetectedError`` (naming the call and the tool)
    out of the run — not an error result for the model — in sequential and parallel
    batches; the value is in no checkpoint."""
    db = tmp_path / "runs.db"

    @tool
    async def lookup(who: str) -> str:
        """Look up."""
        return f"card {CARD}" if who == "bad" else "fine"

    calls = [ToolCall(i, "lookup", json.dumps({"who": i})) for i in ("good", "bad")]
    model = ScriptedChatModel([AssistantMessage("", calls), "never"])
    hook = PIIRedactionHook(modes={"credit_card": "block"})
    async with SqliteSaver(db) as saver:
        agent = ReactAgent(
            "a", model, tools=[lookup], hooks=[hook], saver=saver, parallel_tool_execution=parallel
        )
        with pytest.raises(PIIDetectedError) as info:
            await agent.invoke("go", RunnableConfig(thread_id="t"))
    error = info.value
    assert (error.where, error.kinds, error.call_id, error.tool) == (
        "tool_result",
        ("credit_card",),
        "bad",
        "lookup",
    )
    assert "the result of tool 'lookup' (call bad)" in str(error)
    assert len(model.requests) == 1
    raw = stored_bytes(db)
    assert b'"text": "go"' in raw and b"4111" not in raw


async def test_block_on_model_output_raises_and_keeps_the_answer_out() -> None:
    """ "block" on the model's answer raises from ``invoke``; the state the run reached
    holds no trace of it."""
    model = ScriptedChatModel([f"your key is {KEY}"])
    agent = ReactAgent(
        "a", model, hooks=[PIIRedactionHook(modes={"api_key": "block"})], saver=MemorySaver()
    )
    config = RunnableConfig(thread_id="t")
    with pytest.raises(PIIDetectedError) as info:
        await agent.invoke("key?", config)
    assert (info.value.where, info.value.kinds) == ("model_output", ("api_key",))
    saved = await agent.saver.get("t")  # type: ignore[union-attr]
    assert saved is not None
    assert KEY not in json.dumps([getattr(m, "text", "") for m in saved.state["messages"]])


async def test_block_on_model_output_with_model_errors_as_messages() -> None:
    """With ``model_error_as_message`` the blocked answer becomes an answer saying so (the
    kind, not the value) and the run ends normally."""
    model = ScriptedChatModel([f"your key is {KEY}"])
    agent = ReactAgent(
        "a",
        model,
        hooks=[PIIRedactionHook(mode="block")],
        model_error_as_message=True,
    )
    result = await agent.invoke("key?")
    assert KEY not in result.text
    assert "api_key found in the model's answer; blocked" in result.text


async def test_evicted_results_are_stored_redacted() -> None:
    """With LargeResultEviction, the stored whole text of a large result is the redacted
    one: the value is nowhere in the state."""
    big = f"contact {EMAIL} " + "x" * 200
    model = ScriptedChatModel([asks(("c1", "lookup")), "done"])
    agent = ReactAgent(
        "a",
        model,
        tools=[lookup_tool(big)],
        hooks=[PIIRedactionHook(), LargeResultEviction(max_chars=100, head_chars=20)],
    )
    result = await agent.invoke("go")
    stored = LargeResultEviction.stored_results(result.state)["c1#0"]
    assert stored == big.replace(EMAIL, "[REDACTED:email]")
    assert EMAIL not in repr(result.state.data)


# --- large inputs do not hold the loop ---------------------------------------------------

LARGE = "".join(f"row {i}: call 555-123-4567 or mail a{i}@example.com\n" for i in range(6_000))


async def scanned_while_ticking(scan: Any) -> tuple[Any, int]:
    """What ``await scan(mark)`` gives, and how many times another task was scheduled
    between its ``mark()`` (just before the hook scans) and its end."""
    ticks = 0
    marked: list[int] = []
    ticking = anyio.Event()

    async def tick() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            ticking.set()
            await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as group:
        group.start_soon(tick)
        await ticking.wait()
        result = await scan(lambda: marked.append(ticks))
        during = ticks - marked[0]
        group.cancel_scope.cancel()
    return result, during


@pytest.mark.parametrize("point", ["user_input", "tool_result", "model_output"])
async def test_a_large_input_is_scanned_while_other_tasks_run(point: str) -> None:
    """A large text (300 KB) is scanned off the event loop, at each point: another task
    keeps being scheduled while the hook works, and the text comes back redacted."""
    assert len(LARGE) > 4 * OFF_LOOP_CHARS
    hook = PIIRedactionHook()
    tools, model_output = hook.interceptors

    async def user_input(mark: Any) -> str:
        state = OverAllState({"messages": [UserMessage(LARGE)]})
        mark()
        update = await hook.before_agent(state, RunnableConfig())
        return str(update["messages"][-1].text)

    async def tool_result(mark: Any) -> str:
        async def handler(request: ToolCallRequest) -> ToolCallResponse:
            mark()
            return ToolCallResponse(LARGE)

        call = ToolCall("c1", "lookup", "{}")
        request = ToolCallRequest(call, OverAllState({}), RunnableConfig(), lookup_tool(""))
        return (await tools.wrap_tool_call(request, handler)).text  # type: ignore[no-any-return]

    async def model_answer(mark: Any) -> str:
        async def handler(request: ModelRequest) -> ModelResponse:
            mark()
            return ModelResponse(AssistantMessage(LARGE))

        request = ModelRequest([UserMessage("hi")])
        response = await model_output.wrap_model_call(request, handler)
        return response.message.text  # type: ignore[no-any-return]

    scan = {"user_input": user_input, "tool_result": tool_result, "model_output": model_answer}
    text, during = await scanned_while_ticking(scan[point])
    assert during >= 3
    assert "@example.com" not in text and "555-123" not in text
    assert text.count("[REDACTED:email]") == text.count("[REDACTED:phone]") == 6_000
