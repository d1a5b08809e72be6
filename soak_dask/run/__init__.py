"""Running a plan: the executor, what runs on a worker, one-pass statistics, row caps,
checkpoints and the cluster."""
