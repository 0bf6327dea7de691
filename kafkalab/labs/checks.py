"""kafkalab.labs.checks -- exercises that check themselves: the ✓/✗ result every lab's checks return.

Theory of operation
-------------------
An exercise in a lab notebook is three cells: a *task* (what to find, and the data to find it in), an
*answer* cell where the learner writes code that sets a variable, and a *check* cell that calls a function of
a lab's module, e.g. ``lab01.check_correlation_id(corr_id, MYSTERY)``. In the instructor's notebook the answer
cell holds the solution and is tagged ``solution``; the student version (``scripts/build_labs.py --student``)
replaces it with ``corr_id = ...``.

A check never hard-codes the answer. It computes what is right from the same data the learner was given,
using kafkalab itself (the decoder, the header-version rule, the primitive readers), so changing the data in
the task cell keeps the exercise correct. It then returns a :class:`CheckResult`, which a notebook shows as a
small green ✓ or red ✗ box with a hint, and which prints as one or more plain lines elsewhere. A wrong answer
gets a hint aimed at the likely mistake (read little-endian? forgot the ``+ 1``? counted the size prefix?),
never the answer itself.

Everything here is deterministic: the HTML and the text depend only on the answer and the data, so stored
outputs compare equal under nbval.

:data:`NOT_ANSWERED` (Python's ``...``) marks an answer the learner has not written yet; checks report it as
"not answered yet" instead of wrong.
"""
from __future__ import annotations

import dataclasses
import html
from typing import Any, Callable, Iterable, Mapping, Optional

__all__ = ["NOT_ANSWERED", "CheckResult", "EvidenceFailed", "Part", "check", "check_equal", "check_parts", "evidence",
           "is_unanswered"]

#: What a student's answer cell holds before the learner writes anything: ``corr_id = ...``.
NOT_ANSWERED = ...

PASS, FAIL, TODO = "pass", "fail", "todo"
_MARK = {PASS: "✓", FAIL: "✗", TODO: "…"}
_LOOK = {   # border, background, title colour
    PASS: ("#2b8a3e", "#ebfbee", "#2b8a3e"),
    FAIL: ("#e03131", "#fff5f5", "#c92a2a"),
    TODO: ("#868e96", "#f8f9fa", "#495057"),
}


def is_unanswered(answer: Any) -> bool:
    """True while the answer is still the placeholder ``...``."""
    return answer is NOT_ANSWERED


@dataclasses.dataclass(frozen=True)
class Part:
    """One line of a multi-part check: its label, whether it is right, and what to say about it."""

    label: str
    status: str
    note: str = ""


