"""Lab 00's helpers and exercise checks: the right answer passes, wrong answers fail with a useful hint, ``...``
is "not answered yet"; the pictures are deterministic. No broker: the notebook runs the rest under nbval."""
from __future__ import annotations

from pathlib import Path

from kafkalab.labs import lab00
from kafkalab.viz.textfit import check_svg, svgs_in

VALUES = ["a", "b", "c", "d", "e", "f", "g", "h"]
SEGMENTS = [(0, 400), (12, 400), (25, 400), (37, 150)]
ASSIGNMENT = {0: [0, 1, 2], 1: [1, 2, 3], 2: [2, 3], 3: [3, 0]}
LEADERS = {0: 1, 1: 1, 2: 2, 3: 3}


def test_reread_follows_the_log_start_and_the_reset_policy():
    assert lab00.reread(VALUES, 3, 5) == ["f", "g", "h"]            # a valid position: from there
    assert lab00.reread(VALUES, 3, 1) == ["d", "e", "f", "g", "h"]  # below the log start: reset to it
    assert lab00.reread(VALUES, 3, 8) == []                         # the log end: nothing yet
    assert lab00.reread(VALUES, 3, 9) == ["d", "e", "f", "g", "h"]  # past the end: out of range, reset too
    assert lab00.check_reread(["d", "e", "f", "g", "h"], VALUES, 3, 1).passed
    assert lab00.check_reread(("d", "e", "f", "g", "h"), VALUES, 3, 1).passed
    deleted = lab00.check_reread(VALUES[1:], VALUES, 3, 1)
    assert not deleted.passed and "log start offset (3)" in deleted.text()
    assert "in offset order" in lab00.check_reread(["h", "g", "f", "e", "d"], VALUES, 3, 1).text()
    assert "list of values" in lab00.check_reread("defgh", VALUES, 3, 1).text()
    assert lab00.check_reread(..., VALUES, 3, 1).status == "todo"


def test_retention_by_size_keeps_at_least_retention_bytes():
    assert lab00.log_start_after_retention(SEGMENTS, 700) == 12      # 1350 -> 950; 550 would be too few
    assert lab00.log_start_after_retention(SEGMENTS, 150) == 37      # everything but the active segment
    assert lab00.log_start_after_retention(SEGMENTS, 5000) == 0      # under the limit: nothing goes
    assert lab00.check_log_start(12, SEGMENTS, 700).passed
    too_far = lab00.check_log_start(25, SEGMENTS, 700)                # "until under retention.bytes": the trap
    assert not too_far.passed and "deletes too much" in too_far.text()
    assert "whole segments" in lab00.check_log_start(20, SEGMENTS, 700).text()
    assert "keep deleting" in lab00.check_log_start(0, SEGMENTS, 150).text()
    assert "an int" in lab00.check_log_start("12", SEGMENTS, 700).text()
    assert lab00.check_log_start(..., SEGMENTS, 700).status == "todo"


def test_leaders_after_a_failure():
    assert lab00.leaders_after(ASSIGNMENT, LEADERS, [1, 3]) == {0: 0, 1: 2, 2: 2, 3: 0}
    assert lab00.leaders_after({0: [2, 3]}, {0: 2}, [2, 3]) == {0: None}
    assert lab00.check_leaders_after({0: 0, 1: 2, 2: 2, 3: 0}, ASSIGNMENT, LEADERS, [1, 3]).passed
    wrong = lab00.check_leaders_after({0: 2, 1: 3, 2: None, 3: 2}, ASSIGNMENT, LEADERS, [1, 3]).text()
    assert "first live replica" in wrong                              # 0: 2 is alive but not first
    assert "broker 3 is dead" in wrong                                # 1: 3
    assert "still alive" in wrong                                     # 2: its leader lived
    assert "holds no replica" in wrong                                # 3: 2 is not a replica of partition 3
    offline = lab00.check_leaders_after({0: 3}, {0: [2, 3]}, {0: 2}, [2, 3]).text()
    assert "offline (None)" in offline
    assert lab00.check_leaders_after(..., ASSIGNMENT, LEADERS, [1, 3]).status == "todo"


