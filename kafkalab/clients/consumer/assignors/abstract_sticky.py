"""The sticky algorithm shared by ``sticky`` and ``cooperative-sticky``: balanced first, then unmoved.

Theory of operation
-------------------
Range and round robin forget everything between rebalances. The sticky assignors remember what each member
owned and aim for two goals, the first one winning when they conflict:

1. **balance** -- partition counts differ by at most one, or, when subscriptions differ, no member with two
   or more partitions fewer than another could take one of that member's partitions;
2. **stickiness** -- as many partitions as possible stay with the member that owned them.

*What each member owned* comes from its subscription (:class:`MemberData`: partitions plus the generation
they were owned in; each concrete assignor says where it reads them). Claims are first reconciled
(:func:`reconcile_ownership`): a partition of a topic nobody subscribes to any more is dropped; if two members
claim the same partition, the one with the higher generation keeps it, and if their generations are equal
neither keeps it (a "zombie" claim; the partition is handed out afresh).

Then one of two builders runs.

**All subscriptions equal** (:func:`assign_constrained`, Kafka's ``ConstrainedAssignmentBuilder``): with ``P``
partitions and ``N`` members every member must end with ``min_quota = P // N`` or ``max_quota`` (one more)
partitions, and exactly ``P % N`` members get ``max_quota``. Members keep owned partitions up to their quota
(lowest partition numbers first), the rest of their claims is released; then the free partitions, in
topic/partition order, are dealt round robin to the members still below ``min_quota``, and finally one each to
members at ``min_quota`` until ``P % N`` members have ``max_quota``. Each partition moves at most once, and the
builder records which ones change owner (*transferring ownership*) for the cooperative assignor.

**Subscriptions differ** (:class:`GeneralAssignment`, Kafka's ``GeneralAssignmentBuilder``): owned partitions
still subscribed stay put; free partitions go, one at a time, to the least loaded member subscribed to their
topic (topics with fewest possible consumers first); then partitions are moved from members that have two or
more than a possible taker to the least loaded taker until balanced, preferring to send a partition back to
its owner from an older generation, and undoing an earlier move of the same topic when one would cancel out.
If moving did not improve the balance score (sum of count differences over all member pairs), the moves are
undone. This builder does not track transfers; the cooperative assignor compares before and after.

Members are visited in ``member.id`` order wherever Java walks a hash map, so results are deterministic.

Mirrors: ``clients/src/main/java/org/apache/kafka/clients/consumer/internals/AbstractStickyAssignor.java``.
"""
from __future__ import annotations

from typing import Mapping, NamedTuple, Optional

from kafkalab.clients.consumer.assignors.abstract import ConsumerPartitionAssignor, partitions_of
from kafkalab.clients.consumer.assignors.protocol import DEFAULT_GENERATION, Subscription, TopicPartition

__all__ = ["MemberData", "AbstractStickyAssignor", "reconcile_ownership", "assign_constrained",
           "GeneralAssignment", "balance_score"]


class MemberData(NamedTuple):
    """What a member owned and in which generation (``None``: generation unknown)."""

    partitions: list
    generation: Optional[int]
    rack_id: Optional[str] = None


class Ownership(NamedTuple):
    owned: dict            # member -> [TopicPartition] it may keep claiming
    contested: set         # partitions claimed by two members of the same generation
    max_generation: int


def reconcile_ownership(member_data: Mapping[str, MemberData], topics) -> Ownership:
    """Resolve who owns what (``allSubscriptionsEqual``'s bookkeeping in Java)."""
    owned: dict = {}
    claimed_by: dict = {}
    contested: set = set()
    max_generation = DEFAULT_GENERATION
    generation_of = {m: (d.generation if d.generation is not None else DEFAULT_GENERATION)
                     for m, d in member_data.items()}
    for member in sorted(member_data):
        generation = generation_of[member]
        max_generation = max(max_generation, generation)
        mine = owned[member] = []
        for tp in member_data[member].partitions:
            tp = TopicPartition(*tp)
            if tp.topic not in topics:
                continue
            other = claimed_by.get(tp)
            if other is None:
                mine.append(tp)
                claimed_by[tp] = member
            elif generation == generation_of[other]:     # zombie claim: nobody keeps it
                contested.add(tp)
                if tp in owned[other]:
                    owned[other].remove(tp)
                claimed_by[tp] = member
            elif generation > generation_of[other]:      # the newer generation wins
                mine.append(tp)
                if tp in owned[other]:
                    owned[other].remove(tp)
                claimed_by[tp] = member
    return Ownership(owned, contested, max_generation)


def balance_score(assignment: Mapping[str, list]) -> int:
    """Sum of ``|count(a) - count(b)|`` over all member pairs; 0 is perfectly balanced."""
    counts = sorted(len(v) for v in assignment.values())
    # for sorted counts, each c_i is subtracted by the i smaller ones and subtracts the n-1-i larger ones
    n = len(counts)
    return sum(c * (2 * i - n + 1) for i, c in enumerate(counts))


