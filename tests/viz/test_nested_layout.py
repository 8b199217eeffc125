"""viz.layout.nested_layout: each open box lays out its own members (TensorBoard's
hierarchical layout), so boxes never overlap and edges leaving a box do not bend its chain."""

from __future__ import annotations

from viz.layout import BOX_LABEL, BOX_PAD, nested_layout

SIZE = (60.0, 26.0)


def extent(at, ids):
    xs = [at[i][0] for i in ids]
    ys = [at[i][1] for i in ids]
    return (min(xs) - SIZE[0] / 2, min(ys) - SIZE[1] / 2,
            max(xs) + SIZE[0] / 2, max(ys) + SIZE[1] / 2)


def test_a_chain_inside_a_box_stays_straight_whatever_leaves_it():
    parents = {"box": "", **{f"box/{i}": "box" for i in range(5)}, "sink": "", "src": ""}
    leaves = [f"box/{i}" for i in range(5)] + ["sink", "src"]
    edges = [(f"box/{i}", f"box/{i + 1}") for i in range(4)]
    edges += [(f"box/{i}", "sink") for i in range(5)] + [("src", "box/0")]
    at = nested_layout(parents, {leaf: SIZE for leaf in leaves}, edges)
    assert len({at[f"box/{i}"][0] for i in range(5)}) == 1          # one column
    ys = [at[f"box/{i}"][1] for i in range(5)]
    assert ys == sorted(ys)                                          # top down
    assert at["src"][1] < ys[0] and at["sink"][1] > ys[-1]           # box between them


def test_sibling_boxes_do_not_overlap_and_hold_their_members():
    parents = {"a": "", "b": "", "a/x": "a", "a/y": "a", "b/x": "b", "b/y": "b", "b/z": "b"}
    leaves = ["a/x", "a/y", "b/x", "b/y", "b/z"]
    at = nested_layout(parents, {leaf: SIZE for leaf in leaves}, [("a/x", "a/y")])
    a = extent(at, ["a/x", "a/y"])
    b = extent(at, ["b/x", "b/y", "b/z"])
    # boxes are their members' extent plus padding (and label room above)
    a_box = (a[0] - BOX_PAD, a[1] - BOX_PAD - BOX_LABEL, a[2] + BOX_PAD, a[3] + BOX_PAD)
    b_box = (b[0] - BOX_PAD, b[1] - BOX_PAD - BOX_LABEL, b[2] + BOX_PAD, b[3] + BOX_PAD)
    apart = a_box[2] <= b_box[0] or b_box[2] <= a_box[0] or \
        a_box[3] <= b_box[1] or b_box[3] <= a_box[1]
    assert apart
