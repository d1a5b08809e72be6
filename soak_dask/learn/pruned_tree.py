"""Decision trees grown and pruned by R's rpart rules, at rpart's defaults (the SOAK paper's
tree learner, mlr3's ``classif.rpart`` / ``regr.rpart``).

The rules are those of rpart's C sources (Therneau & Atkinson, *An Introduction to Recursive
Partitioning Using the RPART Routines*; ``partition.c``, ``bsplit.c``, ``gini.c``,
``anova.c``), with ``minsplit = 20``, ``minbucket = round(20 / 3) = 7``, ``cp = 0.01``,
``maxdepth = 30``, default priors (the observed class shares) and the unit loss matrix:

- A node's *risk* is its misclassified weight (classification: the weight of the rows outside
  its predicted class, the class of least expected loss, the first class on ties) or its
  weighted sum of squares about its mean (regression). ``alpha = cp × the root's risk``.
- A node is split only if it has at least ``minsplit`` rows, lies above ``maxdepth`` and its
  risk (and the bound its parent passes down) exceeds ``alpha``.
- The split is the one of largest *improvement* over all features (ties: the first feature;
  within a feature, the lowest split point), each son keeping at least ``minbucket`` rows
  (rows counted, whatever their weight; rows of weight 0 are not candidates). Classification
  improves the Gini impurity (weighted rows; with default priors the altered priors are 1):
  ``w·G(node) − w_L·G(L) − w_R·G(R)`` with ``G = Σ p(1 − p)``; regression the sum of squares,
  divided by the node's. The split point lies midway between the two adjacent distinct
  values; rows with ``x < point`` go one way, the others (ties included) the other.
  Improvements below ``1e-10`` × the largest one seen in the fit are rounding, not splits.
- After its sons are grown, a node's complexity is ``(R(node) − R(subtree)) / (splits)``,
  with the sons' subtrees collapsed first where their own complexity is smaller
  (weakest-link, as ``partition.c`` computes it); a node whose complexity is at most
  ``alpha`` loses its sons. So the risk that a split's subtree saves is weighed, not the
  Gini gain: a split that lowers the impurity but not the misclassified weight survives only
  if the splits below it make up for it.

No cross-validation is run: rpart's ``xval`` only fills the cp table (mlr3 sets
``xval = 0``) and never changes the tree. Features are numeric (no categorical splits, no
missing values: rpart's surrogates are not needed). The tree is grown with each feature
sorted once per fit (:mod:`soak_dask.learn.rpart_kernels`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor
from sklearn.tree._tree import Tree
from sklearn.utils._param_validation import Interval
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from .rpart_kernels import (
    LEFT,
    anova_node,
    anova_splits,
    gini_node,
    gini_splits,
    partition_node,
    presort,
)

__all__ = ["PrunedTreeClassifier", "PrunedTreeRegressor"]

#: bsplit.c: an improvement at most this share of the largest seen is rounding error.
ROUNDING = 1e-10
#: scikit-learn's node record (``sklearn.tree._tree.NODE_DTYPE``).
NODE_DTYPE = Tree(1, np.ones(1, np.intp), 1).__getstate__()["nodes"].dtype
#: rpart.control: node numbers are 32-bit integers, so depth is at most 30.
MAX_DEPTH = 30


@dataclass(eq=False)
class _Node:
    """One node while growing: rpart's ``struct node`` fields that the rules read."""

    n: int
    weight: float
    risk: float
    value: np.ndarray
    label: int
    impurity: float
    complexity: float = 0.0
    feature: int = -1
    point: float = math.nan
    below_first: bool = True
    sons: tuple[_Node, _Node] | None = None


