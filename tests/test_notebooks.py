"""Execute the notebooks top to bottom in this interpreter's kernel and check what they claim.

Each notebook runs as a user would run it (``Run all``, working directory = ``notebooks/``),
with one cell appended that asserts the statements its Markdown makes about the results, so
the prose cannot drift from the numbers. Each notebook takes about a minute on two cores.

The notebooks are committed executed, so a reader sees the outputs. To refresh them after a
change, run ``.venv/bin/python -m tests.test_notebooks [NAME ...]`` from the repository root:
each notebook is executed as its test executes it (the claims must pass) and written back
with its outputs, without the claims cell.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell

from .conftest import shared_file

#: Subprocesses, clusters and notebooks: minutes, not seconds (`make test-fast` skips them).
pytestmark = pytest.mark.slow

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
KERNEL = "python3"
CELL_TIMEOUT = 300  # seconds per cell: generous for a loaded 2-core machine
# jupyter_client runs a kernel whose argv starts with one of these as sys.executable.
_SELF_NAMES = {"python", f"python{sys.version_info[0]}", "python{}.{}".format(*sys.version_info)}

# Appended to every notebook: the kernel must be this interpreter (the venv), not another.
SAME_PYTHON = f"import sys\nassert sys.prefix == {sys.prefix!r}, sys.prefix\n"

QUICKSTART_CLAIMS = """
p = res.soak.pvalues("error").set_index(["learner", "test_subset", "compare"])
base, logit = p.loc["featureless"], p.loc["logistic"]
# featureless: about 12 % everywhere, identical for every train type, so p is undefined
assert base["reference_mean"].between(10, 14).all(), base
assert (base["mean_diff"] == 0).all() and base["p"].isna().all(), base
assert base["reason"].str.contains("identical").all()
# logistic beats the baseline by far
assert (logit["reference_mean"] < base["reference_mean"] / 2).all(), logit
# NW and S: other clearly worse (a few points, p < 0.01); NE: not significant
for region in ["NW", "S"]:
    row = logit.loc[(region, "other")]
    assert 1 < row["mean_diff"] < 10 and row["p"] < 0.01, row
assert logit.loc[("NE", "other"), "p"] > 0.05
# all is closer to same than other is, for every region
diff = logit["mean_diff"].unstack("compare")
assert (diff["all"] < diff["other"]).all(), diff
assert len(fig.axes) == 6  # 2 learners x 3 test regions
assert (again["error"] == res["error"]).all()
"""

AZTREES_CLAIMS = """
assert REAL, "the real aztrees table was expected (the test checked it exists)"
assert pv["measure"].eq("error").all()
lg = pv[pv["learner"] == "logistic"].set_index(["data", "test_subset", "compare"])
for data in ["region3", "region4"]:
    ne = lg.loc[(data, "NE", "other")]
    assert 15 < ne["mean_diff"] < 30 and ne["p"] < 0.01, ne
    assert lg.loc[(data, "NE", "all"), "p"] > 0.05
    assert -2 < lg.loc[(data, "NW", "other"), "mean_diff"] < -0.5
assert lg.loc[("region3", "NW", "other"), "p"] < 0.05
assert 0.05 < lg.loc[("region4", "NW", "other"), "p"] < 0.1
for compare in ["other", "all"]:
    s = lg.loc[("region3", "S", compare)]
    assert s["mean_diff"] > 10 and 0.05 < s["p"] < 0.1, s
    assert lg.loc[("region4", "SE", compare), "p"] < 0.01
assert lg.loc[("region4", "SW", "other"), "p"] > 0.05
fl = pv[(pv["learner"] == "featureless") & (pv["test_subset"].isin(["NE", "NW", "S", "SE"]))]
assert fl["p"].isna().all() and (fl["mean_diff"] == 0).all(), fl
se = results["region4"].sel(learner="logistic", test_subset="SE")
small = se["n_test"].sel(train_type="same") < 10
assert int(small.sum()) >= 5 and int(se["n_test"].max()) > 1000, se["n_test"].values
assert float(se["error"].sel(train_type="same").max()) < 1
assert float(se["error"].sel(train_type=["other", "all"]).where(small).min()) >= 50
paper = pd.read_csv(PAPER).query("data == 'aztrees3'").set_index(["test_subset", "compare"])
ours = lg.loc["region3"]
assert (paper["same_mean"] < 2).all() and (paper["same_mean"] < ours["reference_mean"]).all()
assert (paper["p_paired"] < ours["p"]).all()  # the paper's CSV keeps its names
"""

CLUSTER_CLAIMS = """
assert scheduler == os.environ["SOAK_SCHEDULER"]
assert res.attrs["n_fits"] == 140 and res.attrs["n_distinct_train_sets"] == 70
assert res["error"].notnull().all()
"""

RASTER_CLAIMS = """
assert sorted(p.suffix for p in files.values()) == [".tif"] * 7
assert table.features == ("B02", "B03", "B04", "B08") and table.data.npartitions == 6
assert len(pixels) == int((scene["label"] != 255).sum())  # every labelled pixel, no other
p = pv.set_index(["learner", "test_subset", "compare"])
base, logit = p.loc["featureless"], p.loc["logistic"]
assert (base["mean_diff"] == 0).all() and base["p"].isna().all(), base
east, east_all = logit.loc[("east", "other")], logit.loc[("east", "all")]
assert 15 < east["mean_diff"] < 25 and east["p"] < 0.001, east
assert east["compare_mean"] > 4 * east["reference_mean"], east
assert 3 < east_all["mean_diff"] < 8 and east_all["p"] < 0.05, east_all
for region in ["west", "centre"]:
    other, pooled = logit.loc[(region, "other")], logit.loc[(region, "all")]
    assert 2 < other["mean_diff"] < 4 and other["p"] < 0.01, other
    assert 0 < pooled["mean_diff"] < 2, pooled
