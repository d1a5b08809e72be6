"""The built-in tree follows rpart's rules: hand-computed cases for each rule, and the
presorted grower against a reference that sorts every node again."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import soak_dask as sd
from soak_dask.learn import rpart_kernels as rk

from ..conftest import n_examples

#: The 8-row case: labels in x order a a a b a b b b. Gini (rpart's Σ p(1-p), times the
#: weight): root 8 × 0.5 = 4; the cut after 3 rows leaves 3a | 1a4b: 0 + 5 × 0.32 = 1.6, an
#: improvement of 2.4; the cut after 5 rows (4a1b | 3b) ties at 2.4; every other cut is lower
#: (after 1: 0.571, 2: 1.333, 4: 1.0, 6: 1.333, 7: 0.571).
X8 = np.arange(1.0, 9.0)[:, None]
Y8 = np.array(list("aaababbb"))
SMALL = {"min_samples_split": 2, "min_samples_leaf": 1}


def splits(X: np.ndarray, y: np.ndarray, edge: int, w: np.ndarray | None = None):
    """The kernel's best cut of each feature over all rows (improvement, point, direction)."""
    order, xs = rk.presort(X)
    codes = np.unique(y, return_inverse=True)[1].astype(np.intp)
    w = np.ones(len(y)) if w is None else w
    p = X.shape[1]
    improve, point, direction = np.zeros(p), np.zeros(p), np.zeros(p, dtype=np.intp)
    aprior = np.ones(codes.max() + 1)
    rk.gini_splits(xs, order, codes, w, bool(np.all(w > 0)), aprior, aprior.size, 0, len(y),
                   edge, improve, point, direction)  # fmt: skip
    return improve, point, direction


def root(model) -> tuple[int, float]:
    tree = model.tree_.tree_
    return int(tree.feature[0]), float(np.nextafter(tree.threshold[0], np.inf))


def _check_partition(X, order, xs, n1, n2, feature, point, below_first) -> int:
    """Partition ``[n1, n2)`` and check it against numpy's stable selection; the first son's
    rows."""
    before = order[:, n1:n2].copy()
    first = np.zeros(len(X), dtype=np.bool_)
    n_left = rk.partition_node(xs, order, n1, n2, feature, point, below_first, first)
    for f in range(X.shape[1]):
        goes_first = (X[before[f], feature] < point) == below_first
        expected = np.concatenate([before[f][goes_first], before[f][~goes_first]])
        np.testing.assert_array_equal(order[f, n1:n2], expected)
        np.testing.assert_array_equal(xs[f, n1:n2], X[expected, f])
        assert n_left == goes_first.sum()
    return n_left


def test_partition_keeps_each_sons_rows_in_their_sorted_order():
    """``partition_node`` (branch-free) leaves each feature's range as the first son's rows
    and then the second son's, each in the order it had (nodesplit's stable partition), the
    values with their rows: on the root's range, then on its second son's."""
    X = np.random.default_rng(4).normal(size=(500, 3)).round(1)  # tied values too
    order, xs = rk.presort(X)
    n_left = _check_partition(X, order, xs, 0, 500, 1, 0.3, True)
    assert 0 < n_left < 500
    assert 0 < _check_partition(X, order, xs, n_left, 500, 2, -0.2, False) < 500 - n_left


def test_gini_improvement_split_point_and_ties_between_points():
    improve, point, direction = splits(X8, Y8, edge=1)
    assert improve[0] == pytest.approx(2.4)
    assert point[0] == 3.5  # midway between 3 and 4, the first of the two best cuts (5.5)
    assert direction[0] == rk.LEFT  # the rows below hold the lower class codes
    model = sd.PrunedTreeClassifier(max_depth=1, **SMALL).fit(X8, Y8)
    assert root(model) == (0, 3.5)
    # rpart sends x < 3.5 one way and x >= 3.5 (the point itself) the other.
    assert model.predict([[3.4999], [3.5]]).tolist() == ["a", "b"]
    # Leaves: 3a (risk 0) and 1a4b (risk 1); the root's risk is 4 (a tie: class a first).
    np.testing.assert_allclose(model.predict_proba([[1.0], [8.0]]), [[1, 0], [0.2, 0.8]])
    assert model.alpha_ == pytest.approx(0.04)  # cp × root risk
    assert model.complexity_[0] == pytest.approx(0.75)  # (4 - 1) / 4


