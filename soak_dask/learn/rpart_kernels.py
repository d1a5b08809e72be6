"""Compiled kernels of :mod:`soak_dask.learn.pruned_tree`: rpart's split search, node summaries
and presorted partitioning.

Each feature is sorted once per fit (as rpart's ``rp.sorts``); a node owns the range
``[n1, n2)`` of every feature's sorted row indices and values, and splitting a node partitions
each range stably into the rows of its first son and those of its second, so the sons' ranges
stay sorted and nothing is sorted again. The arithmetic follows rpart's C sources operation for
operation (``gini.c``, ``anova.c``, ``ginidev``, ``anovass``, ``bsplit.c``), in the same order,
so that the sums round as rpart's do. ``LEFT`` (-1) and ``RIGHT`` (1) are rpart's directions:
the rows with ``x < split point`` go to the son ``direction`` names.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = [
    "LEFT",
    "RIGHT",
    "anova_node",
    "anova_splits",
    "gini_node",
    "gini_splits",
    "partition_node",
    "presort",
]

LEFT = -1
RIGHT = 1


def presort(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row indices of each feature in increasing order, and the values in that order: two
    ``(n_features, n_rows)`` arrays, the only sort of a fit."""
    columns = np.ascontiguousarray(X.T)
    order = np.argsort(columns, axis=1).astype(np.intp, copy=False)
    values, tied = _gather(columns, order)
    # Tied values are ordered by row (a stable sort), so that sums over rows in a feature's
    # order round alike on every machine; without ties the order is unique and the faster
    # sort already gives it.
    for f in np.flatnonzero(tied):
        order[f] = np.argsort(columns[f], kind="stable")
        values[f] = columns[f, order[f]]
    return order, values


@njit(cache=True, nogil=True)
def _gather(columns, order):  # pragma: no cover (compiled)
    """Each feature's values in its sorted order, and whether it has tied values."""
    values = np.empty_like(columns)
    tied = np.zeros(columns.shape[0], np.bool_)
    for f in range(columns.shape[0]):
        for i in range(columns.shape[1]):
            values[f, i] = columns[f, order[f, i]]
            if i > 0 and values[f, i] == values[f, i - 1]:
                tied[f] = True
    return values, tied


@njit(cache=True, nogil=True)
def _candidates(xs, order, f, n1, n2, w, all_positive, xt, rows):  # pragma: no cover
    """bsplit.c: feature ``f``'s values and rows of positive weight in the node, in order
    (views of the sorted arrays when every weight is positive)."""
    if all_positive:
        return xs[f, n1:n2], order[f, n1:n2]
    k = 0
    for i in range(n1, n2):
        r = order[f, i]
        if w[r] > 0:
            xt[k] = xs[f, i]
            rows[k] = r
            k += 1
    return xt[:k], rows[:k]


@njit(cache=True, nogil=True)
def _gini_scan(xt, rows, y, w, aprior, edge, left, right):  # pragma: no cover (compiled)
    """gini.c's scan of one feature: (improvement, split point, direction)."""
    n_classes = left.shape[0]
    k = xt.shape[0]
    left[:] = 0.0
    right[:] = 0.0
    lwt = 0.0
    rwt = 0.0
    rtot = 0
    ltot = 0
    for i in range(k):
        j = y[rows[i]]
        rwt += aprior[j] * w[rows[i]]
        right[j] += w[rows[i]]
        rtot += 1
    total_ss = 0.0
    for c in range(n_classes):
        p = aprior[c] * right[c] / rwt
        total_ss += rwt * (p * (1.0 - p))
    best = total_ss
    where = 0
    dirn = LEFT
    i = 0
    while rtot > edge:
        r = rows[i]
        j = y[r]
        rwt -= aprior[j] * w[r]
        lwt += aprior[j] * w[r]
        rtot -= 1
        ltot += 1
        right[j] -= w[r]
        left[j] += w[r]
        if ltot >= edge and xt[i + 1] != xt[i]:
            temp = 0.0
            lmean = 0.0
            rmean = 0.0
            for c in range(n_classes):
                p = aprior[c] * left[c] / lwt
                temp += lwt * (p * (1.0 - p))
                lmean += p * c
                p = aprior[c] * right[c] / rwt
                temp += rwt * (p * (1.0 - p))
                rmean += p * c
            if temp < best:
                best = temp
                where = i
                dirn = LEFT if lmean < rmean else RIGHT
        i += 1
    return total_ss - best, (xt[where] + xt[where + 1]) / 2, dirn


@njit(cache=True, nogil=True)
def gini_splits(
    xs, order, y, w, all_positive, aprior, n_classes, n1, n2, edge, improve, spoint, direction
):  # pragma: no cover (compiled)
    """gini.c for every feature of the node ``[n1, n2)``: the improvement of the best split
    point (0 where there is none), the point (midway between the two adjacent distinct values)
    and the direction of the rows below it. ``edge`` is minbucket, counted in rows."""
    xt = np.empty(0 if all_positive else n2 - n1)
    rows = np.empty(0 if all_positive else n2 - n1, np.intp)
    left = np.empty(n_classes)
    right = np.empty(n_classes)
    for f in range(xs.shape[0]):
        improve[f] = 0.0
        xv, rv = _candidates(xs, order, f, n1, n2, w, all_positive, xt, rows)
        if xv.shape[0] == 0 or xv[0] == xv[-1]:
            continue  # no place to split
        gain, point, dirn = _gini_scan(xv, rv, y, w, aprior, edge, left, right)
        improve[f] = gain
        if gain > 0:
            direction[f] = dirn
            spoint[f] = point