assert np.abs(gap).max() < 1e-9  # the mapped predictions give SOAK's per-fold errors
polygons = wrong.join(pixels[["region", "label", "polygon"]]).groupby("polygon").agg(
    region=("region", "first"), label=("label", "first"), **{t: (t, "mean") for t in wrong}
)
assert (polygons["same"] > 0.5).mean() < 0.03, polygons["same"].describe()
wholly = polygons[polygons["other"] > 0.9]
assert len(wholly) >= 3 and (wholly["region"] == "east").all(), wholly
assert (wholly["label"] == "tree").all(), wholly
assert (polygons["all"] > 0.9).sum() < len(wholly)
by_region = wrong.groupby(pixels["region"])["all"].mean()
assert by_region.idxmax() == "east", by_region
assert len(fig.axes) == 5  # labels, three train types, colour bar
assert errors.rio.crs == CRS and errors.sizes == {"train_type": 3, "y": H, "x": W}
"""

EVALUATE_CLAIMS = """
s = summary.set_index(["learner", "measure"])
assert res.attrs["measures"][0] == "balanced_accuracy"
# the numbers are evaluate's default: prior correction on, no calibration
assert res.attrs["prior_correction"] == 1 and res.attrs["calibration"] == ""
# the test split: 1,586 rows (27 %); polygon 108 (1,478 pixels) is in it, so in no fold
assert res.attrs["n_fits"] == 15 and int(res["n_test_split"].values[0]) == 1586
assert 0.26 < res.attrs["test_split"] < 0.28
assert folds["n_test"].between(869, 891).all() and folds["n_test"].max() < 1478
assert folds["auc"].notna().all() and (s.xs("auc", level="measure")["n"] == 5).all()
fl = folds.query("learner == 'featureless'")["error"]
assert fl.between(12.9, 13.4).all(), fl
assert 6.1 < s.loc[("featureless", "error"), "test_estimate"] < 6.3
assert (s.xs("balanced_accuracy", level="measure").loc["featureless"].filter(
    ["mean", "test_estimate"]) == 0.5).all()
lg, rf = s.loc["logistic"], s.loc["random_forest"]
# balanced accuracy: level over the folds, random forest ahead on the test split
ba_lg, ba_rf = lg.loc["balanced_accuracy"], rf.loc["balanced_accuracy"]
assert 0.86 < ba_lg["mean"] < 0.87 and 0.05 < ba_lg["sd"] < 0.056, ba_lg
assert 0.87 < ba_rf["mean"] < 0.88 and 0.065 < ba_rf["sd"] < 0.07, ba_rf
assert 0.945 < ba_lg["test_estimate"] < 0.95 < 0.985 < ba_rf["test_estimate"] < 0.995
assert 0.82 < ba_lg["test_low"] < 0.83 and 0.99 < ba_lg["test_high"] < 0.995
assert 0.945 < ba_rf["test_low"] < 0.955 and ba_rf["test_high"] == 1
# errors over the folds
assert 8.7 < lg.loc["error", "min"] < 8.8 and 26.5 < lg.loc["error", "max"] < 26.6
assert 14.9 < lg.loc["error", "mean"] < 15.1 and 7.7 < lg.loc["error", "sd"] < 7.8
assert 7.7 < rf.loc["error", "min"] < 7.8 and 33.1 < rf.loc["error", "max"] < 33.2
assert 21.3 < rf.loc["error", "mean"] < 21.4 and 12.2 < rf.loc["error", "sd"] < 12.3
# the test split is easy: errors far below the folds', AUC 1.00
assert 0.55 < lg.loc["error", "test_estimate"] < 0.65 and 0.05 < lg.loc["error", "test_low"] < 0.15
assert 18.2 < lg.loc["error", "test_high"] < 18.3
assert 0.05 < rf.loc["error", "test_estimate"] < 0.15 and rf.loc["error", "test_low"] < 0.05
assert 5.35 < rf.loc["error", "test_high"] < 5.45
assert lg.loc["auc", "test_estimate"] > 0.995 and rf.loc["auc", "test_estimate"] > 0.995
# the random forest ranks better, in every fold
auc = folds.pivot(index="fold", columns="learner", values="auc")
assert (auc["random_forest"] > auc["logistic"]).all(), auc
assert 0.935 < lg.loc["auc", "mean"] < 0.945 and 0.975 < rf.loc["auc", "mean"] < 0.985
c = {k: res.soak.compare("random_forest", "logistic", ["balanced_accuracy", "error", "auc"],
                         corrected=k).set_index("measure") for k in (False, True)}