def test_a_tie_between_features_goes_to_the_first():
    # x1 orders the rows as b b b a b a a a: its best cut (after 3 rows) also improves by 2.4.
    x1 = np.array([4.0, 6, 7, 5, 8, 1, 2, 3])
    both = np.column_stack([X8[:, 0], x1])
    improve = splits(both, Y8, edge=1)[0]
    assert improve[0] == improve[1]
    first = sd.PrunedTreeClassifier(max_depth=1, **SMALL).fit(both, Y8)
    swapped = sd.PrunedTreeClassifier(max_depth=1, **SMALL).fit(both[:, ::-1], Y8)
    assert root(first) == (0, 3.5) and root(swapped) == (0, 3.5)
    assert first.predict([[2.0, 2.0]]).tolist() == ["a"]  # x0 < 3.5: the 3a leaf
    assert swapped.predict([[2.0, 2.0]]).tolist() == ["b"]  # x1 < 3.5: the 3b leaf


def test_cp_is_relative_to_the_root_risk_and_strict():
    # The root's split saves 4 - 1 = 3 misclassified rows: complexity 3 = 0.75 × root risk.
    kept = sd.PrunedTreeClassifier(cp=0.74, max_depth=1, **SMALL).fit(X8, Y8)
    gone = sd.PrunedTreeClassifier(cp=0.75, max_depth=1, **SMALL).fit(X8, Y8)
    assert kept.get_n_leaves() == 2
    assert gone.get_n_leaves() == 1  # a split whose complexity equals alpha is removed


def test_minsplit_counts_the_node_rows():
    X = np.arange(20.0)[:, None]
    y = np.repeat(["a", "b"], 10)
    model = sd.PrunedTreeClassifier().fit(X, y)
    assert root(model) == (0, 9.5) and model.get_n_leaves() == 2
    small = sd.PrunedTreeClassifier().fit(X[:19], y[:19])  # 19 < minsplit = 20
    assert small.get_n_leaves() == 1
    np.testing.assert_allclose(small.predict_proba([[0.0]]), [[10 / 19, 9 / 19]])
    # A row of weight 0 still counts towards minsplit (rpart's num_obs).
    w = np.r_[np.ones(19), 0.0]
    y0 = np.append(y[:19], "a")
    assert sd.PrunedTreeClassifier().fit(X, y0, sample_weight=w).get_n_leaves() == 2


def test_minbucket_and_a_gini_gain_that_saves_no_misclassification():
    # 3 a then 17 b along x. Root Gini 20 × 2 × 0.15 × 0.85 = 5.1; the pure cut after 3 rows
    # leaves 3 rows (< minbucket = 7); the best cut keeping 7 rows each side is after 7:
    # 3a4b | 13b, improvement 5.1 - 7 × 2 × (3/7)(4/7) = 5.1 - 24/7.
    X = np.arange(20.0)[:, None]
    y = np.array(["a"] * 3 + ["b"] * 17)
    improve, point, _ = splits(X, y, edge=7)
    assert point[0] == 6.5 and improve[0] == pytest.approx(5.1 - 24 / 7)
    assert splits(X, y, edge=3)[1][0] == 2.5
    # That cut lowers the Gini impurity but not the risk (3 misclassified on either side):
    # its complexity is 0, so rpart keeps no split, where a Gini rule would keep one.
    model = sd.PrunedTreeClassifier().fit(X, y)
    assert model.get_n_leaves() == 1 and model.predict([[0.0]]).tolist() == ["b"]
    # With minbucket 3 the pure cut is allowed and kept.
    pure = sd.PrunedTreeClassifier(min_samples_leaf=3).fit(X, y)
    assert root(pure) == (0, 2.5) and pure.predict([[2.0], [3.0]]).tolist() == ["a", "b"]