def test_placement_picture_marks_leaders_followers_and_the_dead():
    states = {("orders", 0): {"leader": 1, "isr": [1, 2], "replicas": [0, 1, 2]},
              ("orders", 1): {"leader": 2, "isr": [2, 1], "replicas": [1, 2, 0]}}
    picture = lab00.PlacementPicture(states, [0, 1, 2], dead=[0], controller=1, title="after")
    assert picture.roles() == {0: [("orders-0", "out of sync"), ("orders-1", "out of sync")],
                               1: [("orders-0", "leader"), ("orders-1", "follower")],
                               2: [("orders-0", "follower"), ("orders-1", "leader")]}
    page = picture._repr_html_()
    assert page == lab00.PlacementPicture(states, [0, 1, 2], dead=[0], controller=1, title="after")._repr_html_()
    assert "broker 0 · killed" in page and "broker 1 · controller" in page and page.count("offline") == 2
    assert "<script" not in page


def test_placement_picture_is_one_svg_whose_labels_fit():
    """The notebook's output is one <svg> (so scripts/export_figures.py can give it to deck 00), every label
    inside its box."""
    states = {("orders", p): {"leader": p, "isr": [p, (p + 1) % 3], "replicas": [p, (p + 1) % 3, (p + 2) % 3]}
              for p in range(3)}
    states[("a-topic-with-a-long-name", 0)] = {"leader": 1, "isr": [1], "replicas": [1, 2]}
    page = lab00.PlacementPicture(states, [0, 1, 2], controller=0, title="before")._repr_html_()
    assert len(svgs_in(page)) == 1
    svg = svgs_in(page)[0]
    assert check_svg(svg) == []
    assert svg.count(">leader<") == 4 and svg.count(">not in ISR<") == 4 and "killed" not in svg


def test_offset_strip_greys_what_retention_deleted():
    strip = lab00.OffsetStrip([0, 3, 6], 3, 8, title="t-0")
    svg = strip._repr_svg_()
    assert svg == lab00.OffsetStrip([0, 3, 6], 3, 8, title="t-0")._repr_svg_()
    assert svg.count('fill="#e9ecef"') == 3 and svg.count('fill="#e7f5ff"') == 5     # offsets 0-2 deleted
    assert "log start offset 3" in svg and "log end offset 8" in svg


def test_course_map_names_every_lab_of_the_curriculum_and_links_those_present(tmp_path):
    labs = Path(__file__).resolve().parents[2] / "labs"
    names = [name for name, _, _ in lab00.COURSE_MAP]
    assert names == sorted(names) and names[0] == "00_tour" and len(names) == 16
    for notebook in labs.glob("[0-9][0-9]_*.ipynb"):   # every notebook is on the map, and in the labs README
        assert notebook.stem in names
        assert f"`{notebook.name}`" in (labs / "README.md").read_text()
    (tmp_path / "01_the_wire.ipynb").write_text("{}")
    page = lab00.course_map(tmp_path)._repr_html_()
    assert '<a href="01_the_wire.ipynb">' in page and "02_api_versions (not in this copy)" in page
    assert repr(lab00.course_map(tmp_path)).splitlines()[0].startswith("00_tour")


def _fake_cluster(logs: dict, running=(0, 1, 2)):
    """Brokers as replicas_settled sees them: ``logs`` is ``{broker: (log end offset, high watermark)}`` of the
    one partition of topic ``t``."""
    from types import SimpleNamespace as NS

    def broker(b):
        log = NS(log_end_offset=logs[b][0], high_watermark=logs[b][1])
        return NS(is_running=b in running,
                  metadata_cache=NS(partitions=lambda topic: [NS(partition=0)] if topic == "t" else []),
                  replica_manager=NS(get_partition=lambda topic, p: NS(log=log) if topic == "t" else None))
    return NS(brokers={b: broker(b) for b in logs})


def test_replicas_settled_waits_for_every_running_replica_to_reach_the_leaders_end_and_know_it_is_committed():
    assert lab00.replicas_settled(_fake_cluster({0: (9, 9), 1: (9, 9), 2: (9, 9)}), ["t"])
    assert not lab00.replicas_settled(_fake_cluster({0: (9, 9), 1: (9, 9), 2: (8, 8)}), ["t"])   # behind
    assert not lab00.replicas_settled(_fake_cluster({0: (9, 9), 1: (9, 8), 2: (9, 9)}), ["t"])   # HW not yet known
    assert not lab00.replicas_settled(_fake_cluster({0: (9, 7), 1: (9, 7), 2: (9, 7)}), ["t"])   # not committed
    assert lab00.replicas_settled(_fake_cluster({0: (9, 9), 1: (9, 9), 2: (3, 3)}, running=(0, 1)), ["t"])
    assert not lab00.replicas_settled(_fake_cluster({0: (9, 9)}, running=()), ["t"])
