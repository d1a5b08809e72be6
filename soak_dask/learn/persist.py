"""Save a fitted model without pickle, load it safely, and predict tables larger than memory.

A model file is a skops archive (``skops.io``: a zip of JSON and NumPy arrays, never a pickle)
with one extra member, ``soak_dask.json``, holding what prediction needs: the feature columns in
order, the label, the task, the classes, and the versions and settings it was made with. skops
ignores the extra member, so ``skops.io.load`` still opens the file; the member is read with
``zipfile`` and ``json`` alone, before anything is trusted, which is also how
``save_model`` recognises a file it may overwrite.

Loading never runs code from the file. skops rebuilds only the types it trusts, plus those listed
in ``trusted``; soak_dask adds its own estimators (``TRUSTED_BY_DEFAULT``), which skops does
not know. skops also leaves scikit-learn's ``sklearn.tree._tree.Tree`` untrusted on purpose: its
node arrays hold child and feature indices that scikit-learn follows without bounds checks, so a
crafted file could crash the process at the first prediction. The tree inside a soak_dask
``PrunedTreeClassifier`` or ``PrunedTreeRegressor`` is accepted without listing it because
``load_model`` checks those indices before returning; any other tree (a
``DecisionTreeClassifier``, a random forest) must be trusted by the caller.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tempfile
import zipfile
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from numbers import Integral
from pathlib import Path
from typing import Any

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import sklearn
import skops
import skops.io as sio
from sklearn.base import is_classifier, is_regressor
from sklearn.tree._tree import Tree
from sklearn.utils.validation import check_is_fitted

from ..io.locations import check_links
from ..io.outdir import local_path
from ..tables.table import Table
from ..version import __version__
from .model_dir import FORMAT, METADATA_MEMBER, read_metadata
from .pruned_tree import BasePrunedTree

__all__ = [
    "TRUSTED_BY_DEFAULT",
    "SavedModel",
    "UntrustedModelError",
    "load_model",
    "predict_table",
    "save_model",
]

#: 2: the metadata holds ``signature``, binding the features, label, task and classes to the
#: estimator's members (1: unsigned, loaded only with ``trust_unsigned=True``).
FORMAT_VERSION = 2
#: The metadata ``signature`` covers, with every member of the skops archive.
_SIGNED = ("features", "label", "task", "classes", "estimator")
#: Types ``load_model`` trusts besides skops' own: soak_dask's estimators. They hold only
#: parameters, NumPy arrays and scikit-learn objects (each audited by skops in turn), and
#: rebuilding them sets attributes without running any of their code.
TRUSTED_BY_DEFAULT = (
    "soak_dask.learn.across_workers.DecodedClassifier",
    "soak_dask.learn.calibration.PlattCalibrated",
    "soak_dask.learn.lasso.LassoCVClassifier",
    "soak_dask.learn.lasso.LassoCVRegressor",
    "soak_dask.learn.priors.PriorCorrected",
    "soak_dask.learn.pruned_tree.PrunedTreeClassifier",
    "soak_dask.learn.pruned_tree.PrunedTreeRegressor",
    "soak_dask.learn.tuning.FrozenSelector",
    "soak_dask.learn.tuning.Search",
)
_TREE = f"{Tree.__module__}.{Tree.__qualname__}"
#: Keys soak_dask writes; a user's ``metadata`` may not replace them.
_RESERVED = frozenset(
    {"format", "format_version", "estimator", "task", "classes", "features", "label", "created"}
    | {"soak_dask_version", "sklearn_version", "skops_version", "signature"}
)


class UntrustedModelError(ValueError):
    """A model file holds types that are not trusted: list them in ``trusted`` if you trust
    the file."""


@dataclass(frozen=True)
class SavedModel:
    """A fitted estimator with the metadata saved with it.

    Attributes
    ----------
    estimator : estimator
        The fitted scikit-learn compatible estimator.
    metadata : dict
        What ``save_model`` stored: ``features``, ``label``, ``task``, ``classes``,
        ``estimator`` (its class), the versions it was made with, ``created``, and the caller's
        own keys (such as ``learner`` and ``seed``).
    path : Path or None
        The file it was loaded from.
    """

    estimator: Any
    metadata: dict[str, Any]
    path: Path | None = field(default=None, compare=False)

    @property
    def features(self) -> tuple[str, ...]:
        """Feature columns, in the order the estimator takes them."""
        return tuple(self.metadata["features"])

    @property
    def label(self) -> str | None:
        """The label column the model predicts (the name of predictions)."""
        return self.metadata["label"]

    @property
    def task(self) -> str:
        """``"classification"`` or ``"regression"``."""
        return self.metadata["task"]

    @property
    def classes_(self) -> np.ndarray:
        """The estimator's classes (classifiers only)."""
        return self.estimator.classes_

    def predict(self, data) -> dd.Series | pd.Series:
        """Predictions for each row of ``data``: see ``predict_table``."""
        return predict_table(self, data)

    def predict_proba(self, data) -> dd.DataFrame | pd.DataFrame:
        """Class probabilities for each row of ``data``: see ``predict_table``."""
        return predict_table(self, data, proba=True)

    def __repr__(self) -> str:
        name = type(self.estimator).__name__
        where = f", path={str(self.path)!r}" if self.path is not None else ""
        return (
            f"SavedModel({name}, task={self.task!r}, label={self.label!r}, "
            f"{len(self.features)} features{where})"
        )


