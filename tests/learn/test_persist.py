"""Saving a model with skops, loading it without running code from the file, and predicting a
multi-partition table with it."""

from __future__ import annotations

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier

from soak_dask import LassoCVClassifier, PrunedTreeClassifier, load_table
from soak_dask.learn.persist import (
    SavedModel,
    UntrustedModelError,
    load_model,
    predict_table,
    save_model,
)

TREE = "sklearn.tree._tree.Tree"
FEATURES = ["b1", "b2", "b3", "b4"]


class ShiftedRidge(Ridge):
    """A user's estimator: skops does not know it, so loading it must be trusted explicitly."""


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(240, len(FEATURES)))
    df = pd.DataFrame(X, columns=FEATURES, index=np.sort(rng.choice(10**6, 240, replace=False)))
    df["land"] = np.where(X[:, 0] + 0.5 * X[:, 1] + rng.normal(0, 0.5, 240) > 0, "crop", "forest")
    df["height"] = X @ [1.0, -2.0, 0.5, 0.0] + rng.normal(0, 0.1, 240)
    return df


def _fit(estimator, df: pd.DataFrame, label: str, as_array: bool):
    X = df[FEATURES].to_numpy() if as_array else df[FEATURES]
    return estimator.fit(X, df[label])


def assert_same(got: np.ndarray, expected: np.ndarray, exact: bool) -> None:
    """Classes and tree outputs are equal; a linear model's floats are equal here, but only to
    the last bit in general: BLAS may round the matrix product of a partition differently from
    that of the whole table."""
    if exact:
        assert np.array_equal(got, expected)
    else:
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-15)


# (estimator, label, fitted on a bare array, trusted types needed to load it)
CASES = {
    "logistic": (LogisticRegression(), "land", False, None),
    "pipeline": (make_pipeline(StandardScaler(), LogisticRegression()), "land", False, None),
    "sklearn_tree": (DecisionTreeClassifier(random_state=0), "land", False, [TREE]),
    "ridge": (Ridge(alpha=0.5), "height", False, None),
    "lasso_cv": (LassoCVClassifier(n_lambdas=20, random_state=0), "land", True, None),
    "pruned_tree": (PrunedTreeClassifier(random_state=0), "land", True, None),
}


@pytest.mark.parametrize("case", CASES)
def test_round_trip_predicts_a_multi_partition_table_as_in_memory(case, frame, tmp_path) -> None:
    estimator, label, as_array, trusted = CASES[case]
    model = _fit(estimator, frame, label, as_array)
    path = save_model(
        model,
        tmp_path / f"{case}.skops",
        features=FEATURES if as_array else None,
        label=label,
        metadata={"learner": case, "seed": 7},
    )
    loaded = load_model(path, trusted=trusted)

    assert isinstance(loaded, SavedModel) and type(loaded.estimator) is type(model)
    assert loaded.features == tuple(FEATURES) and loaded.label == label
    assert loaded.metadata["learner"] == case and loaded.metadata["seed"] == 7
    classifier = label == "land"
    assert loaded.task == ("classification" if classifier else "regression")
    assert loaded.metadata["classes"] == (["crop", "forest"] if classifier else None)

    X = frame[FEATURES].to_numpy() if as_array else frame[FEATURES]
    table = dd.from_pandas(frame.drop(columns=[label]), npartitions=4)
    assert table.npartitions >= 4
    predicted = loaded.predict(table)
    assert isinstance(predicted, dd.Series) and predicted.name == label
    result = predicted.compute()
    assert result.index.equals(frame.index)
    tree = case.endswith("tree")
    assert_same(result.to_numpy(), model.predict(X), exact=classifier or tree)
    if classifier:
        proba = loaded.predict_proba(table).compute()
        assert list(proba.columns) == ["crop", "forest"] and proba.index.equals(frame.index)
        assert_same(proba.to_numpy(), model.predict_proba(X), exact=tree)


def test_a_table_from_load_table_and_a_pandas_frame_predict_alike(frame, tmp_path) -> None:
    model = _fit(LogisticRegression(), frame, "land", as_array=False)
    loaded = load_model(save_model(model, tmp_path / "m.skops", label="land"))
    table = load_table(dd.from_pandas(frame, npartitions=5), label="land", features=FEATURES)
    from_table = predict_table(loaded, table).compute()
    from_pandas = predict_table(loaded, frame)
    assert isinstance(from_pandas, pd.Series)
    assert from_table.equals(from_pandas)
    # A fitted estimator without a file takes its features from its column names.
    assert predict_table(model, table).compute().equals(from_table)


