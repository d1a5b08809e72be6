"""Learners: the built-in ones (lasso_cv and the pruned tree of the SOAK paper among them)
and the measures that score them."""
