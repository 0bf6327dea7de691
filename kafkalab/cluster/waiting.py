"""Waiting for a cluster's state: ``Cluster.wait_until``'s loop and the error it raises when the wait is in vain.

Theory of operation: Kafka's tests wait for a cluster the same way, with ``TestUtils.waitUntilTrue(condition,
msg, waitTimeMs)`` (``org.apache.kafka.test.TestUtils.waitForCondition`` in the Java modules): poll a condition
until it holds or the time is up, then fail with a message that says what did not happen. Here the condition
reads broker state, so it is evaluated on the cluster's event loop (:func:`poll_until`), but the failure is
raised in the caller's thread (:func:`raise_if_unmet`), so a notebook shows the cell's line and a sentence, not
a traceback through ``concurrent.futures`` and asyncio. Most such failures in a lab come from an earlier cell that
was skipped or run twice, which leaves the cluster in another state than the cell expects: the message says so,
and what to do (restart the kernel, run from the top).
"""
from __future__ import annotations

import asyncio
import inspect
from typing import Callable, Optional

__all__ = ["ConditionNotMet", "RERUN_HINT", "poll_until", "raise_if_unmet", "describe_condition"]

RERUN_HINT = ("In a lab notebook this usually means an earlier cell was skipped or run twice, so the cluster is "
              "not in the state this cell expects: restart the kernel and run the cells from the top "
              "(Kernel → Restart Kernel and Run All Cells…).")


class ConditionNotMet(TimeoutError):
    """A condition :meth:`Cluster.wait_until` waited for stayed false for the whole timeout. A ``TimeoutError``
    (so ``except TimeoutError`` still catches it) whose message names the condition and what to do."""

    def __init__(self, message: str, condition: Callable[[], object], timeout: float):
        self.condition_text = describe_condition(condition)
        self.timeout = timeout
        what = f" (still false: {self.condition_text})" if self.condition_text else ""
        super().__init__(f"{message} within {timeout:g} s{what}. {RERUN_HINT}")


def describe_condition(condition: Callable[[], object], limit: int = 160) -> str:
    """A lambda's source from ``lambda`` on (IPython keeps notebook cells' sources for this), a function's name
    with ``()``; ``""`` when the source of a lambda is not known."""
    if not _is_lambda(condition):
        name = getattr(condition, "__qualname__", "")
        return f"{name}()" if name else ""
    try:
        lines, _ = inspect.getsourcelines(condition)
    except (OSError, TypeError):
        return ""
    text = " ".join(line.strip() for line in lines)
    text = text[text.index("lambda"):] if "lambda" in text else text
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _is_lambda(fn) -> bool:
    return getattr(fn, "__name__", "") == "<lambda>"


async def poll_until(condition: Callable[[], object], timeout: float, interval: float = 0.01):
    """On the cluster loop: ``True`` once ``condition()`` holds, ``False`` when ``timeout`` seconds pass first, or
    the exception ``condition()`` raised (returned, not raised, so the caller raises it in its own thread)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        try:
            if condition():
                return True
        except Exception as e:  # noqa: BLE001 -- handed to the caller, who raises it
            return e
        if loop.time() > deadline:
            return False
        await asyncio.sleep(interval)


def raise_if_unmet(outcome, condition: Callable[[], object], timeout: float, message: Optional[str]) -> bool:
    """In the caller's thread: ``True`` for a met condition, else raise :class:`ConditionNotMet` or the
    condition's own exception (with a note on what to do)."""
    if outcome is True:
        return True
    if isinstance(outcome, BaseException):
        outcome.add_note(f"(raised by the condition of Cluster.wait_until) {RERUN_HINT}")
        raise outcome
    raise ConditionNotMet(message or "the condition was not met", condition, timeout)