def test_empty_partitions_give_empty_predictions(frame, tmp_path) -> None:
    model = _fit(Ridge(), frame, "height", as_array=False)
    loaded = load_model(save_model(model, tmp_path / "m.skops"))
    table = dd.from_pandas(frame, npartitions=4)
    none = loaded.predict(table[table["b1"] > 100]).compute()
    assert none.empty and none.dtype == np.float64


def test_a_custom_estimator_is_refused_until_trusted(frame, tmp_path) -> None:
    model = _fit(ShiftedRidge(), frame, "height", as_array=False)
    path = save_model(model, tmp_path / "custom.skops")
    name = f"{ShiftedRidge.__module__}.ShiftedRidge"
    with pytest.raises(UntrustedModelError, match=rf"not trusted: \['{name}'\].*trusted="):
        load_model(path)
    loaded = load_model(path, trusted=[ShiftedRidge])
    predicted = loaded.predict(dd.from_pandas(frame, npartitions=4)).compute()
    assert_same(predicted.to_numpy(), model.predict(frame[FEATURES]), exact=False)


def test_a_sklearn_tree_needs_trust_but_a_pruned_tree_does_not(frame, tmp_path) -> None:
    tree = _fit(DecisionTreeClassifier(random_state=0), frame, "land", as_array=False)
    with pytest.raises(UntrustedModelError, match=rf"{TREE} outside a soak_dask pruned tree"):
        load_model(save_model(tree, tmp_path / "tree.skops"))
    pruned = _fit(PrunedTreeClassifier(random_state=0), frame, "land", as_array=False)
    assert load_model(save_model(pruned, tmp_path / "pruned.skops")).estimator.get_n_leaves() > 1


@pytest.mark.parametrize("field", ["children_left", "feature"])
def test_a_crafted_pruned_tree_is_refused(field, frame, tmp_path) -> None:
    model = _fit(PrunedTreeClassifier(random_state=0), frame, "land", as_array=False)
    getattr(model.tree_.tree_, field)[0] = 10**6  # a view on the node array: corrupts the tree
    path = save_model(model, tmp_path / "crafted.skops")
    with pytest.raises(UntrustedModelError, match="point outside it"):
        load_model(path)


def test_a_pruned_tree_shared_with_another_holder_is_refused(frame, tmp_path) -> None:
    """Another holder could hand the tree rows of a width the pruned tree never checked."""
    model = _fit(PrunedTreeClassifier(random_state=0), frame, "land", as_array=False)
    model.spare_ = [model.tree_]  # skops keeps the sharing: one object, two holders
    with pytest.raises(UntrustedModelError, match="outside a soak_dask pruned tree"):
        load_model(save_model(model, tmp_path / "shared.skops"))


def test_overwrite_replaces_only_its_own_files(frame, tmp_path) -> None:
    model = _fit(LogisticRegression(), frame, "land", as_array=False)
    path = save_model(model, tmp_path / "m.skops", metadata={"seed": 1})
    with pytest.raises(FileExistsError, match="overwrite=True"):
        save_model(model, path, metadata={"seed": 2})
    save_model(model, path, overwrite=True, metadata={"seed": 2})
    assert load_model(path).metadata["seed"] == 2

    foreign = tmp_path / "foreign.skops"
    sio.dump(model, foreign)  # a skops file, but not one soak_dask wrote
    notes = tmp_path / "notes.txt"
    notes.write_text("keep me")
    for other in (foreign, notes):
        before = other.read_bytes()
        with pytest.raises(FileExistsError, match=f"refusing to overwrite {other}"):
            save_model(model, other, overwrite=True)
        assert other.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["foreign.skops", "m.skops", "notes.txt"]
    with pytest.raises(ValueError, match="not written by soak_dask.save_model"):
        load_model(foreign)


def test_bad_input_is_named(frame, tmp_path) -> None:
    model = _fit(LogisticRegression(), frame, "land", as_array=False)
    loaded = load_model(save_model(model, tmp_path / "m.skops"))
    table = dd.from_pandas(frame.drop(columns=["b3"]), npartitions=4)
    with pytest.raises(ValueError, match=r"feature column\(s\) \['b3'\] missing"):
        loaded.predict(table)
    array_fit = _fit(LogisticRegression(), frame, "land", as_array=True)
    with pytest.raises(ValueError, match=r"without column names: pass features="):
        save_model(array_fit, tmp_path / "a.skops")
    with pytest.raises(ValueError, match=r"features has 2 names but the model takes 4"):
        save_model(array_fit, tmp_path / "a.skops", features=["b1", "b2"])
    with pytest.raises(ValueError, match=r"metadata keys \['features'\]"):
        save_model(model, tmp_path / "b.skops", metadata={"features": []})
    ridge = load_model(save_model(_fit(Ridge(), frame, "height", False), tmp_path / "r.skops"))
    with pytest.raises(ValueError, match="proba=True needs a classifier"):
        ridge.predict_proba(frame)