def test_a_split_saving_nothing_is_kept_when_its_sons_make_up_for_it():
    # 15 b, 10 a, 15 b along x: root risk 10. The best cut (14.5; 24.5 ties, later) gives
    # 15b | 10a15b: risk 0 + 10, nothing saved; the right son's cut at 24.5 saves 10. The
    # root's complexity is (10 - 0) / 2 splits = 5, i.e. cp 0.5; the son's is 10 (cp 1).
    # The 10a15b son comes first (rpart's left son: its mean class code, 0.6, is the lower).
    X = np.arange(40.0)[:, None]
    y = np.array(["b"] * 15 + ["a"] * 10 + ["b"] * 15)
    model = sd.PrunedTreeClassifier().fit(X, y)
    assert model.get_n_leaves() == 3 and root(model) == (0, 14.5)
    assert model.predict([[14.0], [14.5], [24.0], [24.5]]).tolist() == ["b", "a", "a", "b"]
    # R reports the son's cp as at most its parent's (make_cp_list.c): 0.5, not 1.
    np.testing.assert_allclose(model.complexity_, [0.5, 0.5, 0.01, 0.01, 0.01])
    assert sd.PrunedTreeClassifier(cp=0.49).fit(X, y).get_n_leaves() == 3
    # At cp = 0.5 the root's split goes, and with it the son's (weakest link).
    assert sd.PrunedTreeClassifier(cp=0.5).fit(X, y).get_n_leaves() == 1


def test_weights_set_the_class_and_ties_go_to_the_first_class():
    X = np.zeros((20, 1))  # no split possible
    y = np.array(["a"] * 12 + ["b"] * 8)
    w = np.r_[np.ones(12), np.full(8, 2.0)]
    model = sd.PrunedTreeClassifier().fit(X, y, sample_weight=w)
    assert model.predict(X[:1]).tolist() == ["b"]  # weight 16 against 12
    np.testing.assert_allclose(model.predict_proba(X[:1]), [[12 / 28, 16 / 28]])
    tied = sd.PrunedTreeClassifier().fit(X, np.array(["b", "a"] * 10))
    assert tied.predict(X[:1]).tolist() == ["a"]


def test_anova_split_means_and_cp():
    # y = 0 for x < 10 and 10 (weights 1, 3 alternating) above: SS about the weighted mean.
    X = np.arange(20.0)[:, None]
    y = np.r_[np.zeros(10), np.full(10, 10.0)] + np.tile([0.0, 1.0], 10)
    w = np.tile([1.0, 3.0], 10)
    model = sd.PrunedTreeRegressor().fit(X, y, sample_weight=w)
    assert root(model) == (0, 9.5) and model.get_n_leaves() == 2
    # Each side: y = c (weight 1) and c + 1 (weight 3): weighted mean c + 0.75.
    np.testing.assert_allclose(model.predict([[0.0], [19.0]]), [0.75, 10.75])
    mean = np.average(y, weights=w)
    assert model.alpha_ == pytest.approx(0.01 * np.sum(w * (y - mean) ** 2))
    # Each side's own cut (after 1 row: 1 row < minbucket) cannot be made, so 2 leaves;
    # and at cp = 1 nothing is kept (the split saves less than the root's whole SS).
    assert sd.PrunedTreeRegressor(cp=1.0).fit(X, y, sample_weight=w).get_n_leaves() == 1


# --- the presorted grower against a reference that sorts every node -------------------------