class _Gini:
    """gini.c with rpart's default parameters: priors = the observed (weighted) class shares,
    unit losses. ``prior`` and ``aprior`` are rpart's per-row factors (1 up to rounding)."""

    def __init__(self, y: np.ndarray, w: np.ndarray, n_classes: int) -> None:
        self.y, self.w, self.n_classes = y, w, n_classes
        counts = np.array([math.fsum(w[y == c]) for c in range(n_classes)])  # R: tapply(wt, y, sum)
        parm_prior = counts / math.fsum(counts)
        freq = np.bincount(y, weights=w, minlength=n_classes) / np.cumsum(w)[-1]  # giniinit
        temp, aprior = 0.0, np.zeros(n_classes)
        for i in range(n_classes):
            for j in range(n_classes):
                loss = 0.0 if i == j else 1.0
                temp += loss * parm_prior[i]
                aprior[i] += loss * parm_prior[i]
        self.prior = parm_prior.copy()
        for i in np.flatnonzero(freq > 0):
            self.prior[i] = parm_prior[i] / freq[i]
            if temp > 0:  # a single class has no losses, and is never split
                aprior[i] /= temp * freq[i]
        self.aprior = aprior
        # rpart.R: class probabilities = counts × prior / max(1, overall counts), normalised.
        self.scale = parm_prior / np.maximum(1.0, counts)

    def node(self, rows: np.ndarray) -> _Node:
        freq, label, risk = gini_node(rows, self.y, self.w, self.prior, self.n_classes)
        weight = float(freq.sum())
        temp = freq * self.scale
        share = freq / weight
        return _Node(
            n=rows.size,
            weight=weight,
            risk=risk,
            value=temp / math.fsum(temp),
            label=int(label),
            impurity=float(1.0 - share @ share),
        )

    def splits(self, grower: _Grower, n1: int, n2: int, risk: float) -> None:
        gini_splits(
            grower.xs, grower.order, self.y, self.w, grower.all_positive, self.aprior,
            self.n_classes, n1, n2, grower.min_bucket, grower.improve, grower.point,
            grower.direction,
        )  # fmt: skip


class _Anova:
    """anova.c: weighted means and sums of squares."""

    def __init__(self, y: np.ndarray, w: np.ndarray) -> None:
        self.y, self.w = y, w

    def node(self, rows: np.ndarray) -> _Node:
        mean, weight, ss = anova_node(rows, self.y, self.w)
        return _Node(
            n=rows.size,
            weight=weight,
            risk=ss,
            value=np.array([mean]),
            label=-1,
            impurity=ss / weight,
        )

    def splits(self, grower: _Grower, n1: int, n2: int, risk: float) -> None:
        anova_splits(
            grower.xs, grower.order, self.y, self.w, grower.all_positive, risk, n1, n2,
            grower.min_bucket, grower.improve, grower.point, grower.direction,
        )  # fmt: skip


