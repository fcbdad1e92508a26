"""The topology picture as plain SVG (conformance.report.html.topology_svg): well-formed, escaped,
deterministic, every node, device, link kind and domain drawn. That a page whose only picture is
the topology never imports matplotlib (what the module exists for) is
tests/cli/test_report_html_imports.py's, in a fresh process."""
from __future__ import annotations

import xml.etree.ElementTree as ET

from conformance.report.html.topology_svg import NodeTopology, hull, topology_svg

SVG = "{http://www.w3.org/2000/svg}"
HOSTILE = '<script>alert("x")</script>&'


def _node(name: str = "node 0") -> NodeTopology:
    return NodeTopology(name, ["0", "1", "2", "accel-7"],
                        [("0", "1", "simlink", 200.0), ("2", "accel-7", "simlink", 200.0), ("0", "2", "host", 25.0),
                         ("1", "gone", "host", 25.0)],
                        [("rack", "r1")], (("island0", ("0", "1")), ("island1", ("2", "accel-7"))))


def test_every_part_is_drawn_in_well_formed_svg() -> None:
    root = ET.fromstring(topology_svg([_node("node 0"), _node("node 1")]))
    assert root.get("role") == "img" and root.get("class") == "chart"
    assert root.get("aria-label", "").startswith("topology:")
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert {"node 0", "node 1", "rack: r1", "island0", "island1", "simlink", "host", "200", "25"} <= set(texts)
    assert "acc…" in texts                                        # long device names are shortened
    assert len(list(root.iter(f"{SVG}circle"))) == 8               # 4 devices on each of 2 nodes
    assert len(list(root.iter(f"{SVG}polygon"))) == 4              # 2 device domains each
    # 3 drawable links a node (the one to an unknown device is left out) + 2 legend swatches
    assert len(list(root.iter(f"{SVG}line"))) == 3 * 2 + 2


def test_strings_from_the_report_are_escaped() -> None:
    node = NodeTopology(HOSTILE, [HOSTILE], [(HOSTILE, HOSTILE, HOSTILE, 1.0)], [(HOSTILE, HOSTILE)],
                        ((HOSTILE, (HOSTILE,)),))
    svg = topology_svg([node])
    assert "<script" not in svg and "&lt;script&gt;" in svg
    root = ET.fromstring(svg)                                      # still well-formed
    assert HOSTILE in [t.text for t in root.iter(f"{SVG}text")]


def test_the_same_nodes_give_the_same_bytes_and_no_devices_is_said() -> None:
    assert topology_svg([_node()]) == topology_svg([_node()])
    empty = ET.fromstring(topology_svg([NodeTopology("cpu node", [], [], [])]))
    assert "no devices reported" in [t.text for t in empty.iter(f"{SVG}text")]
    assert not list(empty.iter(f"{SVG}line"))                      # no links, no legend


def test_hull_encloses_its_points() -> None:
    assert sorted(hull([(0, 0), (2, 0), (1, 1), (2, 2), (0, 2)])) == [(0, 0), (0, 2), (2, 0), (2, 2)]