def save_model(
    model,
    path: str | os.PathLike,
    *,
    features: Sequence[str] | None = None,
    label: str | None = None,
    overwrite: bool = False,
    metadata: Mapping[str, Any] | None = None,
) -> Path:
    """Save a fitted classifier or regressor with skops, never with pickle.

    Parameters
    ----------
    model : estimator
        A fitted scikit-learn compatible classifier or regressor (a pipeline ending in one is
        fine).
    path : str or path-like
        The file to write (``.skops`` by convention).
    features : sequence of str, optional
        Feature columns, in the order the model was fitted on. Defaults to the model's
        ``feature_names_in_`` (set when it was fitted on a DataFrame); required otherwise,
        since ``predict_table`` takes the features by name.
    label : str, optional
        The label column, used to name the predictions.
    overwrite : bool, default=False
        Replace an existing file at ``path``. Only a file written by ``save_model`` is ever
        replaced; any other file is left alone.
    metadata : mapping, optional
        More JSON-serialisable facts to keep with the model, such as the learner's name and
        the seed.

    Returns
    -------
    Path
        The path written.

    Raises
    ------
    FileExistsError
        ``path`` exists and ``overwrite`` is False, or it was not written by ``save_model``.
    """
    path = local_path(path, "path")
    check_is_fitted(model)
    record = _metadata(model, features, label, metadata)
    check_links(path, str(path))  # the rename below would replace a user's link
    if path.is_dir():
        raise IsADirectoryError(f"cannot save the model to {path}: it is a directory")
    if path.exists():
        if not overwrite:
            raise FileExistsError(
                f"{path} already exists; pass overwrite=True to replace it (only a model "
                "saved by soak_dask.save_model is replaced) or choose another path"
            )
        if read_metadata(path) is None:
            raise FileExistsError(
                f"refusing to overwrite {path}: it was not written by soak_dask.save_model. "
                "Choose another path, or remove the file yourself if it is no longer needed"
            )
    buffer = io.BytesIO(sio.dumps(model, compression=zipfile.ZIP_DEFLATED))
    record["signature"] = _signature(buffer, record)
    with zipfile.ZipFile(buffer, "a", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(METADATA_MEMBER, json.dumps(record, indent=2, default=str))
    # Written beside the target and renamed, so a failed save never leaves half a model.
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(
        dir=path.parent, prefix=f".{path.name}.", suffix=".tmp", delete=False
    ) as tmp:
        tmp.write(buffer.getbuffer())
    try:
        os.replace(tmp.name, path)
    except BaseException:
        Path(tmp.name).unlink(missing_ok=True)
        raise
    return path


def _metadata(
    model, features: Sequence[str] | None, label: str | None, extra: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The record stored in ``soak_dask.json``."""
    if is_classifier(model):
        task, classes = "classification", np.asarray(model.classes_).tolist()
    elif is_regressor(model):
        task, classes = "regression", None
    else:
        raise TypeError(
            f"save_model takes a fitted classifier or regressor, not {type(model).__name__}"
        )
    fitted_names = getattr(model, "feature_names_in_", None)
    if features is None:
        if fitted_names is None:
            raise ValueError(
                f"the {type(model).__name__} was fitted without column names: pass "
                "features=[...] (the feature columns, in the order it was fitted on)"
            )
        features = fitted_names
    features = [str(f) for f in features]
    if fitted_names is not None and features != list(fitted_names):
        raise ValueError(
            f"features={features} differ from the columns the model was fitted on "
            f"({list(fitted_names)}); leave features unset to use those"
        )
    n_in = getattr(model, "n_features_in_", len(features))
    if len(features) != n_in:
        raise ValueError(f"features has {len(features)} names but the model takes {n_in}")
    extra = dict(extra or {})
    if clash := sorted(_RESERVED.intersection(extra)):
        raise ValueError(f"metadata keys {clash} are written by save_model itself; rename them")
    for key, value in extra.items():
        try:
            json.dumps(value)
        except TypeError as err:
            raise ValueError(f"metadata[{key!r}] is not JSON-serialisable: {err}") from None
    estimator = type(model)
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "estimator": f"{estimator.__module__}.{estimator.__qualname__}",
        "task": task,
        "classes": classes,
        "features": features,
        "label": label,
        "soak_dask_version": __version__,
        "sklearn_version": sklearn.__version__,
        "skops_version": skops.__version__,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        **extra,
    }


def _signature(archive_bytes: io.BytesIO | bytes, record: Mapping[str, Any]) -> str:
    """SHA-256 binding the metadata that prediction trusts (``_SIGNED``: the feature order
    above all) to the estimator: every member of the skops archive but the metadata. An edit
    of either, by hand or by mistake, no longer matches; it is no defence against someone
    who recomputes it (as a checkpoint's hash)."""
    handle = io.BytesIO(archive_bytes) if isinstance(archive_bytes, bytes) else archive_bytes
    h = hashlib.sha256()
    with zipfile.ZipFile(handle) as archive:
        for name in sorted(n for n in archive.namelist() if n != METADATA_MEMBER):
            h.update(name.encode() + b"\0")
            h.update(hashlib.sha256(archive.read(name)).digest())
    signed = json.loads(json.dumps({k: record.get(k) for k in _SIGNED}, default=str))
    h.update(json.dumps(signed, sort_keys=True).encode())
    return h.hexdigest()


def _check_signed(
    data: bytes, record: dict[str, Any], estimator: Any, path: Path, trust_unsigned: bool
) -> None:
    """Refuse a model whose metadata no longer matches its estimator: an edited signature,
    feature order, label, task or classes, or features the estimator was not fitted on; and,
    unless ``trust_unsigned``, an older file without a signature."""
    features = record.get("features")
    fitted = getattr(estimator, "feature_names_in_", None)
    n_in = getattr(estimator, "n_features_in_", None)
    problem = ""
    if not isinstance(features, list) or not all(isinstance(f, str) for f in features):
        problem = "its feature list is not a list of column names"
    elif fitted is not None and [str(f) for f in fitted] != features:
        problem = f"its features {features} are not the columns it was fitted on {list(fitted)}"
    elif isinstance(n_in, Integral) and n_in != len(features):
        problem = f"it lists {len(features)} features but the estimator takes {n_in}"
    elif "signature" not in record and record.get("format_version") != 1:
        problem = "it has no signature, which every model saved by save_model carries"
    elif "signature" in record and record["signature"] != _signature(data, record):
        problem = (
            "its metadata (features, label, task or classes) or its estimator was edited "
            "after save_model wrote it"
        )
    if problem:
        raise ValueError(
            f"{path}: {problem}, so its predictions cannot be trusted (a changed feature order "
            "would permute the columns silently); save the model again with save_model"
        )
    if "signature" not in record and fitted is None and not trust_unsigned:
        # Only the estimator's own column names could vouch for the order; it has none.
        raise ValueError(
            f"{path} was saved without a signature (format_version 1, by an older soak_dask, "
            f"or edited since): nothing shows that its feature order {features} is the one "
            "the estimator was fitted on, and a changed order permutes every prediction "
            "silently. If you know it is, load it with load_model(..., trust_unsigned=True) "
            "and save it again with save_model to sign it"
        )


def load_model(
    path: str | os.PathLike,
    *,
    trusted: Iterable[str | type] | None = None,
    trust_unsigned: bool = False,
) -> SavedModel:
    """Load a model written by ``save_model``, without running code from the file.

    Parameters
    ----------
    path : str or path-like
        The model file.
    trusted : iterable of str or type, optional
        Types to trust besides skops' defaults and ``TRUSTED_BY_DEFAULT``, as full names
        (``"sklearn.tree._tree.Tree"``) or the types themselves. Only list types you expect in
        a file you trust; ``skops.io.get_untrusted_types(file=path)`` shows what a file holds.
    trust_unsigned : bool, default=False
        Load a file without a signature (``format_version`` 1, from a soak_dask that did not
        sign its files yet) whose estimator was fitted without column names, so that nothing
        verifies its feature order. Refused otherwise: a reordered feature list would permute
        every prediction. Save the model again with ``save_model`` to sign it.

    Returns
    -------
    SavedModel
        The estimator and its metadata; ``.predict(table)`` predicts a table partition by
        partition.

    Raises
    ------
    UntrustedModelError
        The file holds types that are not trusted; the message names them.
    ValueError
        The file was not written by ``save_model``, or its metadata (the feature order above
        all) no longer matches the estimator it was saved with, or it is unsigned and
        ``trust_unsigned`` is False.
    """
    path = Path(path)
    data = path.read_bytes()  # read once, so the file checked is the file loaded
    record = read_metadata(data)
    if record is None:
        raise ValueError(
            f"{path} was not written by soak_dask.save_model (no {METADATA_MEMBER} in a skops "
            "archive); open a plain skops file with skops.io.load and pass the estimator to "
            "predict_table"
        )
    if isinstance(trusted, str | type):  # one type rather than a list of them
        trusted = [trusted]
    allowed = set(TRUSTED_BY_DEFAULT) | {_type_name(t) for t in trusted or ()}
    found = set(sio.get_untrusted_types(data=data))
    # A tree is vouched for below when it sits inside a soak_dask pruned tree.
    check_trees = _TREE in found and _TREE not in allowed
    if refused := sorted(found - allowed - {_TREE}):
        raise UntrustedModelError(
            f"{path} holds types that are not trusted: {refused}. Loading is refused so that "
            "nothing from the file runs; if you trust the file, pass "
            f"load_model({str(path)!r}, trusted={refused})"
        )
    estimator = sio.loads(data, trusted=sorted(allowed | {_TREE}))
    if check_trees:
        _check_trees(estimator, path)
    _check_signed(data, record, estimator, path, trust_unsigned)
    return SavedModel(estimator, record, path)


def _type_name(t: str | type) -> str:
    return t if isinstance(t, str) else f"{t.__module__}.{t.__qualname__}"


def _check_trees(estimator, path: Path) -> None:
    """Refuse trees outside soak_dask's pruned trees, and pruned trees whose node indices
    could point outside their arrays (see the module's description).

    A pruned tree checks the width of X before its tree sees it, so its tree is safe once its
    split features are below that width; unless the tree, or the scikit-learn tree holding it,
    is also referenced elsewhere (a crafted file can share objects), where X may go unchecked.
    """
    objects = list(_walk(estimator))
    references = Counter(id(child) for obj in objects for child in _children(obj))
    vouched: set[int] = set()
    for obj in objects:
        holder = getattr(obj, "tree_", None) if isinstance(obj, BasePrunedTree) else None
        tree = getattr(holder, "tree_", None)
        widths = [getattr(o, "n_features_in_", None) for o in (obj, holder)]
        if (
            isinstance(tree, Tree)
            and all(isinstance(w, Integral) for w in widths)
            and references[id(holder)] == references[id(tree)] == 1
        ):
            _check_nodes(tree, min(tree.n_features, *widths), path)
            vouched.add(id(tree))
    if any(isinstance(obj, Tree) and id(obj) not in vouched for obj in objects):
        raise UntrustedModelError(
            f"{path} holds {_TREE} outside a soak_dask pruned tree. skops does not trust it "
            "by default (a crafted tree can crash the process when it predicts); if you trust "
            f"the file, pass load_model({str(path)!r}, trusted=[{_TREE!r}])"
        )


def _check_nodes(tree: Tree, n_features: int, path: Path) -> None:
    """Children come after their parent and inside the tree (so walks end inside it); split
    features index existing columns."""
    left, right = tree.children_left, tree.children_right
    node = np.arange(tree.node_count)
    leaf = (left == -1) & (right == -1)
    inside = (left > node) & (right > node) & (left < node.size) & (right < node.size)
    split = tree.feature[~leaf]
    if not np.all(leaf | inside) or np.any((split < 0) | (split >= n_features)):
        raise UntrustedModelError(
            f"{path} holds a decision tree whose nodes point outside it: the file is damaged "
            "or crafted, and is not loaded"
        )


def _walk(obj: Any, seen: set[int] | None = None) -> Iterable[Any]:
    """``obj`` and every object reachable from it, each once."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return
    seen.add(id(obj))
    yield obj
    for child in _children(obj):
        yield from _walk(child, seen)


def _children(obj: Any) -> list[Any]:
    """What ``obj`` refers to: attributes, container items, object-array elements."""
    if isinstance(obj, Mapping):
        return [*obj.keys(), *obj.values()]
    if isinstance(obj, list | tuple | set | frozenset):
        return list(obj)
    if isinstance(obj, np.ndarray):
        return list(obj.ravel()) if obj.dtype == object else []
    if hasattr(obj, "__dict__") and not isinstance(obj, type):
        return list(vars(obj).values())
    return []


def predict_table(
    model, data: Table | dd.DataFrame | pd.DataFrame, *, proba: bool = False
) -> dd.Series | dd.DataFrame | pd.Series | pd.DataFrame:
    """Predict every row of a table, partition by partition on the cluster.

    Parameters
    ----------
    model : SavedModel or estimator
        A model from ``load_model``, or a fitted estimator: its features are then its
        ``feature_names_in_``, or the table's features for a ``Table``.
    data : Table, dask DataFrame or pandas DataFrame
        The rows to predict. They need the feature columns (by name; other columns, the label
        among them, may be absent or present); nothing is pulled to the client.
    proba : bool, default=False
        Return the class probabilities (classifiers only) instead of the predictions.

    Returns
    -------
    dask Series or DataFrame (pandas for a pandas input)
        Lazy predictions named after the label, or one probability column per class (columns:
        the classes), with the input's index and partitions. Rows with missing or infinite
        features are handled as the estimator handles them; if it refuses them, the error
        names the feature columns and how many rows of the partition hold such values (drop
        or fill those rows first). Each partition's predictions equal
        ``predict`` on that partition; classes and tree outputs therefore equal a prediction
        of the whole table in one call, while a linear model's floats may differ from it in
        the last bit (BLAS rounds matrix products of different sizes differently).
    """
    frame = data.data if isinstance(data, Table) else data
    if not isinstance(frame, dd.DataFrame | pd.DataFrame):
        raise TypeError(
            f"predict_table takes a soak_dask Table or a dask/pandas DataFrame, not "
            f"{type(data).__name__}"
        )
    estimator, features, label = _resolve(model, data)
    if missing := [f for f in features if f not in frame.columns]:
        raise ValueError(
            f"feature column(s) {missing} missing from the table; the model takes {list(features)}"
        )
    if proba and not (is_classifier(estimator) and hasattr(estimator, "predict_proba")):
        raise ValueError(
            f"proba=True needs a classifier with predict_proba; {type(estimator).__name__} "
            "has none, use proba=False"
        )
    meta = _meta(estimator, label, proba)
    # Column names go to an estimator fitted on a DataFrame, a bare array to one fitted on an
    # array (which would warn about names it did not see).
    by_name = hasattr(estimator, "feature_names_in_")
    columns = frame[list(features)]  # a Parquet source then reads only these columns
    if isinstance(columns, pd.DataFrame):
        return _predict_part(columns, estimator, proba, by_name, meta)
    # The estimator enters the graph once, as one key every partition's task depends on.
    shared = dask.delayed(estimator, pure=True)
    return columns.map_partitions(_predict_part, shared, proba, by_name, meta, meta=meta)


def _resolve(model, data) -> tuple[Any, tuple[str, ...], str | None]:
    """The estimator, its features and the label naming its predictions."""
    if isinstance(model, SavedModel):
        return model.estimator, model.features, model.label
    check_is_fitted(model)
    label = data.label if isinstance(data, Table) else None
    names = getattr(model, "feature_names_in_", None)
    if names is not None:
        return model, tuple(str(n) for n in names), label
    if isinstance(data, Table):
        return model, data.features, label
    raise ValueError(
        f"the {type(model).__name__} was fitted without column names, so its features are "
        "unknown: pass a model from load_model, a soak_dask Table, or an estimator fitted on "
        "a DataFrame"
    )


def _meta(estimator, label: str | None, proba: bool) -> pd.Series | pd.DataFrame:
    """An empty result of the right type, columns and dtypes."""
    if proba:
        return pd.DataFrame(
            {c: pd.Series([], dtype="float64") for c in estimator.classes_},
            columns=pd.Index(estimator.classes_),
        )
    dtype = estimator.classes_.dtype if is_classifier(estimator) else np.float64
    return pd.Series([], dtype=dtype, name=label)


def _predict_part(
    part: pd.DataFrame, estimator, proba: bool, by_name: bool, meta: pd.Series | pd.DataFrame
) -> pd.Series | pd.DataFrame:
    """Predict one partition (an empty one gives an empty result: estimators refuse 0 rows)."""
    if part.empty:
        return meta.set_axis(part.index)
    X = part if by_name else part.to_numpy()
    try:
        out = estimator.predict_proba(X) if proba else estimator.predict(X)
    except ValueError as err:
        # Only now, when the estimator refused the rows, are they looked at again for
        # NaN or infinity: a partition it predicts costs no second pass.
        if bad := _non_finite(part):
            raise ValueError(
                f"cannot predict {type(estimator).__name__} on rows with missing (NaN) or "
                f"infinite feature values: {bad} (of this partition's {len(part)} rows); "
                "drop or fill those rows before predicting"
            ) from err
        raise
    if proba:
        return pd.DataFrame(out, index=part.index, columns=meta.columns)
    return pd.Series(out, index=part.index, name=meta.name, dtype=meta.dtype)


def _non_finite(part: pd.DataFrame) -> str:
    """Each numeric column of ``part`` holding NaN or infinite values, with how many rows
    hold each (``"x1: 3 NaN, x2: 1 infinite"``); empty if none does."""
    counts = []
    for name, column in part.select_dtypes("number").items():
        values = column.to_numpy(dtype="float64", na_value=np.nan)
        missing, infinite = int(np.isnan(values).sum()), int(np.isinf(values).sum())
        kinds = [f"{n} {kind}" for n, kind in ((missing, "NaN"), (infinite, "infinite")) if n]
        if kinds:
            counts.append(f"column {name!r} has {' and '.join(kinds)}")
    return "; ".join(counts)