# -- all subscriptions equal ------------------------------------------------------------------------------

def assign_constrained(partitions_per_topic: Mapping[str, int], owned: Mapping[str, list],
                       contested: set) -> tuple[dict, dict]:
    """``(assignment, transferring)`` where ``transferring`` maps each partition changing owner to its new one."""
    members = sorted(owned)
    total = sum(partitions_per_topic.values())
    min_quota, expected_at_max = divmod(total, len(members))
    max_quota = min_quota + (1 if expected_at_max else 0)
    at_max = 0                   # members holding max_quota (only counted while expected_at_max > 0)
    assignment: dict = {m: [] for m in members}
    released: dict = {}          # partition -> member that claimed it but must give it up
    under_min: list = []         # members below min_quota
    at_min: list = []            # members at min_quota that may still take one more
    taken: set = set()

    # 1. keep owned partitions, up to the quota
    for member in members:
        mine = sorted((tp for tp in owned[member] if tp not in contested), key=lambda tp: (tp.partition, tp.topic))
        if len(mine) < min_quota:
            keep = len(mine)
            under_min.append(member)
        elif len(mine) >= max_quota and at_max < expected_at_max:
            keep = max_quota
            at_max += 1
            if at_max == expected_at_max:
                at_min.clear()
        else:
            keep = min_quota
            if at_max < expected_at_max:
                at_min.append(member)
        assignment[member].extend(mine[:keep])
        taken.update(mine[:keep])
        for tp in mine[keep:]:
            released[tp] = member

    transferring: dict = {}

    def give(tp: TopicPartition, member: str) -> int:
        assignment[member].append(tp)
        if (tp in released and released[tp] != member) or tp in contested:
            transferring[tp] = member
        return len(assignment[member])

    # 2. deal the free partitions: round robin over members below min_quota, then one each to members at it
    free = [tp for t in sorted(partitions_per_topic) for tp in partitions_of(t, partitions_per_topic[t])
            if tp not in taken]
    under_min.sort()
    at_min.sort()
    cursor = 0
    for tp in free:
        from_under = True
        if cursor >= len(under_min):
            if not under_min and not at_min:
                raise RuntimeError(f"sticky: no member can take {tp} (quota bookkeeping is broken)")
            if not under_min:
                member, from_under = at_min.pop(0), False
            else:
                cursor = 0
        if from_under:
            member = under_min[cursor]
        count = give(tp, member)
        if from_under and count == min_quota:
            under_min.pop(cursor)            # the cursor now points at the next member
            at_min.append(member)
        elif from_under:
            cursor += 1
        if count == max_quota and count != min_quota:
            at_max += 1

    if under_min and (at_max != expected_at_max or any(len(assignment[m]) != min_quota for m in under_min)):
        raise RuntimeError(f"sticky: members {under_min} left below their quota")
    return assignment, transferring


# -- subscriptions differ ---------------------------------------------------------------------------------

class _Move(NamedTuple):
    source: str        # owner when balancing started
    target: str        # current owner