assert list(c[True]["method"]) == ["corrected"] * 3
assert {"statistic", "ci_low", "ci_high", "note"} <= set(c[False].columns)
assert c[False].loc["auc", "n"] == 5 and 0.035 < c[False].loc["auc", "mean_diff"] < 0.045
assert c[False].loc["auc", "p"] < 0.0005 and 0.0015 < c[True].loc["auc", "p"] < 0.0025
assert 0 < c[False].loc["balanced_accuracy", "mean_diff"] < 0.01
assert 0.8 < c[False].loc["balanced_accuracy", "p"] < 0.82
assert 0.86 < c[True].loc["balanced_accuracy", "p"] < 0.88
assert 6.3 < c[False].loc["error", "mean_diff"] < 6.5
assert 0.16 < c[False].loc["error", "p"] < 0.18 and 0.32 < c[True].loc["error", "p"] < 0.34
assert len(fig.axes) == 2
"""

TRANSFER_CLAIMS = """
assert matrix.attrs["n_distinct_train_sets"] == 40 and matrix.attrs["n_fits"] == 80
assert gap == 0
lg = tests[tests["learner"] == "logistic"].set_index(["train_subset", "test_subset"])
assert (lg["verdict"] == "worse").sum() == 9 and (lg["verdict"] == "better").sum() == 0
for region in ["NE", "NW", "SW"]:
    assert lg.loc[("SE", region), "verdict"] == "worse" == lg.loc[(region, "SE"), "verdict"]
    assert lg.loc[("SE", region), "compare_mean"] > 40
assert lg.loc[("SE", "NW"), "compare_mean"] > 95 and lg.loc[("SE", "SE"), "reference_mean"] < 0.1
for cell in [("NW", "SW"), ("SW", "NW"), ("NE", "NW")]:
    assert lg.loc[cell, "verdict"] == "no evidence of a difference", cell
assert lg.loc[("NE", "NW"), "compare_mean"] < 1.1 < 6 < lg.loc[("NW", "NW"), "reference_mean"] < 6.1
assert 24 < lg.loc[("NW", "NE"), "compare_mean"] < 25
assert lg.loc[("NW", "NE"), "verdict"] == "worse"
nw_se = cells.set_index(["learner", "train_subset", "test_subset"]).loc[("logistic", "NW", "SE")]
assert round(nw_se["mean"], 1) == 70.6 and abs(nw_se["weighted_mean"] - 100 * 59 / 2432) < 1e-6
assert nw_se["estimates_differ"] and shift["worst"].any()
assert order[0] == "SE"
assert transfer_distance(matrix, "logistic").loc["NW", "SW"] == 0
s = pv.set_index(["test_subset", "compare", "reference"])
se, sw = s.loc[("SE", "greedy", "all")], s.loc[("SW", "greedy", "all")]
assert se["p"] < 0.001 and se["mean_diff"] < -70, se
assert sw["p"] < 0.05 and sw["mean_diff"] < -7, sw
for region in ["NE", "NW"]:
    row = s.loc[(region, "greedy", "same")]
    assert row["mean_diff"] < 0 and row["p"] > 0.05, row