def gini_rules(X, y, min_bucket):
    """gini.c and ginidev for unit weights: a node's (risk, class) and its best split."""
    classes, codes = np.unique(y, return_inverse=True)
    k = classes.size

    def risk(rows):
        counts = np.bincount(codes[rows], minlength=k)
        return float(rows.size - counts.max()), classes[np.argmax(counts)]

    def best_split(rows):
        best = (0.0, -1, 0.0, True)
        for f in range(X.shape[1]):
            o = rows[np.argsort(X[rows, f], kind="stable")]
            x, c = X[o, f], codes[o]
            n = o.size
            onehot = np.eye(k)[c]
            left = np.cumsum(onehot, axis=0)[:-1]
            right = onehot.sum(axis=0) - left
            lwt, rwt = np.arange(1.0, n), n - np.arange(1.0, n)
            total = sum(n * ((m / n) * (1 - m / n)) for m in onehot.sum(axis=0))
            temp = np.zeros(n - 1)
            lmean, rmean = np.zeros(n - 1), np.zeros(n - 1)
            for j in range(k):
                pl, pr = left[:, j] / lwt, right[:, j] / rwt
                temp = temp + lwt * (pl * (1 - pl))
                temp = temp + rwt * (pr * (1 - pr))
                lmean, rmean = lmean + pl * j, rmean + pr * j
            ok = (x[1:] != x[:-1]) & (lwt >= min_bucket) & (rwt >= min_bucket)
            if ok.any():
                i = np.flatnonzero(ok)[np.argmin(temp[ok])]  # first of the lowest
                gain = total - temp[i]
                if gain > best[0]:
                    best = (gain, f, (x[i] + x[i + 1]) / 2, lmean[i] < rmean[i])
        return best

    return risk, best_split


def anova_rules(X, y, min_bucket):
    """anova.c and anovass for unit weights, sums in rpart's order (the node's rows in the
    first feature's order for its risk, in the split feature's for the split)."""

    def risk(rows):
        o = rows[np.argsort(X[rows, 0], kind="stable")]
        mean = np.cumsum(y[o])[-1] / o.size
        return float(np.cumsum((y[o] - mean) * (y[o] - mean))[-1]), mean

    def best_split(rows):
        best, my_risk = (0.0, -1, 0.0, True), risk(rows)[0]
        for f in range(X.shape[1]):
            o = rows[np.argsort(X[rows, f], kind="stable")]
            x, n = X[o, f], o.size
            grand = np.cumsum(y[o])[-1] / n
            left_sum = np.cumsum(y[o] - grand)[:-1]
            lwt, rwt = np.arange(1.0, n), n - np.arange(1.0, n)
            temp = left_sum * left_sum / lwt + (-left_sum) * (-left_sum) / rwt
            ok = (x[1:] != x[:-1]) & (lwt >= min_bucket) & (rwt >= min_bucket)
            if ok.any() and temp[ok].max() > 0:
                i = np.flatnonzero(ok)[np.argmax(temp[ok])]  # first of the highest
                gain = temp[i] / my_risk
                if gain > best[0]:
                    best = (gain, f, (x[i] + x[i + 1]) / 2, left_sum[i] < -left_sum[i])
        return best

    return risk, best_split


