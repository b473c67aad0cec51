"""Bradley-Terry strengths from all stored results, bootstrap intervals, and ranks with statistical ties.

Model: competitor ``i`` beats ``j`` with probability ``p_i / (p_i + p_j)``; a draw counts as half a win
for each side. The maximum-likelihood strengths are found by Newton's method on the (concave)
log-likelihood. To keep undefeated (or winless) competitors finite, every competitor also plays
``prior_games`` virtual games against a fixed virtual opponent of strength 1, half won and half lost:
a weak prior that also fixes the scale (a strength 0 in log space is the virtual opponent's).

Input: results are aggregated into pair counts (wins, draws and losses per pair of competitors) before
anything is fitted, so the cost depends on the numbers of competitors and of distinct pairs, never on
the number of results; the Django side (:mod:`tournament_manager.tie_fit`) aggregates in SQL.

Intervals: a Poisson bootstrap over the (pair, outcome) cells (each count ``c`` redrawn as Poisson(``c``),
all replicates refitted together by chord-Newton steps that reuse the point fit's Cholesky factor); when
that would be large (replicates x non-empty cells above :data:`MAX_BOOTSTRAP_CELLS`, e.g. a million
results between a thousand competitors), its closed-form limit instead: the variance of the linearised
bootstrap, ``H^-1 V H^-1`` (the sandwich estimator), with normal 95 % intervals - the same intervals to
within the bootstrap's Monte Carlo noise once every competitor has many games, in well under a second.

Memory and time: up to :data:`DENSE_MAX_COMPETITORS` competitors the Newton systems are dense ``n x n``
matrices solved by Cholesky (exact, fast at that size). Above it nothing ``n x n`` is ever built: the
Hessian is a sparse matrix with one entry per pair that played, solved either directly as a narrow band
(reverse Cuthill-McKee order: ladders whose competitors mostly meet their neighbours) or by conjugate
gradients (Jacobi preconditioner plus an exact correction of each connected group's common shift, the
direction only the weak prior pins), so memory and time grow with the number of pairs, not with ``n^2``.
The fitted strengths and bootstrap replicates are the same (the same maximum, to the solver's tolerance);
the linearised intervals' variance ``diag(H^-1 V H^-1)`` is then estimated from as many draws of the
linearised bootstrap as ``bootstrap`` asks for (normal scores with the covariance ``V``, one sparse solve
each) instead of the dense inverse: the same limit, with the bootstrap's own Monte Carlo noise.

Ties (:func:`rank_with_ties`): walking down the leaderboard order, a competitor shares the rank of the
current tie group's *leader* (its first, best-placed member) when their 95 % intervals overlap;
otherwise it starts a new group whose rank is its 1-based position (competition ranking: 1, 2, 2, 4).
Comparing with the leader rather than the previous member keeps a long chain of small overlaps from
tying the whole board.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.sparse
from scipy.sparse.csgraph import connected_components, reverse_cuthill_mckee
from threadpoolctl import threadpool_limits

from tournament_manager.ids import Id

#: Above this many (replicate x non-empty cell) units the bootstrap is replaced by its closed-form limit.
MAX_BOOTSTRAP_CELLS = 5_000_000
#: Up to this many competitors the Newton systems are dense (Cholesky); above, sparse (conjugate gradients).
DENSE_MAX_COMPETITORS = 1500
#: Largest banded factor (bandwidth x n elements, after reverse Cuthill-McKee ordering) solved directly;
#: wider systems (pairs spread across the whole board, where conjugate gradients converge fast) use CG.
BANDED_MAX_ELEMENTS = 8_000_000
#: Relative residual at which a conjugate-gradient solve stops (far below the fit's own tolerance).
CG_TOLERANCE = 1e-10
#: The same for the sampled variance's draws, whose own Monte Carlo noise is ~1/sqrt(2 x draws).
VARIANCE_CG_TOLERANCE = 1e-6
#: Elements of the (pairs x draws) block drawn at once by the sampled linearised variance (bounds memory).
_DRAW_BLOCK = 4_000_000
#: Two-sided 95 % standard normal quantile.
Z_95 = 1.959963984540054


@dataclass(frozen=True)
class BTFit:
    """Fitted log-strengths (``theta``) with bootstrap percentile intervals, indexed like the input."""

    theta: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    n_results: int
    iterations: int
    #: How the intervals were made: ``"bootstrap"``, ``"linearised"`` (its many-games limit) or ``"none"``.
    method: str = "bootstrap"
    #: The bootstrap refits, shape (replicates, n), when asked for (``keep_replicates``): intervals of any
    #: difference ``theta_a - theta_b`` come from them (:mod:`tournament_manager.settled`).
    replicates: np.ndarray | None = None


def _aggregate(n: int, i: np.ndarray, j: np.ndarray, outcome: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct pairs ``(low, high)`` and a (pairs, 3) table counting low's losses, draws and wins."""
    lo, hi = np.minimum(i, j), np.maximum(i, j)
    half_points = np.rint(np.where(i <= j, outcome, 1.0 - outcome) * 2).astype(np.int64)  # 0, 1, 2
    pair_key = lo * n + hi
    keys, inverse = np.unique(pair_key, return_inverse=True)
    table = np.bincount(inverse * 3 + half_points, minlength=keys.size * 3).reshape(keys.size, 3)
    return np.stack([keys // n, keys % n], axis=1), table.astype(np.float64)


def _check(n: int, i: np.ndarray, j: np.ndarray, outcome: np.ndarray) -> None:
    if not (i.shape == j.shape == outcome.shape and i.ndim == 1):
        raise ValueError("i, j and outcome must be 1-D arrays of the same length")
    if i.size and (min(i.min(), j.min()) < 0 or max(i.max(), j.max()) >= n):
        raise ValueError(f"competitor indices must be in 0..{n - 1}")
    if np.any(i == j):
        raise ValueError("a result must involve two different competitors")
    if not np.all(np.isin(outcome, (0.0, 0.5, 1.0))):
        raise ValueError("outcomes must be 1.0 (i wins), 0.5 (draw) or 0.0 (j wins)")


def aggregate_results(
    n: int,
    i: Sequence[int] | np.ndarray,
    j: Sequence[int] | np.ndarray,
    outcome: Sequence[float] | np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Pair counts of raw results: distinct pairs ``(low, high)`` and their (pairs, 3) outcome table.

    ``table[k]`` counts, for pair ``k``, the low index's losses, draws and wins: the input of
    :func:`fit_pair_counts`. Results are validated as in :func:`fit`.
    """
    i_arr, j_arr = np.asarray(i, dtype=np.int64), np.asarray(j, dtype=np.int64)
    out = np.asarray(outcome, dtype=np.float64)
    _check(n, i_arr, j_arr, out)
    return _aggregate(n, i_arr, j_arr, out)


def _hessian(n: int, pi: np.ndarray, pj: np.ndarray, w: np.ndarray, prior_curv: np.ndarray) -> np.ndarray:
    """Dense ``n x n`` negative Hessian: a Laplacian with pair weights ``w`` plus the prior's curvature."""
    off = np.bincount(pi * n + pj, weights=w, minlength=n * n).reshape(n, n)
    off += off.T
    hess = -off
    hess[np.diag_indices(n)] += off.sum(axis=1) + prior_curv
    return hess


class _DenseSystem:
    """A dense negative Hessian and its Cholesky factor."""

    def __init__(self, matrix: np.ndarray) -> None:
        self.matrix = matrix
        self.factor = scipy.linalg.cho_factor(matrix, check_finite=False)

    def solve(self, rhs: np.ndarray) -> np.ndarray:
        return scipy.linalg.cho_solve(self.factor, rhs, check_finite=False)


class _SparseSystem:
    """A sparse negative Hessian (an entry per pair that played), never expanded to ``n x n``.

    Solved directly when its pairs form a narrow band once reordered (reverse Cuthill-McKee): a ladder
    whose competitors mostly meet their neighbours, where the band's Cholesky factor is small and
    iterative solvers are slowest. Otherwise by conjugate gradients, preconditioned by Jacobi plus an exact
    correction along each connected group's constant vector: the Laplacian part of the Hessian is blind to
    a common shift of a group, which only the weak prior's curvature pins, and that slow direction would
    otherwise cost hundreds of iterations.
    """

    def __init__(self, n: int, pi: np.ndarray, pj: np.ndarray, w: np.ndarray, prior_curv: np.ndarray) -> None:
        rows, cols = np.concatenate([pi, pj]), np.concatenate([pj, pi])
        off = scipy.sparse.csr_array((np.concatenate([w, w]), (rows, cols)), shape=(n, n))
        self.diag = np.bincount(pi, w, n) + np.bincount(pj, w, n) + prior_curv
        self.banded: tuple[np.ndarray, np.ndarray] | None = None
        order = reverse_cuthill_mckee(off, symmetric_mode=True).astype(np.int64)
        position = np.empty(n, dtype=np.int64)
        position[order] = np.arange(n)
        lo, hi = np.minimum(position[pi], position[pj]), np.maximum(position[pi], position[pj])
        width = int(np.max(hi - lo)) if pi.size else 0
        if (width + 1) * n <= BANDED_MAX_ELEMENTS:
            band = np.zeros((width + 1, n))  # upper form: band[width + i - j, j] = H[i, j], i <= j
            band[width] = self.diag[order]
            band[width + lo - hi, hi] = -w
            self.banded = (scipy.linalg.cholesky_banded(band, check_finite=False), order)
            return
        self.matrix = scipy.sparse.diags_array(self.diag, format="csr") - off
        _, labels = connected_components(off, directed=False)
        # 1_c^T H 1_c for each group c: the Laplacian part vanishes, the prior's curvature remains.
        self.group_curv = np.bincount(labels, prior_curv)
        self.groups = scipy.sparse.csr_array(
            (np.ones(n), (labels, np.arange(n))), shape=(self.group_curv.size, n)
        )
        self.labels = labels

    def _precondition(self, r: np.ndarray) -> np.ndarray:
        sums = self.groups @ r
        return r / self.diag[:, None] + (sums / self.group_curv[:, None])[self.labels]

    def solve(self, rhs: np.ndarray, tolerance: float = CG_TOLERANCE) -> np.ndarray:
        b = rhs.reshape(rhs.shape[0], -1)
        if self.banded is not None:
            factor, order = self.banded
            x = np.empty_like(b)
            x[order] = scipy.linalg.cho_solve_banded((factor, False), b[order], check_finite=False)
            return x.reshape(rhs.shape)
        x = np.zeros_like(b)
        r = b.copy()
        z = self._precondition(r)
        p = z.copy()
        rz = np.einsum("ij,ij->j", r, z)
        goal = tolerance * np.linalg.norm(b, axis=0)
        for _ in range(10 * rhs.shape[0] + 100):
            if np.all(np.linalg.norm(r, axis=0) <= goal):
                break
            q = self.matrix @ p
            pq = np.einsum("ij,ij->j", p, q)
            alpha = np.divide(rz, pq, out=np.zeros_like(rz), where=pq > 0)
            x += alpha * p
            r -= alpha * q
            z = self._precondition(r)
            rz_new = np.einsum("ij,ij->j", r, z)
            beta = np.divide(rz_new, rz, out=np.zeros_like(rz), where=rz > 0)
            p = z + beta * p
            rz = rz_new
        else:
            raise ArithmeticError("conjugate gradients did not converge")
        return x.reshape(rhs.shape)


def _system(
    n: int, pi: np.ndarray, pj: np.ndarray, w: np.ndarray, prior_curv: np.ndarray, dense: bool
) -> _DenseSystem | _SparseSystem:
    if dense:
        return _DenseSystem(_hessian(n, pi, pj, w, prior_curv))
    return _SparseSystem(n, pi, pj, w, prior_curv)


def _point_fit(
    n: int,
    pairs: np.ndarray,
    wins: np.ndarray,
    games: np.ndarray,
    prior_games: float,
    tol: float,
    max_iter: int,
    dense: bool,
) -> tuple[np.ndarray, _DenseSystem | _SparseSystem, int]:
    """Newton's method on the penalised log-likelihood; returns (theta, final negative Hessian, iterations).

    The penalised log-likelihood is strictly concave, so plain Newton steps converge in a handful of
    iterations (MM needs thousands here: it crawls along the overall scale, which only the weak prior pins).
    """
    pi, pj = pairs[:, 0], pairs[:, 1]
    theta = np.zeros(n)
    system: _DenseSystem | _SparseSystem | None = None
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007 - the count is returned
        prob = 1.0 / (1.0 + np.exp(theta[pj] - theta[pi]))  # P(low index beats high index)
        resid = wins - games * prob
        sig = 1.0 / (1.0 + np.exp(-theta))
        grad = np.bincount(pi, resid, n) - np.bincount(pj, resid, n) + prior_games * (0.5 - sig)
        system = _system(n, pi, pj, games * prob * (1.0 - prob), prior_games * sig * (1.0 - sig), dense)
        step = system.solve(grad)
        theta = theta + step
        if np.max(np.abs(step)) < tol:
            break
    assert system is not None  # max_iter >= 1
    return theta, system, it


def _bootstrap(
    n: int,
    pairs: np.ndarray,
    table: np.ndarray,
    theta: np.ndarray,
    system: _DenseSystem | _SparseSystem,
    replicates: int,
    seed: int,
    prior_games: float,
    tol: float,
    max_iter: int,
    weights: np.ndarray | None = None,
) -> np.ndarray:
    """Log-strengths of ``replicates`` Poisson-bootstrap refits, shape (replicates, n).

    With ``weights`` (one per pair) each redrawn count is multiplied by its pair's weight, as in the
    point fit: the raw results are what is resampled, the weighting is part of the estimator.

    Each non-empty (pair, outcome) cell's count ``c`` is redrawn as Poisson(``c``) (the Poisson bootstrap:
    the same limit as resampling the results with replacement, but cells are independent, so no raw
    result is ever needed). Each replicate is refitted by chord Newton steps that reuse the Cholesky factor
    of the point fit's Hessian: replicates sit close to the point estimate, where that Hessian is accurate,
    so a few cheap steps reach the replicate's own maximum (its gradient, not an approximation, is zeroed).
    Replicates are processed in chunks to bound memory.
    """
    cells = np.flatnonzero(table.ravel())
    counts = table.ravel()[cells]
    cell_pair = cells // 3
    score = (cells % 3) * 0.5  # low index's points: loss 0, draw 0.5, win 1
    pi, pj = pairs[:, 0], pairs[:, 1]
    n_pairs = pairs.shape[0]
    rng = np.random.default_rng(seed)
    chunk = int(max(1, min(replicates, 4_000_000 // max(1, cells.size + n_pairs))))
    out = np.empty((replicates, n))
    for start in range(0, replicates, chunk):
        b = min(chunk, replicates - start)
        draws = rng.poisson(counts, size=(b, cells.size)).astype(np.float64)
        if weights is not None:
            draws *= weights[cell_pair][None, :]
        flat = (np.arange(b)[:, None] * n_pairs + cell_pair).ravel()
        games = np.bincount(flat, draws.ravel(), b * n_pairs).reshape(b, n_pairs)
        wins = np.bincount(flat, (draws * score).ravel(), b * n_pairs).reshape(b, n_pairs)
        gi = (np.arange(b)[:, None] * n + pi).ravel()
        gj = (np.arange(b)[:, None] * n + pj).ravel()
        th = np.repeat(theta[None, :], b, axis=0)
        for _ in range(max_iter):
            prob = 1.0 / (1.0 + np.exp(th[:, pj] - th[:, pi]))
            resid = (wins - games * prob).ravel()
            grad = np.bincount(gi, resid, b * n) - np.bincount(gj, resid, b * n)
            grad = grad.reshape(b, n) + prior_games * (0.5 - 1.0 / (1.0 + np.exp(-th)))
            step = system.solve(np.ascontiguousarray(grad.T)).T
            th += step
            if np.max(np.abs(step)) < tol:
                break
        out[start : start + b] = th
    return out


def _linearised_variance(
    n: int,
    pairs: np.ndarray,
    table: np.ndarray,
    theta: np.ndarray,
    system: _DenseSystem | _SparseSystem,
    draws: int,
    seed: int,
    weights: np.ndarray | None = None,
) -> np.ndarray:
    """Variance of each log-strength under the linearised (one-step) Poisson bootstrap, in closed form.

    One chord step from the estimate on Poisson-resampled counts moves it by ``H^-1 g`` where ``g`` is
    the resampled data's score: a sum over cells of ``(N_c - c) a_c`` with independent ``N_c ~ Poisson(c)``
    and ``a_c`` the cell's per-result score (``s - p`` to the low index, the opposite to the high one).
    Its covariance is exactly ``V = sum_c c a_c a_c^T`` (a graph Laplacian), so the step's covariance is
    ``H^-1 V H^-1`` (the sandwich estimator): what the bootstrap's spread converges to when games are
    many, with no Monte Carlo noise and no refits.

    With a sparse system (many competitors) no ``n x n`` inverse is formed: the variance is the mean
    square of ``draws`` linearised-bootstrap steps ``H^-1 g``, each ``g = B^T (sqrt(w) * z)`` with ``B`` the
    pairs' incidence matrix, ``w`` the pairs' weights in ``V`` and ``z`` standard normal per pair (so
    ``Cov(g) = V`` exactly), solved in blocks of draws whose size bounds the memory, to a relative residual
    of :data:`VARIANCE_CG_TOLERANCE` (far below the draws' own noise).
    """
    pi, pj = pairs[:, 0], pairs[:, 1]
    prob = 1.0 / (1.0 + np.exp(theta[pj] - theta[pi]))
    scores = np.array([0.0, 0.5, 1.0])
    weight = np.sum(table * (scores[None, :] - prob[:, None]) ** 2, axis=1)
    if weights is not None:
        weight = weight * weights**2  # a pair's score is its weight times its raw results'
    if isinstance(system, _DenseSystem):
        meat = _hessian(n, pi, pj, weight, np.zeros(n))
        inverse = system.solve(np.eye(n))
        return np.maximum(np.einsum("ij,ji->i", inverse @ meat, inverse), 0.0)
    n_pairs = pairs.shape[0]
    rows = np.repeat(np.arange(n_pairs), 2)
    incidence_t = scipy.sparse.csr_array(
        (np.tile([1.0, -1.0], n_pairs), (pairs.ravel(), rows)), shape=(n, n_pairs)
    )
    root = np.sqrt(weight)[:, None]
    rng = np.random.default_rng(seed)
    solve_block = int(max(1, min(draws, _DRAW_BLOCK // max(1, 4 * n))))  # CG keeps ~6 (n, block) arrays
    draw_block = int(max(1, min(solve_block, _DRAW_BLOCK // max(1, n_pairs))))
    total = np.zeros(n)
    for start in range(0, draws, solve_block):
        scores = np.empty((n, min(solve_block, draws - start)))
        for at in range(0, scores.shape[1], draw_block):
            b = min(draw_block, scores.shape[1] - at)
            scores[:, at : at + b] = incidence_t @ (root * rng.standard_normal((n_pairs, b)))
        steps = system.solve(scores, VARIANCE_CG_TOLERANCE)
        total += np.einsum("ij,ij->i", steps, steps)
    return total / draws


def fit_pair_counts(
    n: int,
    pairs: np.ndarray,
    table: np.ndarray,
    *,
    bootstrap: int = 100,
    seed: int = 0,
    prior_games: float = 2.0,
    tol: float = 1e-8,
    max_iter: int = 100,
    max_bootstrap_cells: int = MAX_BOOTSTRAP_CELLS,
    dense_max_competitors: int = DENSE_MAX_COMPETITORS,
    weights: np.ndarray | None = None,
    keep_replicates: bool = False,
) -> BTFit:
    """Fit Bradley-Terry log-strengths of competitors ``0..n-1`` from pair counts.

    ``weights`` (one per pair, > 0): each pair's results count that many times in the likelihood
    (:func:`pair_weights` makes every pair that played count the same, whatever the schedule); the
    bootstrap resamples the raw counts and applies the same weights. ``keep_replicates`` keeps the
    bootstrap refits in ``BTFit.replicates``.

    ``pairs`` is (P, 2) with ``pairs[k, 0] < pairs[k, 1]``; ``table`` is (P, 3): the losses, draws and
    wins of the low index against the high one (see :func:`aggregate_results`). The cost depends on the
    number of distinct pairs and competitors, never on the number of results: a dense ``n x n`` Newton
    system up to ``dense_max_competitors`` competitors, a sparse one (memory and time proportional to the
    pairs) above, and vectorised bootstrap refits. Linear algebra runs on one thread: on a busy shared
    worker, multi-threaded BLAS is ten times slower, not faster.

    Intervals: the percentile interval of ``bootstrap`` Poisson-bootstrap refits when ``bootstrap`` times
    the number of non-empty (pair, outcome) cells is at most ``max_bootstrap_cells``; beyond that, the
    limit that bootstrap tends to when every competitor has many games (see :func:`_linearised_variance`),
    at a fraction of the cost. ``BTFit.method`` says which was used.
    """
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    table = np.asarray(table, dtype=np.float64).reshape(-1, 3)
    if pairs.shape[0] != table.shape[0]:
        raise ValueError("pairs and table must have one row per pair")
    if pairs.size and (pairs.min() < 0 or pairs.max() >= n or np.any(pairs[:, 0] >= pairs[:, 1])):
        raise ValueError(f"pairs must be (low, high) indices in 0..{n - 1} with low < high")
    if np.any(table < 0):
        raise ValueError("counts must be >= 0")
    if prior_games <= 0:
        raise ValueError("prior_games must be > 0 (it keeps undefeated competitors finite)")
    if weights is not None:
        weights = np.asarray(weights, dtype=np.float64).reshape(-1)
        if weights.shape[0] != pairs.shape[0] or np.any(weights <= 0) or not np.all(np.isfinite(weights)):
            raise ValueError("weights must be one finite number > 0 per pair")
    with threadpool_limits(limits=1, user_api="blas"):
        return _fit_pair_counts(
            n,
            pairs,
            table,
            bootstrap,
            seed,
            prior_games,
            tol,
            max_iter,
            max_bootstrap_cells,
            n <= dense_max_competitors,
            weights,
            keep_replicates,
        )


def _fit_pair_counts(
    n: int,
    pairs: np.ndarray,
    table: np.ndarray,
    bootstrap: int,
    seed: int,
    prior_games: float,
    tol: float,
    max_iter: int,
    max_bootstrap_cells: int,
    dense: bool,
    weights: np.ndarray | None = None,
    keep_replicates: bool = False,
) -> BTFit:
    weighted = table if weights is None else table * weights[:, None]
    games = weighted.sum(axis=1)
    wins = weighted[:, 2] + 0.5 * weighted[:, 1]
    theta, system, iterations = _point_fit(n, pairs, wins, games, prior_games, tol, max_iter, dense)
    lower, upper = theta.copy(), theta.copy()
    m = int(np.rint(table.sum()))
    method = "none"
    replicates = None
    if bootstrap > 0 and m > 0:
        if bootstrap * np.count_nonzero(table) <= max_bootstrap_cells:
            boot = _bootstrap(
                n, pairs, table, theta, system, bootstrap, seed, prior_games, tol * 100, max_iter, weights
            )
            replicates = boot if keep_replicates else None
            lower, upper = np.percentile(boot, [2.5, 97.5], axis=0)
            lower, upper = np.minimum(lower, theta), np.maximum(upper, theta)
            method = "bootstrap"
        else:
            variance = _linearised_variance(n, pairs, table, theta, system, bootstrap, seed, weights)
            half = Z_95 * np.sqrt(variance)
            lower, upper = theta - half, theta + half
            method = "linearised"
    return BTFit(
        theta=theta,
        lower=lower,
        upper=upper,
        n_results=m,
        iterations=iterations,
        method=method,
        replicates=replicates,
    )


def fit(
    n: int,
    i: Sequence[int] | np.ndarray,
    j: Sequence[int] | np.ndarray,
    outcome: Sequence[float] | np.ndarray,
    *,
    bootstrap: int = 100,
    seed: int = 0,
    prior_games: float = 2.0,
    tol: float = 1e-8,
    max_iter: int = 100,
    max_bootstrap_cells: int = MAX_BOOTSTRAP_CELLS,
    dense_max_competitors: int = DENSE_MAX_COMPETITORS,
) -> BTFit:
    """Fit Bradley-Terry log-strengths of competitors ``0..n-1`` from results ``(i[k], j[k], outcome[k])``.

    ``outcome`` is 1.0 when ``i`` won, 0.5 for a draw and 0.0 when ``j`` won. Intervals are the 2.5th
    and 97.5th percentiles of ``bootstrap`` refits on resampled results (deterministic for a ``seed``);
    with ``bootstrap=0`` they equal the point estimate. Same as :func:`fit_pair_counts` on
    :func:`aggregate_results`.
    """
    pairs, table = aggregate_results(n, i, j, outcome)
    return fit_pair_counts(
        n,
        pairs,
        table,
        bootstrap=bootstrap,
        seed=seed,
        prior_games=prior_games,
        tol=tol,
        max_iter=max_iter,
        max_bootstrap_cells=max_bootstrap_cells,
        dense_max_competitors=dense_max_competitors,
    )


def pair_weights(table: np.ndarray, cap: float | None = None) -> np.ndarray:
    """Weights that keep the schedule out of the estimate.

    Without ``cap`` (inverse-sampling weights): pair ``k``'s weight is ``mean games per pair / games of
    pair k``, every pair that played counts the same. With ``cap``: ``min(1, cap / games of pair k)``,
    a pair counts as at most ``cap`` results (uniform coverage): a ladder that replays its close
    neighbours far more often than anything else cannot make them count more, and pairs with few results
    are not blown up to the weight of well-measured ones. Either way, once every pair has played (at least
    ``cap`` times), the weighted fit is the round robin's Bradley-Terry fit.
    """
    games = np.asarray(table, dtype=np.float64).reshape(-1, 3).sum(axis=1)
    if games.size == 0:
        return games
    if np.any(games <= 0):
        raise ValueError("every pair must have played")
    if cap is not None:
        if cap <= 0:
            raise ValueError(f"cap must be > 0, got {cap}")
        return np.minimum(1.0, cap / games)
    return games.mean() / games


def rank_with_ties(order: Sequence[Id], intervals: Mapping[Id, tuple[float, float]]) -> dict[Id, int]:
    """Ranks for ``order`` (best first) where statistically indistinguishable neighbours share a rank.

    A competitor joins the current tie group when its interval overlaps the interval of the group's
    leader (the group's first member); it then gets the leader's rank. Otherwise, and always when it
    or the leader has no interval, it leads a new group ranked by its 1-based position.
    """
    ranks: dict[Id, int] = {}
    leader: Id | None = None
    for pos, cid in enumerate(order, start=1):
        mine = intervals.get(cid)
        lead = intervals.get(leader) if leader is not None else None
        if mine is not None and lead is not None and mine[0] <= lead[1] and lead[0] <= mine[1]:
            ranks[cid] = ranks[leader]
        else:
            ranks[cid] = pos
            leader = cid
    return ranks