ne = s.loc[("NE", "greedy", "same")]
assert 6.6 < ne["compare_mean"] < 6.8 and 8.8 < ne["reference_mean"] < 8.9, ne
stab = search_stability(found).set_index("test_subset")
assert stab.loc["SE", "modal_pool"] == "SE" and stab.loc["SE", "jaccard"] == 1
assert stab.loc["NW", "modal_pool"] == "NE+NW" and stab.loc["NW", "modal_share"] == 0.8
assert abs(stab.loc["SW", "jaccard"] - 0.77) < 0.01 and abs(stab.loc["NE", "jaccard"] - 0.56) < 0.01
assert int(found["inner_fits"].sel(learner="lda")) == 633
assert int(found["one_pass"].sel(learner="lda")) == 1
paper_tests = transfer_pvalues(transfer_from_soak(paper)).set_index(
    ["learner", "train_subset", "test_subset"]
)
assert paper_tests.loc[("cv_glmnet", "MNIST", "FashionMNIST"), "verdict"] == "worse"
assert paper_tests.loc[("cv_glmnet", "FashionMNIST", "MNIST"), "verdict"] == "worse"
assert len(fig.axes) == 6  # the paper figure: 2 learners x (dendrogram, heat map, colour bar)
"""

SENSITIVITY_CLAIMS = """
s = summary.set_index("ratio")
by_ratio = trials.set_index("ratio")
assert ds.attrs["n_fits"] == 240 and ds.attrs["group"] == "polygon"
assert (s["n_trials_used"] == 10).all()
# whole polygons, exact shares: within half a polygon of r; polygon 108 a quarter of the table
sizes = pd.read_parquet(path).groupby("polygon").size()
assert sizes.sum() == 5956 and str(sizes.idxmax()) == "108" and sizes.max() == 1478
assert ((trials["n_train"] - trials["ratio"] * sizes.sum()).abs() <= sizes.max() / 2).all()
assert list(s["ratio_used"].round(2)) == [0.51, 0.66, 0.81, 0.91], s["ratio_used"]
# polygon 108 trains in a trial iff one of its folds holds more than its 1,478 pixels
trains_108 = (ds["cv_n_test"].max("fold") > sizes.max()).to_pandas()
assert trains_108.sum(axis=1).tolist() == [6, 5, 10, 10], trains_108
share = ds["n_train"].sel(ratio=0.7).to_pandas() / sizes.sum()
assert share[~trains_108.loc[0.7]].between(0.60, 0.65).all(), share
assert by_ratio.loc[[0.8, 0.9], "n_test"].max() == 1238
assert by_ratio.loc[0.9, "n_test"].agg(["min", "max"]).tolist() == [367, 625]
# r = 0.5: the CV estimate noisier and pessimistic; small folds score low
assert s.loc[0.5, "cv_estimate_sd"] > 1.5 * s.loc[0.5, "test_score_sd"], s.loc[0.5]
r3 = s.round(3)
assert r3.loc[0.5, ["cv_estimate_sd", "test_score_sd"]].tolist() == [0.056, 0.033]
assert r3.loc[0.5, ["cv_estimate_mean", "test_score_mean"]].tolist() == [0.886, 0.934]
assert r3.loc[0.5, "cv_pooled_mean"] == 0.916 and s.loc[0.5, "trials_estimates_differ"] == 6
low = ds["cv_score"].sel(ratio=0.5) < 0.75
assert int(low.sum()) == 6 and round(float(ds["cv_score"].sel(ratio=0.5).min()), 2) == 0.27
assert float(ds["cv_n_test"].sel(ratio=0.5).where(low).max()) < 600
assert float(ds["cv_score"].sel(ratio=[0.7, 0.8, 0.9]).min()) >= 0.75
# from 0.7 on the test scores vary more, most at 0.9 (over four times)
later = s.loc[[0.7, 0.8, 0.9]]
assert (later["test_score_sd"] > later["cv_estimate_sd"]).all(), later
assert s["test_score_sd"].idxmax() == 0.9
assert s.loc[0.9, "test_score_sd"] > 4 * s.loc[0.9, "cv_estimate_sd"]
assert r3.loc[0.9, ["test_score_sd", "cv_estimate_sd"]].tolist() == [0.040, 0.009]
# the tests: Levene at 0.8 and 0.9, F and Pitman-Morgan at 0.7, 0.8 and 0.9
assert list(s.index[s["levene_p"] <= 0.05]) == [0.8, 0.9], s["levene_p"]
assert list(s.index[s["f_p"] <= 0.05]) == [0.7, 0.8, 0.9], s["f_p"]
assert list(s.index[s["pitman_morgan_p"] <= 0.05]) == [0.7, 0.8, 0.9], s["pitman_morgan_p"]
# negative correlation everywhere, -0.31 to -0.82, significant at 0.8 and 0.9 only
assert (s["correlation"] < 0).all()
assert [round(s["correlation"].max(), 2), round(s["correlation"].min(), 2)] == [-0.31, -0.82]
assert list(s.index[s["correlation_p"] <= 0.05]) == [0.8, 0.9], s["correlation_p"]
# every test score in its interval
assert trials["consistent"].all() and (s["consistent_share"] == 1).all()
# recommended 0.5 only; the best mean test score at 0.7, 0.5 1.7 points behind, 0.8 lowest
assert list(s.index[s["recommended"]]) == [0.5] and ds.attrs["recommended"] == ["0.5"]
assert list(s.index[s["best_test_score"]]) == [0.7] and s.loc[0.7, "test_score_behind_best"] == 0
assert r3.loc[0.7, "test_score_mean"] == 0.952
assert round(100 * s.loc[0.5, "test_score_behind_best"], 1) == 1.7
assert s["test_score_mean"].idxmin() == 0.8 and r3.loc[0.8, "test_score_mean"] == 0.927
assert round(100 * s.loc[0.8, "test_score_behind_best"], 1) == 2.5
assert r3["test_score_sd"].agg(["min", "max"]).tolist() == [0.025, 0.040]
assert len(fig.axes) == 1
"""

SAMPLING_CLAIMS = """
# most rows lie deep inside their class (degree 0), a few where the classes meet
share0 = counts.loc[0].sum() / counts.to_numpy().sum()
assert 0.8 < share0 < 0.9, share0
assert counts.index.max() == 5
# AEV of unscaled k-NN (k = 6) near the paper's 0.930 +- 0.018; LDA better
assert abs(float(res["aev"].sel(learner="knn6")) - 0.930) < 0.018
assert float(res["aev"].sel(learner="lda")) > float(res["aev"].sel(learner="knn6"))
assert list(res["sampling"].values) == [
    "random", "stratified", "clustering", "mdc", "doptimal", "overlap"
]
assert (res["n_train"] == 427).all()
assert table_mai.shape == (2, 14) and abs(table_mai.filter(like="MAI ")).max().max() < 4
assert len(fig.axes[0].get_xticklabels()) == 6
# overlap-balanced folds: degrees 0 and 1 spread evenly (each class within one row per fold)
for degree in (0, 1):
    assert per_fold.loc[degree].max() - per_fold.loc[degree].min() <= 2, per_fold
