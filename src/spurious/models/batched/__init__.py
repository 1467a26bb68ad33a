"""Batched logistic regression: AFLite's ``m`` linear classifiers fitted together.

:class:`BatchedLogisticRegression` implements :class:`~spurious.models.partition.PartitionModel`.
Classifier ``j`` minimises scikit-learn's ``LogisticRegression(C=C)`` objective on the rows
``train_idx[j]`` (divided by ``C t``, the same minimiser)::

    mean_i CE(x_i W_j + b_j, y_i) + ||W_j||^2 / (2 C t)

with an unpenalised intercept. Multinomial when a classifier's training rows hold three or
more classes; binary (one weight vector, as scikit-learn does) when they hold two.

Design
------
* **One matmul for many classifiers.** A group of ``chunk_size`` classifiers is evaluated
  with one GEMM ``X @ W_group`` (``W_group`` is ``d x chunk_size*(k-1)``) over all ``N``
  rows; each classifier then gathers the logits of its own ``t`` rows, and its gradient
  rows are scattered into a zero ``N x chunk_size*(k-1)`` matrix so that a second GEMM
  ``G^T X`` gives every classifier's gradient. This spends ``N/t`` times the minimal FLOPs
  but runs at dense GEMM speed. Per-classifier gathers (``t x d @ d x (k-1)``) would be
  memory-bound: this machine streams ~10 GB/s, i.e. ~1.3 s per evaluation for gathering
  ``m t d`` floats at the paper's SNLI scale, against ~2 s of float32 GEMM that also
  does the work. Gathered copies of the rows are never materialised; memory beyond ``X``
  is O(N chunk_size k) plus the O((d k)^2) preconditioner.
* **k-1 logits per classifier.** The minimiser has zero-sum class weights (the loss is
  invariant to adding a vector to every class, the penalty is not), so weights live in an
  orthonormal zero-sum basis: ``k-1`` GEMM columns per classifier instead of ``k``, same
  objective. A classifier whose rows hold two classes is binary (scikit-learn's binary
  objective, one weight vector); absent classes are never predicted.
* **Optimiser.** Full-batch L-BFGS (float64 state, history 10) per classifier, batched
  with masks: each classifier has its own history, step and line search and stops on its
  own when the max-abs gradient of its objective, in the original parameters ``(W, b)``
  and class space, is at most ``tol`` (scikit-learn's ``gtol`` for ``lbfgs``) or after
  ``max_iter`` iterations. The line search brackets the zero of the directional
  derivative (secant steps; accepts ``-0.9 <= phi'(a)/|phi'(0)| <= 0.5``) and never
  compares loss values, which are too coarse once logits are rounded to bfloat16.
* **Preconditioning and warm start.** A *pooled* model (the same objective, same
  ``lambda = 1/(C t)``, fitted on a fixed strided subsample of ``X``) gives a shared
  starting point; the exact Hessian of the objective at the pooled solution, estimated on
  ``hessian_rows`` rows, gives a shared preconditioner: every classifier runs L-BFGS with
  that Hessian's inverse as its initial inverse Hessian ``H0`` (the same iterates as
  plain L-BFGS in coordinates where that Hessian is the identity, at one ``(D, D)``
  product per iteration, in float32, where a change of variables costs two per
  evaluation; rescaling ``H0`` by ``s'y/y'y`` made iteration counts erratic).
  Classifiers trained on random subsets of the same data start close to their solution
  and see nearly that Hessian, so a handful of iterations suffice (5-8 at the benchmark
  settings against 40-100+ for scikit-learn). Start and preconditioner depend on ``X``,
  ``y``, ``t`` and the hyperparameters only, never on which classifiers are fitted, and
  the penalty stays on the original weights, so each minimiser is scikit-learn's.
* **One start for many calls.** Building the start (pooled fit, Hessian GEMMs, a
  Cholesky inverse of a ``(D, D)`` matrix) cost 50-57% of an AFLite round at 10k x 1,536
  although a round changes ~2% of the rows. :meth:`~BatchedLogisticRegression.shared_start`
  builds it once as a :class:`SharedStart` (plain arrays) that ``fit_predict(...,
  start=...)`` reuses; AFLite builds it once per run on the initial data D. A start
  computed on D is still close for later rounds (7-8 iterations per classifier in
  round 21 of SNLI dev as in round 1), and being a fixed function of the inputs it keeps
  results chunk-invariant and a resumed run exact.
* **Which start.** The pooled start costs a second Hessian and ``(D, D)`` inverse,
  bounded whatever ``N``, and saves a few iterations per classifier, each a GEMM over
  all ``N`` rows: it pays over many fits or on large ``X``, not for one call of 16
  classifiers on 10k rows (SNLI dev, 1,536-d, m = 16, one call: start + fits 4.7 s
  pooled, 2.4 s from the covariance start at zero with t = 984; 10.4 vs 2.9 s with
  t = 4,096; at m = 64 the pooled start's extra 3.1 s came back after about 10
  rounds). ``precondition="auto"`` (default)
  takes the covariance start below ``(d + 1) / 3`` planned fits on at most 20k rows
  (``shared_start(..., n_fits=)``; a call's own start plans its ``m``), else the pooled
  one. AFLite plans ``m`` times the rounds D allows (capped by ``max_rounds``): its
  quick profile (m = 16, 3 rounds) and its shuffled-label checks take the covariance
  start, its default run (m = 64, until tau) the pooled one.
* **Threads.** On CPU, groups whose forward + gradient GEMM is small (under
  :attr:`~BatchedLogisticRegression.parallel_groups_below` FLOPs, e.g. 10k x 1,536)
  run in parallel, whole groups on worker threads with one intra-op thread each; larger
  groups run one after another with every thread inside the GEMMs. L-BFGS on a group is
  hundreds of small float64 operations per iteration, and torch's intra-op threads
  synchronise on each: on 2 busy cores (load 4-7) a round at 10k x 1,536 took 5-19 s
  with torch's default 2 intra-op threads against 0.9-2.0 s with one, and the pooled
  start 18.6 s against 6.4 s. A small group's arithmetic is therefore that of a
  one-thread run whatever the machine's thread count. Large groups get torch's thread
  count only while the machine has idle cores for it (else one thread: at 100k x 768
  on the busy 2 cores, 2 threads took 2.2-2.9x the wall time of one); the policy and its
  measurements are :mod:`spurious.utils.threads`'s.
* **Chunk invariance.** Classifiers are processed in fixed groups of ``chunk_size``
  consecutive rows of ``train_idx`` (the last group padded with inert copies), and every
  tensor operation has the same shape in every group, so a classifier's result depends
  only on its own rows, its position in its group, ``X`` and ``y``. Calling
  ``fit_predict`` on ``train_idx[a:b]`` with ``a`` a multiple of ``chunk_size`` therefore
  returns exactly (bitwise) the rows ``a:b`` of the full call. A split elsewhere moves a
  classifier to another column of the GEMM, and MKL's float32 GEMM rounds a column
  differently depending on its position and on the number of columns, so executors
  should split at multiples of :attr:`group_size` (``spurious.detectors.aflite`` does).
  Bitwise equality also assumes the same device and dtype, the same start (built per
  call on the same ``X``, or the same :class:`SharedStart`), and, for large groups only,
  the same torch thread count.
* **Precision.** ``dtype="float32"`` (default) runs everything in float32 (float64
  optimiser state). ``"bfloat16"`` trains on a centred bfloat16 copy of ``X`` (GEMMs
  with float32 accumulation, ~2.7x the float32 rate on CPUs with AVX512-BF16); its
  gradients carry ~1e-5 rounding noise, which the original-space stopping rule multiplies
  by the features' common mean (embeddings have a large one), so in bfloat16 ``tol``
  applies to the gradient w.r.t. the centred features' weights (same minimiser).
  Predictions are always made in float32.
* **Devices.** ``device="cuda"`` runs the same code with every tensor on the GPU.
* **Sparse features.** A SciPy CSR ``X`` (bag of words, tf-idf) stays sparse
  (:mod:`~spurious.models.batched.sparse`): a group's training rows form one
  block-diagonal CSR matrix on each classifier's own columns, so its logits and gradient
  cost ``2 nnz r`` FLOPs per classifier (no ``N/t`` overhead, no scatter), and
  classifiers run plain L-BFGS from zero (no pooled start nor Hessian preconditioner:
  ``(d+1) r`` squared is out of reach at vocabulary sizes, and a diagonal one took more
  iterations), in the rows' coordinates ``W = X_j^T A`` when a partition has fewer rows
  than columns (the same iterates on shorter vectors; float32 L-BFGS memory). float32
  only.

Modules, in the order the data flows: :mod:`~spurious.models.batched.inputs` (argument
checks), :mod:`~spurious.models.batched.backend` (torch, devices, threads, precision),
:mod:`~spurious.models.batched.basis` (class bases), :mod:`~spurious.models.batched.objective`
(a group's gradient through shared GEMMs), :mod:`~spurious.models.batched.sparse` (CSR
features), :mod:`~spurious.models.batched.preconditioner`
(the initial inverse Hessian), :mod:`~spurious.models.batched.lbfgs` (the solver core and its
status codes), :mod:`~spurious.models.batched.start` (the shared start),
:mod:`~spurious.models.batched.predict` (predictions) and
:mod:`~spurious.models.batched.model` (:class:`BatchedLogisticRegression`).

Examples
--------
>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> X = rng.normal(size=(200, 5)).astype(np.float32)
>>> y = (X[:, 0] > 0).astype(np.int64)
>>> train_idx = np.stack([rng.permutation(200)[:50] for _ in range(4)])
>>> model = BatchedLogisticRegression(device="cpu")
>>> pred = model.fit_predict(X, y, train_idx, n_classes=2)
>>> pred.shape, pred.dtype.name
((4, 200), 'int16')
>>> bool((pred == y).mean() > 0.9)
True
"""

from spurious.models.batched.basis import class_basis, zero_sum_basis
from spurious.models.batched.lbfgs import (
    CONVERGED,
    LINE_SEARCH_FAILED,
    MAX_ITER,
    RUNNING,
    STATUS_NAMES,
)
from spurious.models.batched.model import DEFAULT_CHUNK_SIZE, BatchedLogisticRegression
from spurious.models.batched.start import SharedStart

__all__ = [
    "CONVERGED",
    "DEFAULT_CHUNK_SIZE",
    "LINE_SEARCH_FAILED",
    "MAX_ITER",
    "RUNNING",
    "STATUS_NAMES",
    "BatchedLogisticRegression",
    "SharedStart",
    "class_basis",
    "zero_sum_basis",
]