class _Grower:
    """rpart.c and partition.c: grow from the root, pruning as the recursion returns."""

    def __init__(self, criterion, X: np.ndarray, est: BasePrunedTree) -> None:
        self.criterion = criterion
        self.order, self.xs = presort(X)
        self.min_split, self.min_bucket = est.min_samples_split, est.min_samples_leaf
        self.max_depth, self.cp = est.max_depth, est.cp
        p = X.shape[1]
        self.improve, self.point = np.zeros(p), np.zeros(p)
        self.direction = np.zeros(p, dtype=np.intp)
        self.first = np.zeros(X.shape[0], dtype=np.bool_)
        self.all_positive = bool(np.all(criterion.w > 0))  # no row to leave out of searches
        self.iscale = 0.0  # bsplit.c: the largest improvement seen so far in this fit
        self.alpha = 0.0

    def grow(self) -> _Node:
        n = self.order.shape[1]
        root = self.criterion.node(np.arange(n))  # rpart.c: the root in row order
        root.complexity = root.risk
        self.alpha = self.cp * root.risk
        self._partition(root, 0, 0, n)
        return root

    def _partition(self, me: _Node, depth: int, n1: int, n2: int) -> tuple[int, float]:
        """partition.c: split ``me`` (rows ``[n1, n2)``) and its sons; the number of splits
        kept below it and the risk of its subtree."""
        tempcp = min(me.risk, me.complexity)
        if me.n < self.min_split or tempcp <= self.alpha or depth >= self.max_depth:
            me.complexity = self.alpha
            return 0, me.risk
        feature = self._best_split(n1, n2, me.risk)
        if feature < 0:
            me.complexity = self.alpha
            return 0, me.risk
        me.feature, me.point = feature, float(self.point[feature])
        me.below_first = bool(self.direction[feature] == LEFT)
        n_left = partition_node(
            self.xs, self.order, n1, n2, feature, me.point, me.below_first, self.first
        )
        left, left_split, left_risk = self._son(depth, n1, n1 + n_left, tempcp - self.alpha)
        tempcp = max((me.risk - left_risk) / (left_split + 1), me.risk - left.risk)
        tempcp = min(tempcp, me.complexity)
        right, right_split, right_risk = self._son(depth, n1 + n_left, n2, tempcp - self.alpha)
        me.sons = (left, right)
        return self._weakest_link(me, left_split, left_risk, right_split, right_risk)

    def _son(self, depth: int, n1: int, n2: int, bound: float) -> tuple[_Node, int, float]:
        son = self.criterion.node(self.order[0, n1:n2])  # partition.c: in the first feature's order
        son.complexity = bound
        splits, risk = self._partition(son, depth + 1, n1, n2)
        return son, splits, risk

    def _best_split(self, n1: int, n2: int, risk: float) -> int:
        """bsplit.c and insert_split.c: the first feature of largest improvement, or -1."""
        self.criterion.splits(self, n1, n2, risk)
        best = -1
        for f, improve in enumerate(self.improve.tolist()):
            self.iscale = max(self.iscale, improve)
            if improve > self.iscale * ROUNDING and (best < 0 or improve > self.improve[best]):
                best = f
        return best

    def _weakest_link(self, me: _Node, ls: int, lr: float, rs: int, rr: float):
        """partition.c's end: ``me``'s complexity, collapsing first the son whose own
        complexity is the smaller when it is below ``me``'s; no sons if it is ≤ alpha."""
        left, right = me.sons
        tempcp = (me.risk - (lr + rr)) / (ls + rs + 1)
        if right.complexity > left.complexity:
            if tempcp > left.complexity:
                lr, ls = left.risk, 0
                tempcp = (me.risk - (lr + rr)) / (ls + rs + 1)
                if tempcp > right.complexity:
                    rr, rs = right.risk, 0
        elif tempcp > right.complexity:
            rr, rs = right.risk, 0
            tempcp = (me.risk - (lr + rr)) / (ls + rs + 1)
            if tempcp > left.complexity:
                lr, ls = left.risk, 0
        me.complexity = (me.risk - (lr + rr)) / (ls + rs + 1)
        if me.complexity <= self.alpha:
            me.sons = None
            return 0, me.risk
        return ls + rs + 1, lr + rr


def _preorder(root: _Node) -> list[_Node]:
    nodes, stack = [], [root]
    while stack:
        node = stack.pop()
        nodes.append(node)
        if node.sons:
            stack.extend(reversed(node.sons))  # the first son right after its parent
    return nodes


def _clamp_complexity(node: _Node, parent: float, alpha: float) -> None:
    """make_cp_list.c: a node's cp is at most its parent's (it goes when its parent does);
    what R reports as ``frame$complexity``. The tree itself does not change."""
    node.complexity = min(node.complexity, parent)
    for son in node.sons or ():
        _clamp_complexity(son, max(node.complexity, alpha), alpha)


def _depth(node: _Node) -> int:
    return 0 if node.sons is None else 1 + max(_depth(s) for s in node.sons)


