"""Does dask-ml's KMeans give the same labels for a seed whatever the chunking? And the
project's seeded k-means (``soak_dask.spatial_clusters``)?

Eight Gaussian blobs of 2,000 points; each method is run on the same points cut into
chunks/partitions of 16,000, 4,000 and 1,000 rows. Prints the adjusted Rand index against the
blobs and between chunkings (1.0 and "identical" mean the same labels).

Run: ``python -m benchmarks.kmeans_partitions``
"""

from __future__ import annotations

import warnings

import dask.array as da
import numpy as np
import pandas as pd
from sklearn.metrics import adjusted_rand_score

import soak_dask as sd


def main() -> None:
    warnings.filterwarnings("ignore")
    from dask_ml.cluster import KMeans

    rng = np.random.default_rng(0)
    centres = rng.uniform(0, 100, (8, 2))
    xy = np.concatenate([c + rng.normal(scale=2, size=(2000, 2)) for c in centres])
    truth = np.repeat(np.arange(8), 2000)
    frame = pd.DataFrame({"x": xy[:, 0], "y": xy[:, 1], "f": 0.0, "label": 0.5})
    runs: dict[str, dict[int, np.ndarray]] = {"dask-ml KMeans": {}, "spatial_clusters": {}}
    for rows in (16000, 4000, 1000):
        km = KMeans(n_clusters=8, random_state=3).fit(da.from_array(xy, chunks=(rows, 2)))
        runs["dask-ml KMeans"][rows] = np.asarray(km.labels_)
        table = sd.load_table(frame, label="label", coords=["x", "y"], rows_per_partition=rows)
        got = sd.spatial_clusters(table, 8, seed=3)
        runs["spatial_clusters"][rows] = got.data["cluster"].compute().to_numpy()
    for name, labels in runs.items():
        ari = {r: round(adjusted_rand_score(truth, lab), 4) for r, lab in labels.items()}
        same = [bool((labels[16000] == labels[r]).all()) for r in (4000, 1000)]
        between = [round(adjusted_rand_score(labels[16000], labels[r]), 4) for r in (4000, 1000)]
        print(f"{name}: ARI vs blobs {ari}; 16000 vs 4000/1000 identical {same}, ARI {between}")


if __name__ == "__main__":
    main()
