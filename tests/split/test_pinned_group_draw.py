"""Where a group draw places each group, pinned (issue 40, item 6).

``soak_dask.split.shares.draw_groups``: each stratum's groups in a seeded random order, each
group placed at the middle of its rows' span within its stratum,

    place = (rows of the groups before it in its stratum + n / 2) / N_s,

all groups then taken in order of place (the seeded order on a tie) and the prefix whose rows
come nearest share · N drawn (the shorter prefix on a tie).
"""

from __future__ import annotations

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

from soak_dask.hashing import salt, seeded_hash
from soak_dask.split.shares import add_draws, draw_groups

# Stratum 0: four groups of 1 row, at 1/8, 3/8, 5/8, 7/8 of its span, whatever their order;
# stratum 1: two groups of 4 rows, at 2/8 and 6/8. Taken in place order: 0, 1, 0, 0, 1, 0,
# rows 1, 4, 1, 1, 4, 1: prefixes of 0, 1, 5, 6, 7, 11, 12 of the N = 12 rows.
EVEN = pd.DataFrame(
    {
        "group": ["a0", "a1", "a2", "a3", "b0", "b1"],
        "stratum": [0, 0, 0, 0, 1, 1],
        "n": [1, 1, 1, 1, 4, 4],
    }
)


@pytest.mark.parametrize(
    ("share", "per_stratum"),
    [
        (0.1, (1, 0)),  # 1.2 rows: nearest prefix 1
        (0.3, (1, 1)),  # 3.6: nearest 5
        (0.4, (1, 1)),  # 4.8: 5
        (0.5, (2, 1)),  # 6: 6
        (0.6, (3, 1)),  # 7.2: 7
        (0.8, (3, 2)),  # 9.6: 11
        (0.95, (3, 2)),  # 11.4: 11 (12 is 0.6 away)
        (1 / 6, (1, 0)),  # 2: 1 is 1 away, 5 is 3
        (0.25, (1, 0)),  # 3: 1 and 5 both 2 away: the shorter prefix
        (0.75, (3, 1)),  # 9: 7 and 11 both 2 away: the shorter prefix
    ],
)
def test_groups_of_equal_size_by_hand(share, per_stratum):
    """Hand-placed: each stratum's count of drawn groups, the same for every seed and draw
    (the seeded order only says which groups of a stratum, not how many)."""
    for seed in range(1, 6):
        for draw in (1, 2):
            drawn = draw_groups(EVEN, share, seed, draw, "pinned")
            strata = EVEN.set_index("group")["stratum"]
            counts = strata[drawn[drawn].index].value_counts()
            assert (counts.get(0, 0), counts.get(1, 0)) == per_stratum, (seed, draw)


def _by_hand(groups: pd.DataFrame, share: float, seed: int, draw: int, purpose: str) -> set:
    """The rule, one group at a time: the seeded order (the hash of the group value, keyed by
    seed, purpose and draw) is its input; places, order and prefix as the module says."""
    hashed = pd.util.hash_array(groups["group"].to_numpy())
    keys = seeded_hash(seed, salt(purpose), np.uint64(draw), hashed)
    tie = dict(zip(groups["group"], keys, strict=True))
    placed = []
    for _, stratum in groups.groupby("stratum"):
        before, total = 0, stratum["n"].sum()
        for g, n in sorted(
            zip(stratum["group"], stratum["n"], strict=True), key=lambda gn: tie[gn[0]]
        ):
            placed.append(((before + n / 2) / total, tie[g], g, n))
            before += n
    placed.sort()
    target = share * groups["n"].sum()
    prefix, best, best_gap = 0, 0, abs(target)
    for i, (*_, n) in enumerate(placed, start=1):
        prefix += n
        if abs(prefix - target) < best_gap:
            best, best_gap = i, abs(prefix - target)
    return {g for _, _, g, _ in placed[:best]}


UNEVEN = pd.DataFrame(
    {
        "group": ["p", "q", "r", "s", "t", "u", "v", "w"],
        "stratum": [0, 0, 0, 1, 1, 1, 1, 2],
        "n": [1, 5, 2, 3, 3, 8, 1, 6],
    }
)


# Places that tie across strata (1/4, 1/2, 3/4): the seeded order decides between them.
TIED = pd.DataFrame(
    {
        "group": ["h", "i", "j", "k", "l", "m"],
        "stratum": [0, 1, 2, 2, 3, 3],
        "n": [4, 2, 3, 3, 1, 1],
    }
)


@pytest.mark.parametrize("groups", [UNEVEN, TIED], ids=["uneven", "tied"])
@pytest.mark.parametrize("share", [0.15, 0.3, 0.45, 0.5, 0.62, 0.8])
def test_groups_against_the_rule(groups, share):
    for seed in range(1, 9):
        for draw in (1, 3):
            drawn = draw_groups(groups, share, seed, draw, "pinned")
            assert set(drawn[drawn].index) == _by_hand(groups, share, seed, draw, "pinned")


def test_one_seeded_case_spelled_out():
    """Seed 1, draw 1: the seeded orders are p, q, r in stratum 0 (8 rows) and u, s, t, v in
    stratum 1 (15 rows). Places: p 0.5/8, q 3.5/8, r 7/8; u 4/15, s 9.5/15, t 12.5/15,
    v 14.5/15; w 3/6. In place order: p (1 row), u (8), q (5), w (6), s (3), t (3), r (2),
    v (1): prefixes 1, 9, 14, 20, ... of N = 29. Share 0.3: 8.7 rows, nearest 9: p and u;
    share 0.45: 13.05, nearest 14: p, u and q."""
    hashed = pd.util.hash_array(UNEVEN["group"].to_numpy())
    tie = pd.Series(seeded_hash(1, salt("pinned"), np.uint64(1), hashed), index=UNEVEN["group"])
    assert tie[["p", "q", "r"]].sort_values().index.tolist() == ["p", "q", "r"]
    assert tie[["s", "t", "u", "v"]].sort_values().index.tolist() == ["u", "s", "t", "v"]
    for share, expected in ((0.3, ["p", "u"]), (0.45, ["p", "q", "u"])):
        drawn = draw_groups(UNEVEN, share, 1, 1, "pinned")
        assert drawn[drawn].index.tolist() == expected


def test_rows_follow_their_group_through_add_draws():
    """The groups drawn, mapped onto their rows partition by partition (whole groups), and the
    share of rows drawn."""
    sizes = UNEVEN.set_index("group")["n"]
    label = UNEVEN.set_index("group")["stratum"]
    g = np.repeat(sizes.index.to_numpy(), sizes.to_numpy())
    df = pd.DataFrame({"g": g, "label": label[g].to_numpy(), "x": np.arange(len(g))})
    data = dd.from_pandas(df.sample(frac=1, random_state=0), npartitions=3)
    out, used = add_draws(data, 0.45, 7, names=["d"], keys=["label"], group="g",
                          purpose="pinned", option="share")  # fmt: skip
    rows = out.compute()
    expected = _by_hand(UNEVEN, 0.45, 7, 1, "pinned")
    np.testing.assert_array_equal(rows["d"].to_numpy(), rows["g"].isin(expected).to_numpy())
    assert used[0] == pytest.approx(sizes[list(expected)].sum() / sizes.sum(), rel=1e-12)