def _sklearn_tree(root: _Node, n_features: int, n_values: int) -> Tree:
    """scikit-learn's node arrays for the grown tree: the rows with ``x < point`` go left
    (``x <= nextafter(point, -inf)``), so ``export_text`` and ``plot_tree`` read it."""
    nodes = _preorder(root)
    index = {id(node): i for i, node in enumerate(nodes)}
    state = np.zeros(len(nodes), dtype=NODE_DTYPE)
    state["left_child"] = state["right_child"] = -1
    state["feature"], state["threshold"] = -2, -2.0
    for i, node in enumerate(nodes):
        state["impurity"][i] = node.impurity
        state["n_node_samples"][i], state["weighted_n_node_samples"][i] = node.n, node.weight
        if node.sons:
            below, above = node.sons if node.below_first else node.sons[::-1]
            state["left_child"][i], state["right_child"][i] = index[id(below)], index[id(above)]
            state["feature"][i] = node.feature
            state["threshold"][i] = np.nextafter(node.point, -np.inf)
    tree = Tree(n_features, np.array([n_values], dtype=np.intp), 1)
    values = np.array([node.value for node in nodes])[:, None, :]
    tree.__setstate__(
        {"max_depth": _depth(root), "node_count": len(nodes), "nodes": state, "values": values}
    )
    return tree