def reference_tree(X, y, rules, cp=0.01, min_split=20, min_bucket=7, max_depth=30):
    """rpart's rules written plainly (unit weights): partition.c over ``rules`` (a node's
    risk and value, its best split), each node sorting its rows by every feature again.
    Returns the leaf value of each row of ``X``."""
    risk, best_split = rules(X, y, min_bucket)
    out = np.empty(X.shape[0], dtype=np.asarray(y).dtype)
    root_risk = risk(np.arange(len(y)))[0]
    alpha = cp * root_risk
    iscale = [0.0]

    def grow(rows, depth, bound, test):
        me_risk, label = risk(rows)
        tempcp = min(me_risk, bound)
        node = {"risk": me_risk, "label": label, "test": test}
        if rows.size < min_split or tempcp <= alpha or depth >= max_depth:
            return node | {"cp": alpha}, 0, me_risk
        gain, f, point, below_first = best_split(rows)
        iscale[0] = max(iscale[0], gain)
        if f < 0 or gain <= iscale[0] * 1e-10:
            return node | {"cp": alpha}, 0, me_risk
        first = (X[rows, f] < point) == below_first
        ft, st = ((X[test, f] < point) == below_first), None
        st = ~ft
        ls, lsplit, lrisk = grow(rows[first], depth + 1, tempcp - alpha, test[ft])
        tempcp = min(max((me_risk - lrisk) / (lsplit + 1), me_risk - ls["risk"]), bound)
        rs, rsplit, rrisk = grow(rows[~first], depth + 1, tempcp - alpha, test[st])
        c = (me_risk - (lrisk + rrisk)) / (lsplit + rsplit + 1)
        if rs["cp"] > ls["cp"]:
            if c > ls["cp"]:
                lrisk, lsplit = ls["risk"], 0
                c = (me_risk - (lrisk + rrisk)) / (lsplit + rsplit + 1)
                if c > rs["cp"]:
                    rrisk, rsplit = rs["risk"], 0
        elif c > rs["cp"]:
            rrisk, rsplit = rs["risk"], 0
            c = (me_risk - (lrisk + rrisk)) / (lsplit + rsplit + 1)
            if c > ls["cp"]:
                lrisk, lsplit = ls["risk"], 0
        c = (me_risk - (lrisk + rrisk)) / (lsplit + rsplit + 1)
        if c <= alpha:
            return node | {"cp": c}, 0, me_risk
        return node | {"cp": c, "sons": (ls, rs)}, lsplit + rsplit + 1, lrisk + rrisk

    tree = grow(np.arange(len(y)), 0, root_risk, np.arange(X.shape[0]))[0]
    stack = [tree]
    while stack:
        node = stack.pop()
        if "sons" in node:
            stack.extend(node["sons"])
        else:
            out[node["test"]] = node["label"]
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_presorted_tree_equals_a_tree_that_sorts_every_node(seed):
    rng = np.random.default_rng(seed)
    n = 600
    X = np.column_stack([
        rng.normal(size=n),
        rng.integers(0, 6, size=n).astype(float),  # many ties
        rng.normal(size=n),
        rng.uniform(size=n).round(1),
    ])  # fmt: skip
    eta = X[:, 0] - 0.5 * X[:, 1] + np.sin(3 * X[:, 2]) + 2 * (X[:, 3] > 0.5)
    y = np.array(["neg", "pos", "mid"])[(eta > 0).astype(int) + (eta > 2).astype(int)]
    for cp in (0.01, 0.002):
        model = sd.PrunedTreeClassifier(cp=cp).fit(X, y)
        assert model.get_n_leaves() > 3
        np.testing.assert_array_equal(model.predict(X), reference_tree(X, y, gini_rules, cp=cp))
        regression = sd.PrunedTreeRegressor(cp=cp).fit(X, eta)
        assert regression.get_n_leaves() > 3
        np.testing.assert_array_equal(
            regression.predict(X), reference_tree(X, eta, anova_rules, cp=cp)
        )


def test_sklearn_view_of_the_tree_agrees():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(400, 3))
    y = np.where(X[:, 0] + rng.normal(scale=0.5, size=400) > 0, "a", "b")
    model = sd.PrunedTreeClassifier().fit(X, y)
    assert model.predict(X).tolist() == model.tree_.predict(X).tolist()
    assert model.tree_.tree_.n_node_samples[0] == 400
    # Children come after their parent (persist.load_model checks this on every tree).
    tree = model.tree_.tree_
    inner = tree.children_left >= 0
    assert np.all(tree.children_left[inner] > np.flatnonzero(inner))


def test_cp_prunes_a_noisy_label():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 5))
    y = np.where(X[:, 0] + rng.normal(scale=1.5, size=2000) > 0, "a", "b")
    pruned = sd.PrunedTreeClassifier().fit(X, y)
    grown = sd.PrunedTreeClassifier(cp=0.0).fit(X, y)
    assert pruned.get_n_leaves() < grown.get_n_leaves() / 5
    assert np.mean(pruned.predict(X) == y) > 0.65
    share = np.mean(y == "a")
    assert pruned.alpha_ == pytest.approx(0.01 * 2000 * min(share, 1 - share))


