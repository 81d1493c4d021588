"""Where a run starts from: the errors a caller gets when there is nothing to resume say
what is missing (the saver, the thread id, the checkpoint) and how to give it."""

from __future__ import annotations

import pytest

from reactcore import MemorySaver, ReactAgent, Resume, RunnableConfig
from reactcore.models.scripted import ScriptedChatModel

pytestmark = pytest.mark.anyio


async def test_resume_without_a_saver_says_the_saver_is_missing() -> None:
    """invoke(None) on an agent without a saver, even with a thread id: the error names
    the missing saver and how to give one."""
    agent = ReactAgent("a", ScriptedChatModel([]))
    with pytest.raises(ValueError, match="nothing to resume") as info:
        await agent.invoke(None, RunnableConfig(thread_id="t"))
    assert str(info.value) == (
        "nothing to resume: an agent without a saver keeps no checkpoints (give it "
        "saver=MemorySaver() or SqliteSaver(path))"
    )


@pytest.mark.parametrize("value", [None, Resume({})])
async def test_resume_without_a_thread_id_says_the_thread_id_is_missing(
    value: Resume | None,
) -> None:
    """invoke(None) or invoke(Resume(...)) on an agent that has a saver, with no
    thread_id in the config: the error says the thread id is missing (not that the
    thread has no checkpoint), and the model is never asked."""
    model = ScriptedChatModel([])
    agent = ReactAgent("a", model, saver=MemorySaver())
    for config in (None, RunnableConfig()):
        with pytest.raises(ValueError, match="nothing to resume") as info:
            await agent.invoke(value, config)
        assert str(info.value) == (
            "nothing to resume: the config has no thread_id: name the thread to resume, "
            "invoke(None, RunnableConfig(thread_id=...))"
        )
    assert model.requests == []


async def test_resume_of_an_unknown_thread_says_it_has_no_checkpoint() -> None:
    """With a saver and a thread id that has no checkpoint: the thread is named."""
    agent = ReactAgent("a", ScriptedChatModel([]), saver=MemorySaver())
    with pytest.raises(ValueError, match="nothing to resume") as info:
        await agent.invoke(None, RunnableConfig(thread_id="nope"))
    assert str(info.value) == "nothing to resume: thread 'nope' has no checkpoint"