@njit(cache=True, nogil=True)
def _anova_scan(xt, rows, y, w, edge):  # pragma: no cover (compiled)
    """anova.c's scan of one feature: (best, split point, direction); ``best`` is the drop
    in the sum of squares."""
    k = xt.shape[0]
    right_wt = 0.0
    right_n = k
    right_sum = 0.0
    for i in range(k):
        right_sum += y[rows[i]] * w[rows[i]]
        right_wt += w[rows[i]]
    grandmean = right_sum / right_wt
    left_sum = 0.0
    left_wt = 0.0
    left_n = 0
    right_sum = 0.0
    best = 0.0
    where = 0
    dirn = LEFT
    i = 0
    while right_n > edge:
        r = rows[i]
        left_wt += w[r]
        right_wt -= w[r]
        left_n += 1
        right_n -= 1
        temp = (y[r] - grandmean) * w[r]
        left_sum += temp
        right_sum -= temp
        if xt[i + 1] != xt[i] and left_n >= edge:
            temp = left_sum * left_sum / left_wt + right_sum * right_sum / right_wt
            if temp > best:
                best = temp
                where = i
                dirn = LEFT if left_sum < right_sum else RIGHT
        i += 1
    return best, (xt[where] + xt[where + 1]) / 2, dirn


@njit(cache=True, nogil=True)
def anova_splits(
    xs, order, y, w, all_positive, my_risk, n1, n2, edge, improve, spoint, direction
):  # pragma: no cover (compiled)
    """anova.c for every feature of the node: the improvement (the drop in the sum of
    squares, divided by the node's, ``my_risk``), split point and direction."""
    xt = np.empty(0 if all_positive else n2 - n1)
    rows = np.empty(0 if all_positive else n2 - n1, np.intp)
    for f in range(xs.shape[0]):
        improve[f] = 0.0
        xv, rv = _candidates(xs, order, f, n1, n2, w, all_positive, xt, rows)
        if xv.shape[0] == 0 or xv[0] == xv[-1]:
            continue
        best, point, dirn = _anova_scan(xv, rv, y, w, edge)
        improve[f] = best / my_risk
        if best > 0:
            direction[f] = dirn
            spoint[f] = point


@njit(cache=True, nogil=True)
def gini_node(rows, y, w, prior, n_classes):  # pragma: no cover (compiled)
    """ginidev: the node's weighted class totals, its predicted class (the least expected
    loss; the first class on ties) and its risk (that loss: misclassified weight × prior)."""
    freq = np.zeros(n_classes)
    for i in range(rows.shape[0]):
        freq[y[rows[i]]] += w[rows[i]]
    best = 0
    dev = 0.0
    for i in range(n_classes):  # i: the predicted class
        temp = 0.0
        for j in range(n_classes):
            loss = 0.0 if i == j else 1.0
            temp += freq[j] * loss * prior[j]
        if i == 0 or temp < dev:
            best = i
            dev = temp
    return freq, best, dev


@njit(cache=True, nogil=True)
def anova_node(rows, y, w):  # pragma: no cover (compiled)
    """anovass: the node's weighted mean, its sum of weights and its sum of squares (risk)."""
    temp = 0.0
    twt = 0.0
    for i in range(rows.shape[0]):
        temp += y[rows[i]] * w[rows[i]]
        twt += w[rows[i]]
    mean = temp / twt
    ss = 0.0
    for i in range(rows.shape[0]):
        temp = y[rows[i]] - mean
        ss += temp * temp * w[rows[i]]
    return mean, twt, ss


@njit(cache=True, nogil=True)
def partition_node(xs, order, n1, n2, feature, spoint, below_first, first):  # pragma: no cover
    """nodesplit: reorder ``[n1, n2)`` of every feature so that the first son's rows come
    first (the rows with ``x < spoint`` when ``below_first``), each part still sorted.
    ``first`` is scratch, one flag per row of the fit. Returns the first son's rows."""
    for i in range(n1, n2):
        first[order[feature, i]] = (xs[feature, i] < spoint) == below_first
    buf_rows = np.empty(n2 - n1, np.intp)
    buf_x = np.empty(n2 - n1)
    a = n1
    for f in range(order.shape[0]):
        a = n1
        b = 0
        # Branch-free (the sons' rows interleave unpredictably): each row is written to both
        # places and only the right place advances; a row written at ``a`` by mistake is
        # overwritten by the next first-son row or by the second son's rows below.
        for i in range(n1, n2):
            r = order[f, i]
            x = xs[f, i]
            go = np.intp(first[r])
            order[f, a] = r
            xs[f, a] = x
            buf_rows[b] = r
            buf_x[b] = x
            a += go
            b += 1 - go
        for j in range(b):
            order[f, a + j] = buf_rows[j]
            xs[f, a + j] = buf_x[j]
    return a - n1