class BasePrunedTree(BaseEstimator):
    """Parameters, the fit and the walk down the tree shared by the classifier and the
    regressor."""

    _parameter_constraints: dict = {
        "cp": [Interval(Real, 0, None, closed="left")],
        "min_samples_split": [Interval(Integral, 2, None, closed="left")],
        "min_samples_leaf": [Interval(Integral, 1, None, closed="left")],
        "max_depth": [Interval(Integral, 1, MAX_DEPTH, closed="both")],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        *,
        cp: float = 0.01,
        min_samples_split: int = 20,
        min_samples_leaf: int = 7,
        max_depth: int = 30,
        random_state=None,
    ) -> None:
        self.cp = cp
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.max_depth = max_depth
        self.random_state = random_state

    def _grow(self, criterion, X: np.ndarray, holder_class, n_values: int) -> None:
        grower = _Grower(criterion, X, self)
        root = grower.grow()
        _clamp_complexity(root, root.complexity, grower.alpha)
        nodes = _preorder(root)
        self.alpha_ = grower.alpha
        # rpart's cp of each node (its complexity over the root's risk, R's frame$complexity):
        # a split is kept while its cp exceeds the ``cp`` parameter.
        scale = 1 / root.risk if root.risk > 0 else 1.0  # rpmatrix.c's cp_scale
        self.complexity_ = np.array([node.complexity * scale for node in nodes])
        self.node_labels_ = np.array([node.label for node in nodes], dtype=np.intp)
        self.node_risk_ = np.array([node.risk for node in nodes])
        holder = holder_class(
            min_samples_split=self.min_samples_split,
            min_samples_leaf=self.min_samples_leaf,
            max_depth=self.max_depth,
        )
        holder.n_features_in_ = holder.max_features_ = X.shape[1]
        holder.n_outputs_ = 1
        holder.tree_ = _sklearn_tree(root, X.shape[1], n_values)
        self.tree_ = holder

    def _fit_data(self, X, y, sample_weight, regression: bool):
        self._validate_params()
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=regression)
        w = _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)
        # X as it comes: ``presort`` makes the only copy, one contiguous run per feature (a
        # pandas frame's features are one already, which a C-ordered copy here would undo).
        return X, y, np.ascontiguousarray(w)

    def apply(self, X) -> np.ndarray:
        """The index of each row's leaf (in ``tree_.tree_``), compared in float64 as rpart:
        a row goes to the first side when its value is below the split point."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        tree = self.tree_.tree_
        left, right = tree.children_left, tree.children_right
        feature, threshold = tree.feature, tree.threshold
        node = np.zeros(X.shape[0], dtype=np.intp)
        rows = np.arange(X.shape[0])
        for _ in range(tree.node_count):  # children come after their parent: ends in time
            inner = left[node] >= 0
            if not inner.any():
                break
            at, where = rows[inner], node[inner]
            below = X[at, feature[where]] <= threshold[where]
            node[at] = np.where(below, left[where], right[where])
        return node

    def rpart_frame(self) -> pd.DataFrame:
        """The tree as R's ``fit$frame`` (with the primary split of ``fit$splits``), to compare
        with rpart node by node: one row per node in rpart's order, indexed by rpart's node
        number (the sons of node k are 2k and 2k + 1, 2k grown first).

        Columns: ``var`` (split feature, ``"<leaf>"``), ``n``, ``wt``, ``dev`` (risk),
        ``yval`` (the predicted class label, or the mean), ``complexity`` (cp units),
        ``index`` (split point) and ``ncat`` (-1: rows with ``x < index`` go to node 2k,
        1: to node 2k + 1; 0 for a leaf), as in ``fit$splits``.
        """
        check_is_fitted(self)
        tree = self.tree_.tree_
        left, right, at = tree.children_left, tree.children_right, np.arange(tree.node_count)
        inner = left >= 0
        below_first = left == at + 1  # the first son follows its parent (preorder)
        number = np.ones(tree.node_count, dtype=np.int64)
        for i in np.flatnonzero(inner):  # parents before sons
            first, second = (left[i], right[i]) if below_first[i] else (right[i], left[i])
            number[first], number[second] = 2 * number[i], 2 * number[i] + 1
        names = getattr(self, "feature_names_in_", None)
        names = np.array([f"x{j}" for j in range(self.n_features_in_)] if names is None else names)
        if isinstance(self, ClassifierMixin):
            yval = self.classes_[self.node_labels_]
        else:
            yval = tree.value[:, 0, 0]
        frame = {
            "var": np.where(inner, names[np.maximum(tree.feature, 0)], "<leaf>"),
            "n": tree.n_node_samples,
            "wt": tree.weighted_n_node_samples,
            "dev": self.node_risk_,
            "yval": yval,
            "complexity": self.complexity_,
            "index": np.where(inner, np.nextafter(tree.threshold, np.inf), np.nan),
            "ncat": np.where(inner, np.where(below_first, -1, 1), 0),
        }
        return pd.DataFrame(frame, index=pd.Index(number, name="node"))

    def get_n_leaves(self) -> int:
        """Number of leaves of the pruned tree."""
        check_is_fitted(self)
        return int(self.tree_.get_n_leaves())

    def get_depth(self) -> int:
        """Depth of the pruned tree (0 for a single leaf)."""
        check_is_fitted(self)
        return int(self.tree_.get_depth())


class PrunedTreeClassifier(ClassifierMixin, BasePrunedTree):
    """A classification tree by rpart's rules (``method = "class"``, Gini splits, default
    priors and losses, pruned at ``cp``): see the module's description.

    Parameters
    ----------
    cp : float, default=0.01
        rpart's complexity parameter: a split is kept only if its subtree lowers the
        misclassified weight by more than ``cp`` × the root's per split.
    min_samples_split : int, default=20
        rpart's ``minsplit``: a node needs this many rows to be split.
    min_samples_leaf : int, default=7
        rpart's ``minbucket`` (``round(minsplit / 3)``). Both minimums count rows, whatever
        their ``sample_weight``.
    max_depth : int, default=30
        rpart's ``maxdepth`` (at most 30, as in rpart).
    random_state : None, int or RandomState
        Not used: rpart's rules are deterministic (ties go to the first feature and the lowest
        split point). Accepted so that factories that seed every learner can pass a seed.

    Attributes
    ----------
    tree_ : DecisionTreeClassifier
        A scikit-learn tree holding the fitted nodes (``export_text``, ``plot_tree``); its
        ``tree_.value`` holds rpart's class probabilities of each node.
    alpha_ : float
        ``cp`` × the root's risk (its misclassified weight): the complexity a split must
        exceed.
    complexity_ : ndarray of shape (n_nodes,)
        rpart's cp of each node, in ``tree_`` order, as R's ``frame$complexity``: the cp at
        which its split goes (at most its parent's); for a leaf ``cp``, or less where a split
        was grown and removed.
    node_labels_ : ndarray of shape (n_nodes,)
        Each node's predicted class, as an index into ``classes_``.
    node_risk_ : ndarray of shape (n_nodes,)
        Each node's risk (misclassified weight): R's ``frame$dev``.
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from soak_dask import PrunedTreeClassifier
    >>> X, y = make_classification(n_samples=500, random_state=0)
    >>> bool(PrunedTreeClassifier().fit(X, y).get_n_leaves() < 40)
    True
    """

    def fit(self, X, y, sample_weight=None) -> PrunedTreeClassifier:
        """Grow the tree by rpart's rules and prune it at ``cp``."""
        X, y, w = self._fit_data(X, y, sample_weight, regression=False)
        # np.unique's classes, by hashing (y is 1-D here, so checking the distinct labels
        # checks y, without sorting every label).
        codes, classes = pd.factorize(y, sort=True)
        if codes.size and codes.min() < 0:
            raise ValueError("y holds missing labels (None or NaN): drop those rows first")
        self.classes_ = np.asarray(classes)
        check_classification_targets(self.classes_)
        codes = codes.astype(np.intp, copy=False)
        criterion = _Gini(codes, w, self.classes_.size)
        self._grow(criterion, X, DecisionTreeClassifier, self.classes_.size)
        self.tree_.classes_, self.tree_.n_classes_ = self.classes_, self.classes_.size
        return self

    def predict(self, X) -> np.ndarray:
        """The class rpart predicts in each row's leaf (least expected loss)."""
        leaf = self.apply(X)
        return self.classes_[self.node_labels_[leaf]]

    def predict_proba(self, X) -> np.ndarray:
        """rpart's class probabilities of each row's leaf, columns in ``classes_`` order."""
        leaf = self.apply(X)
        return self.tree_.tree_.value[leaf, 0, :].copy()


class PrunedTreeRegressor(RegressorMixin, BasePrunedTree):
    """A regression tree by rpart's rules (``method = "anova"``, pruned at ``cp``): see the
    module's description.

    Parameters
    ----------
    cp : float, default=0.01
        rpart's complexity parameter: a split is kept only if its subtree lowers the weighted
        residual sum of squares by more than ``cp`` × the root's per split.
    min_samples_split : int, default=20
        rpart's ``minsplit``.
    min_samples_leaf : int, default=7
        rpart's ``minbucket`` (``round(minsplit / 3)``), counted in rows.
    max_depth : int, default=30
        rpart's ``maxdepth`` (at most 30).
    random_state : None, int or RandomState
        Not used (rpart's rules are deterministic); accepted so that seeded factories can pass
        a seed.

    Attributes
    ----------
    tree_ : DecisionTreeRegressor
        A scikit-learn tree holding the fitted nodes; ``tree_.value`` holds each node's
        weighted mean.
    alpha_ : float
        ``cp`` × the root's weighted sum of squares.
    complexity_ : ndarray of shape (n_nodes,)
        rpart's cp of each node, in ``tree_`` order (R's ``frame$complexity``).
    node_labels_ : ndarray of shape (n_nodes,)
        -1 (no classes).
    node_risk_ : ndarray of shape (n_nodes,)
        Each node's weighted sum of squares: R's ``frame$dev``.
    n_features_in_ : int
    """

    def fit(self, X, y, sample_weight=None) -> PrunedTreeRegressor:
        """Grow the tree by rpart's rules and prune it at ``cp``."""
        X, y, w = self._fit_data(X, y, sample_weight, regression=True)
        criterion = _Anova(np.ascontiguousarray(y, dtype=np.float64), w)
        self._grow(criterion, X, DecisionTreeRegressor, 1)
        return self

    def predict(self, X) -> np.ndarray:
        """The weighted mean of each row's leaf."""
        leaf = self.apply(X)
        return self.tree_.tree_.value[leaf, 0, 0].copy()
