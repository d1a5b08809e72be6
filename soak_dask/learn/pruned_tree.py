"""Decision trees pruned like R's rpart defaults (the SOAK paper's tree learner).

rpart, as mlr3's ``classif.rpart`` runs it, grows a tree with ``minsplit = 20`` (a node needs
20 rows to be split), ``minbucket = 7`` (a leaf keeps at least 7 rows), ``maxdepth = 30``,
and keeps a split only if it lowers the tree's overall lack of fit by at least ``cp = 0.01``
of the root's (no internal cross-validation: ``xval = 0``). scikit-learn's minimal
cost-complexity pruning is the same weakest-link pruning with a penalty ``ccp_alpha`` per leaf
in units of the impurity of the whole table; so ``ccp_alpha = cp × (impurity of the root)``
keeps the subtrees whose splits earn ``cp`` of the root's impurity; like rpart, a split that
gains less is not attempted while growing (``min_impurity_decrease``). For regression the
impurity is the (weighted) mean squared error, exactly rpart's anova criterion; for
classification it is the Gini impurity, which rpart uses to choose splits but not to prune
(rpart prunes on the misclassification rate), so the trees are close to rpart's, not equal.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor
from sklearn.utils._param_validation import Interval
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

__all__ = ["PrunedTreeClassifier", "PrunedTreeRegressor"]


class _PrunedTree(BaseEstimator):
    """Parameters and the fit shared by the classifier and the regressor."""

    _parameter_constraints: dict = {
        "cp": [Interval(Real, 0, None, closed="left")],
        "min_samples_split": [Interval(Integral, 2, None, closed="left")],
        "min_samples_leaf": [Interval(Integral, 1, None, closed="left")],
        "max_depth": [Interval(Integral, 1, None, closed="left"), None],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        *,
        cp: float = 0.01,
        min_samples_split: int = 20,
        min_samples_leaf: int = 7,
        max_depth: int | None = 30,
        random_state=None,
    ) -> None:
        self.cp = cp
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.max_depth = max_depth
        self.random_state = random_state

    def fit(self, X, y, sample_weight=None):
        """Grow the tree and prune it at ``ccp_alpha = cp × root impurity``.

        As rpart, a split that gains less than that is not even tried (scikit-learn's
        ``min_impurity_decrease``), which keeps the growing cheap.
        """
        self._validate_params()
        X, y = validate_data(self, X, y, y_numeric=isinstance(self, RegressorMixin))
        w = _check_sample_weight(sample_weight, X, dtype=np.float64)
        self.ccp_alpha_ = self.cp * self._root_impurity(y, w)
        self.tree_ = self._tree_class(
            min_samples_split=self.min_samples_split,
            min_samples_leaf=self.min_samples_leaf,
            max_depth=self.max_depth,
            min_impurity_decrease=self.ccp_alpha_,
            ccp_alpha=self.ccp_alpha_,
            random_state=self.random_state,
        ).fit(X, y, sample_weight=w)
        return self

    def get_n_leaves(self) -> int:
        """Number of leaves of the pruned tree."""
        check_is_fitted(self)
        return int(self.tree_.get_n_leaves())

    def _checked(self, X) -> np.ndarray:
        check_is_fitted(self)
        return validate_data(self, X, reset=False)


class PrunedTreeClassifier(ClassifierMixin, _PrunedTree):
    """A classification tree pruned like rpart's defaults (``cp``, ``minsplit``,
    ``minbucket``, ``maxdepth``): see the module's description.

    Parameters
    ----------
    cp : float, default=0.01
        rpart's complexity parameter: a split must lower the Gini impurity of the whole tree by
        ``cp`` times the root's.
    min_samples_split : int, default=20
        rpart's ``minsplit``.
    min_samples_leaf : int, default=7
        rpart's ``minbucket`` (``round(minsplit / 3)``). Both minimums count rows, whatever
        their ``sample_weight``.
    max_depth : int or None, default=30
        rpart's ``maxdepth``.
    random_state : int, RandomState or None
        Breaks ties between equally good splits.

    Attributes
    ----------
    tree_ : DecisionTreeClassifier
        The fitted, pruned tree.
    ccp_alpha_ : float
        The cost-complexity penalty used: ``cp`` × the root's Gini impurity.
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from soak_dask import PrunedTreeClassifier
    >>> X, y = make_classification(n_samples=500, random_state=0)
    >>> bool(PrunedTreeClassifier(random_state=0).fit(X, y).get_n_leaves() < 40)
    True
    """

    _tree_class = DecisionTreeClassifier

    def fit(self, X, y, sample_weight=None) -> PrunedTreeClassifier:
        """Grow the tree and prune it at ``ccp_alpha = cp × root Gini impurity``; splits that
        gain less are not attempted."""
        check_classification_targets(y)
        super().fit(X, y, sample_weight)
        self.classes_ = self.tree_.classes_
        return self

    @staticmethod
    def _root_impurity(y: np.ndarray, w: np.ndarray) -> float:
        """Weighted Gini impurity of all rows."""
        _, codes = np.unique(y, return_inverse=True)
        share = np.bincount(codes, weights=w) / w.sum()
        return float(1.0 - share @ share)

    def predict(self, X) -> np.ndarray:
        """The majority class of each row's leaf."""
        X = self._checked(X)
        return self.tree_.predict(X)

    def predict_proba(self, X) -> np.ndarray:
        """Class shares of each row's leaf, columns in the order of ``classes_``."""
        X = self._checked(X)
        return self.tree_.predict_proba(X)


class PrunedTreeRegressor(RegressorMixin, _PrunedTree):
    """A regression tree pruned like rpart's defaults (``cp``, ``minsplit``, ``minbucket``,
    ``maxdepth``): see the module's description.

    Parameters
    ----------
    cp : float, default=0.01
        rpart's complexity parameter: a split must lower the residual sum of squares of the
        whole tree by ``cp`` times the root's (rpart's anova rule).
    min_samples_split : int, default=20
        rpart's ``minsplit``.
    min_samples_leaf : int, default=7
        rpart's ``minbucket`` (``round(minsplit / 3)``).
    max_depth : int or None, default=30
        rpart's ``maxdepth``.
    random_state : int, RandomState or None
        Breaks ties between equally good splits.

    Attributes
    ----------
    tree_ : DecisionTreeRegressor
        The fitted, pruned tree.
    ccp_alpha_ : float
        The cost-complexity penalty used: ``cp`` × the weighted variance of y.
    n_features_in_ : int
    """

    _tree_class = DecisionTreeRegressor

    @staticmethod
    def _root_impurity(y: np.ndarray, w: np.ndarray) -> float:
        """Weighted variance of y (the squared-error impurity of the root)."""
        mean = np.average(y, weights=w)
        return float(np.average((y - mean) ** 2, weights=w))

    def predict(self, X) -> np.ndarray:
        """The mean of each row's leaf."""
        X = self._checked(X)
        return self.tree_.predict(X)
