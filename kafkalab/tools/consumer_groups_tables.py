"""The tables of ``kafkalab consumer-groups`` (:mod:`.consumer_groups`): rows in, Kafka's text out.

Theory of operation
-------------------
Pure functions, one per table kafka-consumer-groups.sh prints, each reproducing the Java ``printf`` format of
``ConsumerGroupCommand`` (3.9): fixed minimum widths, some columns widened to their longest value, a line break
*before* each row. ``export_csv`` writes the reset plan as ``CsvUtils`` does (what ``--from-file`` reads).

Mirrors the printing half of ``tools/src/main/java/org/apache/kafka/tools/consumer/group/ConsumerGroupCommand.java``.
"""
from __future__ import annotations

__all__ = ["MISSING", "list_table", "offsets_table", "members_table", "state_table", "reset_plan_table",
           "delete_offsets_table", "export_csv"]

MISSING = "-"                                        # Kafka's MISSING_COLUMN_VALUE


def _ljust(value, width: int) -> str:
    return str(value).ljust(width)


def list_table(listings, include_state: bool) -> str:
    """``--list``: ids one a line, or the GROUP/STATE table (``printGroupInfo``)."""
    if not include_state:
        return "".join(f"{g.group_id}\n" for g in listings)
    width = max((max(15, len(g.group_id)) for g in listings), default=15) + 10
    lines = [f"{_ljust('GROUP', width)} {_ljust('STATE', 20)}"]
    lines += [f"{_ljust(g.group_id, width)} {_ljust(g.state or 'Unknown', 20)}" for g in listings]
    return "".join(line + "\n" for line in lines)


def offsets_table(rows) -> str:
    """``printOffsets``: rows of (group, topic, partition, offset, log end, lag, consumer id, host, client id)."""
    widths = [15, 15, 10, 15, 15, 15, 15, 15]
    for r in rows:
        widths[0] = max(widths[0], len(r[0]))
        widths[1] = max(widths[1], len(r[1]))
        widths[6] = max(widths[6], len(r[6]))
        widths[7] = max(widths[7], len(r[7]))
    header = ("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST",
              "CLIENT-ID")
    return "".join("\n" + " ".join([_ljust(c, w) for c, w in zip(r, widths)] + [str(r[8])])
                   for r in (header, *rows))


def members_table(group: str, members, verbose: bool) -> str:
    """``printMembers``: one row per member (GROUP-INSTANCE-ID only when some member has one)."""
    widths = {"group": 15, "id": 15, "instance": 17, "host": 15, "client": 15}
    with_instance = False
    for m in members:
        widths["group"] = max(widths["group"], len(group))
        widths["id"] = max(widths["id"], len(m.member_id))
        widths["instance"] = max(widths["instance"], len(m.group_instance_id or ""))
        widths["host"] = max(widths["host"], len(m.host))
        widths["client"] = max(widths["client"], len(m.client_id))
        with_instance = with_instance or bool(m.group_instance_id)

    def row(cells) -> str:
        g, mid, instance, host, client, n = cells
        parts = [_ljust(g, widths["group"]), _ljust(mid, widths["id"])]
        if with_instance:
            parts.append(_ljust(instance, widths["instance"]))
        parts += [_ljust(host, widths["host"]), _ljust(client, widths["client"]), _ljust(n, 15)]
        return " ".join(parts) + " "
    text = "\n" + row(("GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS"))
    text += ("ASSIGNMENT" if verbose else "") + "\n"
    for m in members:
        text += row((group, m.member_id, m.group_instance_id or "", m.host, m.client_id, len(m.assignment)))
        if verbose:
            text += _assignment(m.assignment)
        text += "\n"
    return text


def _assignment(partitions) -> str:
    """``topic``-less groups of partition numbers, as Kafka prints them: ``(0,1), (2)`` (strings sorted)."""
    if not partitions:
        return MISSING
    by_topic: dict = {}
    for tp in partitions:
        by_topic.setdefault(tp[0], []).append(str(tp[1]))
    return ", ".join(sorted("(" + ",".join(sorted(ps)) + ")" for ps in by_topic.values()))


def state_table(group: str, coordinator: str, strategy: str, state: str, members: int) -> str:
    """``printStates``: Kafka widens the *first* column to the coordinator's text (its own quirk, kept)."""
    width = max(25, len(coordinator))

    def row(cells) -> str:
        return "\n" + " ".join([_ljust(cells[0], width), _ljust(cells[1], 25), _ljust(cells[2], 20),
                                _ljust(cells[3], 15), str(cells[4])])
    return (row(("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"))
            + row((group, coordinator, strategy, state, members)) + "\n")


def reset_plan_table(plan: dict) -> str:
    """``printOffsetsToReset``: ``{group: {TopicPartition: offset}}``, one row a line (as the Scala tool printed
    it; 3.9's Java port drops the rows' line ends)."""
    if not plan:
        return ""
    widths = (30, 30, 10, 15)
    lines = [("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET")]
    lines += [(group, tp[0], tp[1], offset) for group, offsets in plan.items() for tp, offset in offsets.items()]
    return "\n" + "".join(" ".join(_ljust(c, w) for c, w in zip(line, widths)) + "\n" for line in lines)


def delete_offsets_table(statuses) -> str:
    """``deleteOffsets``' table: (topic, partition, status) rows, one a line."""
    widths = (30, 15, 15)
    lines = [("TOPIC", "PARTITION", "STATUS"), *statuses]
    return "\n" + "".join(" ".join(_ljust(c, w) for c, w in zip(line, widths)) + "\n" for line in lines)


def export_csv(plan: dict, single_group: bool) -> str:
    """``exportOffsetsToCsv``: ``topic,partition,offset`` lines for one group, ``group,topic,...`` for several."""
    return "".join((f"{tp[0]},{tp[1]},{offset}\n" if single_group else f"{group},{tp[0]},{tp[1]},{offset}\n")
                   for group, offsets in plan.items() for tp, offset in offsets.items())