assert set(per_fold.columns) == {1, 2, 3, 4, 5}
err = res_soak["error"].mean("fold").to_series()
assert err.xs("lda", level="learner").iloc[0] < err.xs("featureless", level="learner").iloc[0] / 4
"""

SPATIAL_CLAIMS = """
assert len(sensors) == 42 and farm_aoa["di"].dims == ("y", "x")
# sd.extract: the sensors' means, in the raster's CRS, which the table keeps
assert sensors["SOURCEID"].is_unique and farm_table.crs == "EPSG:26911"
assert 0.85 < farm_share < 0.95, farm_share  # about nine cells in ten inside
assert int((farm_aoa["aoa"] == 0).sum()) > 0
# the sensors are spread: Gij below Gj, the KS rule keeps random folds, W equals random W
assert np.median(farm_folds.Gij) < np.median(farm_folds.Gj)
assert farm_folds.method == "random CV" and farm_folds.ks_pvalue >= 0.05
assert farm_folds.W == farm_folds.W_random and sum(farm_folds.fold_sizes) == 42
# the range of VW in metres: beyond the default semivariogram's reach, and so noted
assert farm_range.unit == "m" and farm_range.block_size == 500, farm_range
assert any("largest distance measured" in note for note in farm_range.notes)
assert longer.block_size == 400 and not longer.notes, longer
assert farm_range.share_random == farm_range.share_blocks == 1.0
assert farm_range.median_blocks > 2 * np.median(farm_folds.Gij)
assert 2000 < len(pixels) < 2600
assert len(cluster_sizes) == 5 and cluster_sizes.between(400, 500).all(), cluster_sizes
assert block_sizes.max() > 2 * block_sizes.min()
assert folds.method == "kmeans" and folds.W < folds.W_random / 1.5, (folds.W, folds.W_random)
assert np.median(folds.Gij) > 10 * np.median(folds.Gjstar_random)
k, r = summaries["kNNDM"], summaries["random"]
assert (r["nn_median"] == 10).all() and (k["nn_median"] > 100).all(), k
assert k["nn_median"].max() > 400, k
assert knndm_attrs["knndm_W"] == folds.W and knndm_attrs["knndm_W_random"] == folds.W_random
rf, lin = rmse.loc["random_forest"], rmse.loc["linear"]
assert 0.2 < rf["random"] < 0.3 and rf["random"] < lin["random"] / 3
assert 1.5 < rf["map"] < 1.7 and rf["map"] > 5 * rf["random"] and rf["map"] > lin["map"]
for row in (rf, lin):
    assert row["random"] < row["blocks"] < row["kNNDM"] < row["map"], row