@dataclasses.dataclass(frozen=True)
class CheckResult:
    """The outcome of one exercise check: ✓ (``pass``), ✗ (``fail``) or … (``todo``: not answered yet).

    ``bool(result)`` is True only for a pass. In a notebook it renders as a coloured box; ``repr`` is text.
    """

    title: str
    status: str
    message: str
    hint: str = ""
    parts: tuple = ()

    @property
    def passed(self) -> bool:
        return self.status == PASS

    def __bool__(self) -> bool:
        return self.passed

    # -- text -----------------------------------------------------------------------------------------
    def text(self) -> str:
        lines = [f"{_MARK[self.status]} {self.title}: {self.message}"]
        lines += [f"   {_MARK[p.status]} {p.label}" + (f": {p.note}" if p.note else "") for p in self.parts]
        if self.hint and self.status != PASS:
            lines.append(f"   Hint: {self.hint}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.text()

    def _repr_pretty_(self, p, cycle) -> None:
        p.text(self.text())

    # -- HTML -----------------------------------------------------------------------------------------
    def _repr_html_(self) -> str:
        border, background, colour = _LOOK[self.status]
        e = html.escape
        items = ""
        if self.parts:
            rows = []
            for p in self.parts:
                c = _LOOK[p.status][2]
                note = f' <span style="color:#656d76">— {e(p.note)}</span>' if p.note else ""
                rows.append(f'<li style="list-style:none;margin:1px 0"><b style="color:{c}">{_MARK[p.status]}</b> '
                            f'<code>{e(p.label)}</code>{note}</li>')
            items = f'<ul style="margin:4px 0 0 0;padding:0 0 0 4px">{"".join(rows)}</ul>'
        hint = ""
        if self.hint and self.status != PASS:
            hint = f'<div style="margin-top:4px;color:#495057"><b>Hint:</b> {e(self.hint)}</div>'
        return (f'<div class="kl-check kl-check-{self.status}" style="border-left:4px solid {border};'
                f'background:{background};padding:6px 10px;margin:4px 0;border-radius:4px;color:#1f2328;'
                f'font:13px/1.45 system-ui,-apple-system,&quot;Segoe UI&quot;,Roboto,sans-serif">'
                f'<b style="color:{colour}">{_MARK[self.status]} {e(self.title)}</b>: {e(self.message)}'
                f'{items}{hint}</div>')


def check(title: str, passed: bool, message: str, *, hint: str = "", parts: Iterable[Part] = ()) -> CheckResult:
    """The general form: you decide ``passed`` and what to say."""
    return CheckResult(title, PASS if passed else FAIL, message, hint, tuple(parts))


class EvidenceFailed(AssertionError):
    """A lab's demonstration did not show what its text says: the cell fails, and with it the build and nbval."""


def evidence(title: str, claims: Mapping[str, bool]) -> CheckResult:
    """What a demonstration measured, as one ✓ box with a line per claim, instead of a column of printed
    ``True``: ``evidence("The ISR shrank", {"broker 2 left after replica.lag.time.max.ms": shrink >= lag})``.

    It is a check of the lab itself, not of the learner: when a claim does not hold it raises
    :class:`EvidenceFailed`, listing every claim with ✓ or ✗, so the notebook fails where it went wrong."""
    if not claims:
        raise ValueError("evidence needs at least one claim")
    parts = tuple(Part(claim, PASS if bool(holds) else FAIL) for claim, holds in claims.items())
    held = sum(p.status == PASS for p in parts)
    if held == len(parts):
        return CheckResult(title, PASS, f"all {held} claims hold" if held > 1 else "it holds", parts=parts)
    failed = CheckResult(title, FAIL, f"{len(parts) - held} of {len(parts)} claims do not hold", parts=parts)
    raise EvidenceFailed(failed.text())


def _same(answer: Any, expected: Any) -> bool:
    """Equality that does not let ``True`` pass for ``1`` or ``"7"`` for ``7``."""
    if isinstance(answer, bool) != isinstance(expected, bool):
        return False
    if isinstance(expected, int) and not isinstance(expected, bool):
        return hasattr(answer, "__index__") and not isinstance(answer, bool) and int(answer) == expected
    if isinstance(expected, tuple) and isinstance(answer, (tuple, list)):
        return len(answer) == len(expected) and all(_same(a, b) for a, b in zip(answer, expected))
    return type(answer) is type(expected) and answer == expected


def check_equal(title: str, answer: Any, expected: Any, *, hint: str = "",
                diagnose: Optional[Callable[[Any], Optional[str]]] = None,
                describe: Callable[[Any], str] = repr) -> CheckResult:
    """Compare one answer with the expected value.

    ``diagnose(answer)`` may return a hint aimed at this particular wrong answer (e.g. "that is the value read
    little-endian"); otherwise ``hint`` is shown. The expected value is never printed on a failure.
    """
    if is_unanswered(answer):
        return CheckResult(title, TODO, "not answered yet: replace the ... in the answer cell", hint)
    if _same(answer, expected):
        return CheckResult(title, PASS, f"correct, {describe(answer)}")
    specific = diagnose(answer) if diagnose is not None else None
    return CheckResult(title, FAIL, f"{describe(answer)} is not right", specific or hint)


def check_parts(title: str, answers: Any, expected: Mapping[Any, Any], *, hint: str = "",
                label: Callable[[Any], str] = str,
                diagnose: Optional[Callable[[Any, Any], Optional[str]]] = None) -> CheckResult:
    """Check a dict of answers against ``expected`` key by key (one ✓/✗ line each).

    ``diagnose(key, answer)`` may explain a wrong part; it must not reveal the expected value.
    """
    if is_unanswered(answers):
        return CheckResult(title, TODO, "not answered yet: replace the ... in the answer cell", hint)
    if not isinstance(answers, Mapping):
        return CheckResult(title, FAIL, f"expected a dict, got {type(answers).__name__}", hint)
    parts, right, todo = [], 0, 0
    for key, want in expected.items():
        got = answers.get(key, NOT_ANSWERED)
        if is_unanswered(got):
            todo += 1
            parts.append(Part(label(key), TODO, "not answered yet"))
        elif _same(got, want):
            right += 1
            parts.append(Part(label(key), PASS, f"{got!r}"))
        else:
            note = (diagnose(key, got) if diagnose is not None else None) or f"{got!r} is not right"
            parts.append(Part(label(key), FAIL, note))
    extra = [k for k in answers if k not in expected]
    total = len(expected)
    if right == total and not extra:
        return CheckResult(title, PASS, f"all {total} correct", parts=tuple(parts))
    message = f"{right} of {total} correct" + (f", {todo} not answered yet" if todo else "")
    if extra:
        message += f"; not asked: {', '.join(label(k) for k in extra)}"
    status = TODO if right + todo == total and todo and not extra else FAIL
    return CheckResult(title, status, message, hint, tuple(parts))
