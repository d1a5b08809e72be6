"""Down-sampled train sizes, as mlr3resampling's ResamplingSameOtherSizesCV.

Comparing same/other/all at their full sizes mixes two effects: *other* and *all* often have
more rows. Down-sampling every train set of a test subset and fold to the size of the smallest
one (and to that size × ratio, ratio², …) separates "more data" from "similar data".
Sizes count groups (rows when there are no groups) nominally, as mlr3resampling does; whole
groups are kept and the label proportions of the train set are kept.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..hashing import seeded_hash

FULL = "full"


def size_labels(sizes: int, ratio: float) -> list[str]:
    """Coordinate labels of the train_size dim: full, smallest, smallest*ratio, …"""
    return [FULL, "smallest"] + [f"smallest*{ratio**i:g}" for i in range(1, sizes + 1)]


def nominal_groups(subset_groups: pd.Series, n_folds: int) -> pd.DataFrame:
    """Train-set sizes in groups per test subset, as mlr3resampling counts them.

    same = ⌊G_σ (K−1)/K⌋ for a subset with G_σ groups, all = Σ same, other = all − same: the
    same for every fold, so a size label means one number of groups per test subset.
    """
    k = n_folds
    same = (subset_groups.astype(np.int64) * (k - 1)) // k
    return pd.DataFrame({"same": same, "other": same.sum() - same, "all": same.sum()})


def downsample(
    train: pd.DataFrame,
    n_groups: int,
    *,
    group: str | None,
    label: str | None,
    seed: int,
    sample: int,
    shares: pd.Series | None = None,
) -> pd.DataFrame:
    """Keep ``n_groups`` whole groups (rows without groups) of ``train``, label shares kept.

    Groups are drawn in the order of a seeded hash of the group value (the row's position
    without groups), so the same seed and sample give the same rows on any worker. ``shares``
    (units per label value) gives the proportions to keep when ``train`` is itself a sample of
    a larger set; default: those of ``train``.
    """
    keys = (
        pd.util.hash_array(train[group].to_numpy())
        if group is not None
        else np.arange(len(train), dtype=np.uint64)
    )
    units = pd.DataFrame(
        {
            "unit": train[group].to_numpy() if group is not None else np.arange(len(train)),
            "label": train[label].to_numpy() if label is not None else 0,
            "rank": seeded_hash(seed, np.uint64(sample), np.uint64(n_groups), keys),
        }
    ).drop_duplicates("unit")
    if shares is None:
        shares = units["label"].value_counts(sort=False)
    quota = largest_remainder(shares.to_numpy(), n_groups)
    chosen = []
    for value, q in zip(shares.index, quota, strict=True):
        pool = units[units["label"] == value].sort_values("rank")
        chosen.append(pool["unit"].to_numpy()[:q])
    keep = np.concatenate(chosen)
    if group is not None:
        return train.loc[train[group].isin(keep).to_numpy()]
    return train.iloc[np.sort(keep)]


def largest_remainder(counts: np.ndarray, total: int) -> np.ndarray:
    """Integer quotas proportional to ``counts`` summing to ``total`` (each at most its count)."""
    exact = counts * total / counts.sum()
    quota = np.floor(exact).astype(int)
    order = np.argsort(-(exact - quota), kind="stable")
    quota[order[: total - quota.sum()]] += 1
    return np.minimum(quota, counts)