assert abs(rf["kNNDM"] / lin["kNNDM"] - 1) < 0.02, rmse  # scored alike
assert 1.1 < rf["kNNDM"] < 1.15 and 1.1 < lin["kNNDM"] < 1.15, rmse
assert 0.08 < scene_share < 0.17, scene_share  # about one cell in eight
assert 1.0 < rmse_in < 1.1 and 1.45 < rmse_out < 1.55, (rmse_in, rmse_out)
assert abs(lin["kNNDM"] / rmse_in - 1) < 0.1  # kNNDM close to the error inside the AOA
# the farm's three outputs on one page, a section each
html = page.read_text()
assert page.name == "report.html" and html.count('<section class="store"') == 3, html[:500]
assert "Error profile" in html and "training points" in html  # recorded by write_aoa
assert farm_eval.attrs["fold"] == folded.fold == farm_folds.column  # the fold file, as it is
# the command-line walk's numbers (docs/spatial.md): the same threshold and profile
assert abs(page_aoa.attrs["threshold"] - 0.7186) < 5e-5, page_aoa.attrs["threshold"]
assert abs(low - 0.03414) < 5e-6 and abs(high - 0.05727) < 5e-6, (low, high)
farm_rmse = farm_eval["rmse"].mean("fold").sel(repeat=1)
assert farm_rmse.sel(learner="random_forest") > farm_rmse.sel(learner="featureless")
assert 0.035 < float(farm_rmse.sel(learner="featureless")) < 0.045, farm_rmse
"""

# Every notebook in notebooks/, with the claims its test appends.
CLAIMS = {
    "01_quickstart.ipynb": QUICKSTART_CLAIMS,
    "02_aztrees.ipynb": AZTREES_CLAIMS,
    "03_existing_cluster.ipynb": CLUSTER_CLAIMS,
    "04_raster.ipynb": RASTER_CLAIMS,
    "05_evaluate.ipynb": EVALUATE_CLAIMS,
    "06_split_sensitivity.ipynb": SENSITIVITY_CLAIMS,
    "07_balanced_sampling.ipynb": SAMPLING_CLAIMS,
    "08_transfer.ipynb": TRANSFER_CLAIMS,
    "09_spatial.ipynb": SPATIAL_CLAIMS,
}


def _runs_this_python(manager: KernelSpecManager) -> bool:
    try:
        argv = manager.get_kernel_spec(KERNEL).argv
    except NoSuchKernel:
        return False
    return argv[0] in _SELF_NAMES or os.path.abspath(argv[0]) == os.path.abspath(sys.executable)


def venv_kernel() -> str:
    """The ``python3`` kernel, made to run this interpreter (installed into sys.prefix if not)."""
    if not _runs_this_python(KernelSpecManager()):
        from ipykernel.kernelspec import install

        install(prefix=sys.prefix, kernel_name=KERNEL)
    manager = KernelSpecManager()
    if not _runs_this_python(manager):
        spec = manager.get_kernel_spec(KERNEL)
        raise RuntimeError(
            f"kernel {KERNEL!r} runs {spec.argv[0]} (from {spec.resource_dir}), not the venv"
        )
    return KERNEL


@pytest.fixture(scope="module")
def kernel() -> str:
    return venv_kernel()


def execute(name: str, kernel: str, checks: str) -> nbformat.NotebookNode:
    """Run notebook ``name`` with ``checks`` appended as a last cell; return it with outputs."""
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    nb.cells.append(new_code_cell(SAME_PYTHON + checks))
    client = NotebookClient(
        nb,
        kernel_name=kernel,
        timeout=CELL_TIMEOUT,
        resources={"metadata": {"path": str(NOTEBOOKS)}},
        record_timing=False,  # no timestamps in the stored notebooks
    )
    client.execute()
    return nb


def stream_text(nb: nbformat.NotebookNode) -> str:
    return "".join(
        out.get("text", "")
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.outputs
        if out.output_type == "stream"
    )


@contextmanager
def _environ(values: Mapping[str, str | None]) -> Iterator[None]:
    """Set (a str) or unset (None) environment variables, restored afterwards."""
    saved = {name: os.environ.get(name) for name in values}
    try:
        for name, value in values.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextmanager
def notebook_setting(name: str, tmp: Path) -> Iterator[str]:
    """The environment notebook ``name`` runs in; yields the claims to append to it.

    The kernel (and its Dask workers) write temporary files under ``tmp``; the AZtrees notebook
    gets the real table; the cluster notebook gets a scheduler and two workers of its own.
    """
    checks = CLAIMS[name]
    with ExitStack() as stack:
        stack.enter_context(_environ({"TMPDIR": str(tmp)}))
        if name == "02_aztrees.ipynb":
            shared_file("aztrees.parquet")  # the notebook finds it itself, relative to its folder
            paper = shared_file("paper", "soak_paper_paired_ttests.csv")
            stack.enter_context(_environ({"AZTREES_PARQUET": None}))
            checks = f"PAPER = {str(paper)!r}\n" + checks
        if name == "08_transfer.ipynb":
            shared_file("aztrees.parquet")  # the notebook finds both itself, relative to its folder
            shared_file("paper", "soak_paper_fold_scores.csv")
            stack.enter_context(_environ({"AZTREES_PARQUET": None}))
        if name == "09_spatial.ipynb":
            shared_file("cast", "cookfarm.parquet")  # the notebook finds both itself
            shared_file("cast", "predictors_2012-03-25.tif")
        if name == "03_existing_cluster.ipynb":
            cluster_dir = tmp / "cluster"
            cluster_dir.mkdir()
            address = stack.enter_context(dask_processes(cluster_dir))
            stack.enter_context(_environ({"SOAK_SCHEDULER": address}))
        yield checks


def run_notebook(name: str, kernel: str, tmp: Path) -> nbformat.NotebookNode:
    """Execute notebook ``name`` in its setting, its claims appended and checked."""
    with notebook_setting(name, tmp) as checks:
        return execute(name, kernel, checks)


def test_every_notebook_is_tested() -> None:
    assert sorted(p.name for p in NOTEBOOKS.glob("*.ipynb")) == sorted(CLAIMS)


@pytest.mark.parametrize("name", sorted(CLAIMS))
def test_notebook_is_stored_executed(name: str) -> None:
    """Committed with the outputs of one top-to-bottom run, without errors, and small."""
    path = NOTEBOOKS / name
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert [c.execution_count for c in code] == list(range(1, len(code) + 1))
    outputs = [o for c in code for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert not [o for o in outputs if "Traceback" in o.get("text", "")]
    assert "sys.prefix ==" not in path.read_text()  # the appended claims cell is not stored
    assert path.stat().st_size < 1_000_000
    assert nb.metadata["kernelspec"]["name"] == KERNEL


def n_images(nb: nbformat.NotebookNode) -> int:
    return sum(
        "image/png" in out.get("data", {})
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.outputs
    )


def test_quickstart(kernel: str, tmp_path: Path) -> None:
    nb = run_notebook("01_quickstart.ipynb", kernel, tmp_path)
    assert "90 splits, 70 distinct fits" in stream_text(nb)
    assert n_images(nb), "the figure cell displayed no image"


def test_aztrees_on_the_real_table(kernel: str, tmp_path: Path) -> None:
    nb = run_notebook("02_aztrees.ipynb", kernel, tmp_path)
    assert "Using the real AZtrees table" in stream_text(nb)


def test_raster_from_geotiffs(kernel: str, tmp_path: Path) -> None:
    nb = run_notebook("04_raster.ipynb", kernel, tmp_path)
    assert "largest difference from SOAK's per-fold error: 0 points" in stream_text(nb)
    assert n_images(nb) == 1, "the map cell displayed no image"


def test_evaluate_on_aztrees(kernel: str, tmp_path: Path, monkeypatch) -> None:
    shared_file("aztrees.parquet")  # the notebook finds it itself, relative to its folder
    monkeypatch.delenv("AZTREES_PARQUET", raising=False)
    nb = run_notebook("05_evaluate.ipynb", kernel, tmp_path)
    assert "Using the real AZtrees table" in stream_text(nb)
    assert n_images(nb) == 1, "the figure cell displayed no image"


def test_split_sensitivity_on_aztrees(kernel: str, tmp_path: Path, monkeypatch) -> None:
    shared_file("aztrees.parquet")  # the notebook finds it itself, relative to its folder
    monkeypatch.delenv("AZTREES_PARQUET", raising=False)
    nb = run_notebook("06_split_sensitivity.ipynb", kernel, tmp_path)
    assert "Using the real AZtrees table" in stream_text(nb)
    assert n_images(nb) == 1, "the figure cell displayed no image"


def test_balanced_sampling(kernel: str, tmp_path: Path) -> None:
    nb = run_notebook("07_balanced_sampling.ipynb", kernel, tmp_path)
    assert n_images(nb) == 1, "the figure cell displayed no image"


def test_transfer_on_aztrees(kernel: str, tmp_path: Path) -> None:
    nb = run_notebook("08_transfer.ipynb", kernel, tmp_path)
    assert "largest difference between the diagonal and SOAK's same: 0 points" in stream_text(nb)
    assert n_images(nb) == 3


def test_09_spatial_on_cast_and_a_scene(kernel: str, tmp_path: Path) -> None:
    nb = run_notebook("09_spatial.ipynb", kernel, tmp_path)
    assert "method 'random CV'" in stream_text(nb) and "method 'kmeans'" in stream_text(nb)
    assert n_images(nb) == 5  # farm AOA, farm kNNDM, scene kNNDM, scene AOA, farm workflow AOA
    assert "distances in m)" in stream_text(nb)  # spatial_range in the raster CRS's metres


def _cell_source(nb_name: str, cell_id: str) -> str:
    nb = nbformat.read(NOTEBOOKS / nb_name, as_version=4)
    return next(c.source for c in nb.cells if c.get("id") == cell_id)


def test_aztrees_falls_back_to_a_lookalike(tmp_path: Path, monkeypatch, capsys) -> None:
    """Without the real table, the data cell generates one with the same roles and says so."""
    import soak_dask as sd

    monkeypatch.setenv("AZTREES_PARQUET", str(tmp_path / "absent.parquet"))
    namespace: dict[str, Any] = {}
    exec(_cell_source("02_aztrees.ipynb", "aztrees-01"), namespace)
    exec(_cell_source("02_aztrees.ipynb", "aztrees-03"), namespace)
    assert namespace["REAL"] is False
    assert "GENERATED lookalike" in capsys.readouterr().out
    df = namespace["source"]
    assert len(df) == 5_956
    assert set(df["y"]) == {"Tree", "Not tree"}
    assert set(df["region3"]) == {"NE", "NW", "S"}
    assert set(df["region4"]) == {"NE", "NW", "SE", "SW"}
    assert df.groupby("polygon")[["region4", "y"]].nunique().max().max() == 1
    # region4 has the smaller subsets: each needs rows in all 10 folds.
    table = sd.load_table(
        df, label="y", subset="region4", group="polygon", features=namespace["FEATURES"]
    )
    folded = sd.assign_folds(table, n_folds=10, seed=1)
    blocks = sd.block_counts(folded).groupby(["region4", folded.fold])["n"].sum()
    assert len(blocks) == 4 * 10 and (blocks > 0).all()


def test_existing_cluster_needs_the_variable(monkeypatch) -> None:
    monkeypatch.delenv("SOAK_SCHEDULER", raising=False)
    with pytest.raises(RuntimeError, match="SOAK_SCHEDULER is not set"):
        exec(_cell_source("03_existing_cluster.ipynb", "cluster-01"), {})


def _stop(proc: subprocess.Popen) -> None:
    """Terminate a process we started (and its children: same session), then kill it."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _wait_for(condition, what: str, procs: list, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        dead = [p.args for p in procs if p.poll() is not None]
        if dead or time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}; exited: {dead}")
        time.sleep(0.5)