def test_presorted_tree_equals_the_reference_on_aztrees(aztrees):
    """Real integer bands, so many tied values."""
    from ..conftest import AZTREES_FEATURES

    X = aztrees[AZTREES_FEATURES].to_numpy(dtype=float)
    y = aztrees["y"].to_numpy()
    model = sd.PrunedTreeClassifier(cp=0.002).fit(X, y)
    assert model.get_n_leaves() > 5
    np.testing.assert_array_equal(model.predict(X), reference_tree(X, y, gini_rules, cp=0.002))


def test_rows_of_weight_zero_are_not_split_candidates():
    # Without row 3 (the b at x = 4): a a a a | b b b along x, cut midway between 5 and 6 (not
    # 4.5), improvement 7 × 2 × (4/7)(3/7) = 24/7.
    w = np.ones(8)
    w[3] = 0.0
    improve, point, _ = splits(X8, Y8, edge=1, w=w)
    assert point[0] == 5.5 and improve[0] == pytest.approx(24 / 7)
    model = sd.PrunedTreeClassifier(max_depth=1, **SMALL).fit(X8, Y8, sample_weight=w)
    assert root(model) == (0, 5.5)


def test_rpart_frame_numbers_nodes_as_rpart():
    # The 15b/10a/15b case: rpart grows the 10a15b side first (its mean class code is lower),
    # so node 2 is x >= 14.5 (ncat 1 at the root) and node 3 the 15b leaf.
    X = np.arange(40.0)[:, None]
    y = np.array(["b"] * 15 + ["a"] * 10 + ["b"] * 15)
    frame = sd.PrunedTreeClassifier().fit(X, y).rpart_frame()
    assert frame.index.tolist() == [1, 2, 4, 5, 3]
    assert frame["var"].tolist() == ["x0", "x0", "<leaf>", "<leaf>", "<leaf>"]
    assert frame["n"].tolist() == [40, 25, 10, 15, 15]
    assert frame["dev"].tolist() == [10, 10, 0, 0, 0]
    assert frame["yval"].tolist() == ["b", "b", "a", "b", "b"]
    np.testing.assert_allclose(frame["complexity"], [0.5, 0.5, 0.01, 0.01, 0.01])
    np.testing.assert_array_equal(frame["index"], [14.5, 24.5, np.nan, np.nan, np.nan])
    assert frame["ncat"].tolist() == [1, -1, 0, 0, 0]
    named = sd.PrunedTreeRegressor().fit(pd.DataFrame({"v": X[:, 0]}), X[:, 0] > 19.5)
    assert named.rpart_frame()["var"].iloc[0] == "v"


@settings(max_examples=n_examples(15), deadline=None)
@given(seed=st.integers(0, 2**16), scale=st.floats(0.01, 100.0))
def test_the_tree_ignores_row_order_and_feature_scale(seed, scale):
    """With unit weights every sum is a count, so the rows' order cannot matter; a positive
    scale of a feature moves its split points but not the partitions."""
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.normal(size=300), rng.integers(0, 4, size=300)])
    y = np.where(X[:, 0] + 0.4 * X[:, 1] + rng.normal(size=300) > 0.5, "p", "q")
    base = sd.PrunedTreeClassifier(cp=0.005).fit(X, y).predict(X)
    order = rng.permutation(300)
    shuffled = sd.PrunedTreeClassifier(cp=0.005).fit(X[order], y[order]).predict(X)
    np.testing.assert_array_equal(shuffled, base)
    scaled = X * [scale, 1.0]
    np.testing.assert_array_equal(
        sd.PrunedTreeClassifier(cp=0.005).fit(scaled, y).predict(scaled), base
    )