class GeneralAssignment:
    """The general builder; :meth:`build` returns ``{member: [TopicPartition]}``."""

    def __init__(self, partitions_per_topic: Mapping[str, int], topics_of: Mapping[str, set],
                 owned: Mapping[str, list], previous: Mapping[TopicPartition, tuple]):
        self.counts = dict(partitions_per_topic)
        self.topics_of = {m: sorted(t for t in topics_of[m] if t in self.counts) for m in sorted(topics_of)}
        self.takers = {t: [m for m in self.topics_of if t in self.topics_of[m]] for t in self.counts}
        self.previous = previous              # partition -> (member, generation) from an older generation
        self.current: dict = {}
        self.owner: dict = {}
        self.moves: dict = {}
        self.revocation_required = False
        for member in self.topics_of:
            kept = self.current[member] = []
            for tp in owned.get(member, ()):
                if tp.topic not in self.counts:
                    continue
                if tp.topic not in self.topics_of[member]:
                    self.revocation_required = True     # unsubscribed: must be taken away
                    continue
                kept.append(tp)
                self.owner[tp] = member
        ordered_topics = sorted(self.counts, key=lambda t: (len(self.takers[t]), t))
        self.all_partitions = [tp for t in ordered_topics for tp in partitions_of(t, self.counts[t])]

    # -- helpers --
    def _least_loaded(self, topic: str) -> Optional[str]:
        takers = [m for m in self.takers[topic] if m in self.current]
        return min(takers, key=lambda m: (len(self.current[m]), m)) if takers else None

    def _max_size(self, member: str) -> int:
        return sum(self.counts[t] for t in self.topics_of[member])

    def _can_take_part(self, member: str) -> bool:
        if len(self.current[member]) < self._max_size(member):
            return True
        return any(len(self.takers[tp.topic]) >= 2 for tp in self.current[member])

    def _is_balanced(self) -> bool:
        sizes = {m: len(ps) for m, ps in self.current.items()}
        if not sizes or min(sizes.values()) >= max(sizes.values()) - 1:
            return True
        for member in sorted(sizes, key=lambda m: (sizes[m], m)):
            if sizes[member] == self._max_size(member):
                continue
            mine = set(self.current[member])
            for topic in self.topics_of[member]:
                for tp in partitions_of(topic, self.counts[topic]):
                    other = self.owner.get(tp)
                    if tp not in mine and other in sizes and sizes[member] + 1 < sizes[other]:
                        return False
        return True

    def _move(self, tp: TopicPartition, target: str) -> None:
        old = self.owner[tp]
        # prefer undoing an earlier move of this topic from target to old: same balance, fewer movements
        undo = sorted(p for p, mv in self.moves.items() if p.topic == tp.topic and mv == (target, old))
        if undo:
            tp = undo[0]
        record = self.moves.pop(tp, None)
        source = record.source if record else old
        if source != target:
            self.moves[tp] = _Move(source, target)
        self.current[old].remove(tp)
        self.current[target].append(tp)
        self.owner[tp] = target

    def _reassign(self, partitions: list) -> bool:
        performed = False
        modified = True
        while modified:
            modified = False
            for tp in partitions:
                if self._is_balanced():
                    break
                member = self.owner.get(tp)
                if member not in self.current:
                    continue
                load = len(self.current[member])
                back_to = self.previous.get(tp, (None,))[0]
                if (back_to in self.current and tp.topic in self.topics_of[back_to]
                        and load > len(self.current[back_to]) + 1):
                    self._move(tp, back_to)
                    performed = modified = True
                    continue
                if any(o in self.current and load > len(self.current[o]) + 1 for o in self.takers[tp.topic]):
                    self._move(tp, self._least_loaded(tp.topic))
                    performed = modified = True
        return performed

    def build(self) -> dict:
        initializing = all(not ps for ps in self.current.values())
        free = [tp for tp in self.all_partitions if tp not in self.owner]
        for tp in free:
            member = self._least_loaded(tp.topic)
            if member is not None:
                self.current[member].append(tp)
                self.owner[tp] = member

        # only topics with two or more possible consumers, and members that could change, take part
        movable = [tp for tp in self.all_partitions if len(self.takers[tp.topic]) >= 2]
        free = [tp for tp in free if len(self.takers[tp.topic]) >= 2]
        fixed = {m: self.current.pop(m) for m in list(self.current) if not self._can_take_part(m)}

        before = {m: list(ps) for m, ps in self.current.items()}
        owner_before = dict(self.owner)
        if not self.revocation_required:
            self._reassign(free)
        performed = self._reassign(movable)
        if not initializing and performed and balance_score(self.current) >= balance_score(before):
            self.current, self.owner = before, owner_before
        self.current.update(fixed)
        return {m: self.current[m] for m in sorted(self.current)}


# -- the assignor base --------------------------------------------------------------------------------------

class AbstractStickyAssignor(ConsumerPartitionAssignor):
    """Sticky assignment; subclasses say where a member's previous partitions come from (:meth:`member_data`)."""

    def member_data(self, subscription: Subscription) -> MemberData:
        raise NotImplementedError

    def assign_partitions(self, partitions_per_topic: Mapping[str, int],
                          subscriptions: Mapping[str, Subscription]) -> dict:
        assignment, _ = self.assign_with_transfers(partitions_per_topic, subscriptions)
        return assignment

    def assign_with_transfers(self, partitions_per_topic: Mapping[str, int],
                              subscriptions: Mapping[str, Subscription]) -> tuple[dict, Optional[dict]]:
        """``(assignment, transferring)``; ``transferring`` is None when the general builder ran."""
        if not subscriptions:
            return {}, {}
        data = {m: self.member_data(s) for m, s in subscriptions.items()}
        ownership = reconcile_ownership(data, partitions_per_topic)
        topic_sets = {m: set(s.topics) for m, s in subscriptions.items()}
        if all(ts == next(iter(topic_sets.values())) for ts in topic_sets.values()):
            return assign_constrained(partitions_per_topic, ownership.owned, ownership.contested)
        previous = self._older_generations(data, ownership.max_generation)
        builder = GeneralAssignment(partitions_per_topic, topic_sets, ownership.owned, previous)
        return builder.build(), None

    @staticmethod
    def _older_generations(data: Mapping[str, MemberData], max_generation: int) -> dict:
        """partition -> (member, generation): the latest owner among members behind ``max_generation``."""
        previous: dict = {}
        for member in sorted(data):
            d = data[member]
            if d.generation is not None and d.generation < max_generation:
                generation = d.generation
            elif d.generation is None and max_generation > DEFAULT_GENERATION:
                generation = DEFAULT_GENERATION
            else:
                continue
            for tp in d.partitions:
                tp = TopicPartition(*tp)
                if tp not in previous or generation > previous[tp][1]:
                    previous[tp] = (member, generation)
        return previous