def _address(scheduler_file: Path) -> str | None:
    """The address in a complete scheduler file, else None (absent or still being written)."""
    try:
        return json.loads(scheduler_file.read_text())["address"]
    except (FileNotFoundError, json.JSONDecodeError, KeyError):
        return None


@contextmanager
def dask_processes(tmp_path: Path) -> Iterator[str]:
    """A scheduler and two single-threaded workers as separate processes; yields the address."""
    from distributed import Client

    dask = Path(sys.executable).with_name("dask")
    scheduler_file = tmp_path / "scheduler.json"
    common = ["--dashboard-address", ":0"]
    commands = [
        [
            dask,
            "scheduler",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            *common,
            "--scheduler-file",
            scheduler_file,
        ],
        *(
            [
                dask,
                "worker",
                "--scheduler-file",
                scheduler_file,
                "--nthreads",
                "1",
                *common,
                "--name",
                f"worker-{i}",
                "--local-directory",
                tmp_path / f"worker-{i}",
            ]
            for i in range(2)
        ),
    ]
    procs: list[subprocess.Popen] = []
    try:
        for i, cmd in enumerate(commands):
            with open(tmp_path / f"process-{i}.log", "wb") as log:
                procs.append(
                    subprocess.Popen(
                        [str(a) for a in cmd],
                        cwd=tmp_path,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,  # its own process group, killed as one
                    )
                )
            if i == 0:
                _wait_for(lambda: _address(scheduler_file), "the scheduler file", procs)
        address = _address(scheduler_file)
        with Client(address, timeout="60s") as client:
            client.wait_for_workers(2, timeout=120)
        yield address
    finally:
        for proc in reversed(procs):
            _stop(proc)


def test_existing_cluster(kernel: str, tmp_path: Path) -> None:
    nb = run_notebook("03_existing_cluster.ipynb", kernel, tmp_path)  # its own processes
    assert re.search(r"connected to tcp://127\.0\.0\.1:\d+: 2 workers, 2 threads", stream_text(nb))


def main(names: list[str]) -> None:
    """Execute notebooks as their tests do and store them with their outputs (no claims cell)."""
    unknown = sorted(set(names) - set(CLAIMS))
    if unknown:
        raise SystemExit(f"unknown notebooks {unknown}; notebooks: {sorted(CLAIMS)}")
    kernel = venv_kernel()
    for name in names or sorted(CLAIMS):
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="soak-notebook-") as tmp:
            nb = run_notebook(name, kernel, Path(tmp))
        nb.cells.pop()  # the claims cell: checked above, not stored
        nbformat.write(nb, NOTEBOOKS / name)
        size = (NOTEBOOKS / name).stat().st_size
        print(f"{name}: executed in {time.monotonic() - started:.0f} s, {size:,} bytes")


if __name__ == "__main__":
    main(sys.argv[1:])
