"""A straightforward NumPy/SciPy questionnaire, written for the benchmarks only.

Same algorithm as skorg (SPEC 2-5), none of its engineering: dense folder-averaging
matrices, ``scipy.spatial.distance.cdist(..., "cityblock")``, full ``eigh`` and a
Python join loop. It is the baseline that skorg's timings are divided by.
"""

from __future__ import annotations

import numpy as np
from scipy.spatial.distance import cdist


def cosine(X):
    norms = np.linalg.norm(X, axis=1)
    den = np.outer(norms, norms)
    C = np.divide(X @ X.T, den, out=np.zeros((X.shape[0],) * 2), where=den > 0)
    C[C < 0] = 0
    np.fill_diagonal(C, 1.0)
    return C


def markov_eigs(A, k=12):
    A = A * (A > 1e-8)
    r = A.sum(1) + 1e-15
    P = A / np.outer(r, r)
    q = np.sqrt(P.sum(1)) + 1e-15
    S = P / np.outer(q, q)
    vals, vecs = np.linalg.eigh(S)
    idx = np.argsort(-np.abs(vals))[:k]
    vals, vecs = np.abs(vals[idx]), vecs[:, idx]
    psi = vecs / vecs[:, :1]
    psi *= np.sign(psi[0])
    return psi, vals


def join(D, c):
    m = D.shape[0]
    D = D + np.diag(np.full(m, np.inf))
    med = np.median(D)
    penalty = med / c
    rowmin = D.min(1)
    nn = D.argmin(1)
    cluster = list(range(m))
    joins = 0
    while True:
        i = int(np.argmin(rowmin))
        if not np.isfinite(rowmin[i]) or (rowmin[i] >= med and joins):
            break
        j = int(nn[i])
        ci, cj = cluster[i], cluster[j]
        si, sj = cluster.count(ci), cluster.count(cj)
        if si + sj == 2 or D[i, j] < penalty * 2.0 ** (1 - si * sj):
            cluster = [ci if x == cj else x for x in cluster]
            rowmin[i] = rowmin[j] = np.inf
            joins += 1
        else:
            D[i, j] = np.inf
            nn[i] = np.argmin(D[i])
            rowmin[i] = D[i, nn[i]]
    _, labels = np.unique(cluster, return_inverse=True)
    return labels, joins


def flexible_tree(A, c=1.0):
    """Folder labels per level (root first) and the leaf order."""
    psi, lam = markov_eigs(A)
    n = A.shape[0]
    labels = np.arange(n)
    levels = [labels]
    t = 1
    while labels.max() > 0:
        emb = psi * lam**t
        D = cdist(emb, emb)
        M = np.zeros((n, labels.max() + 1))
        M[np.arange(n), labels] = 1
        Dbar = (M.T @ D @ M) / np.outer(M.sum(0), M.sum(0))
        node_labels, joins = join(Dbar, c)
        if joins == 0:
            break
        labels = node_labels[labels]
        levels.append(labels)
        t *= 2
    if labels.max() > 0:
        levels.append(np.zeros(n, dtype=int))
    levels = np.array(levels[::-1])
    keys = []
    for row in levels[1:]:
        means = np.bincount(row, psi[:, 1]) / np.bincount(row)
        keys += [-means[row], row]
    order = np.lexsort(keys[::-1])
    return levels, order


def averaging_matrix(levels, alpha, beta):
    """Dense (n_folders x n) matrix of weighted folder averages."""
    n = levels.shape[1]
    rows = []
    for lvl, row in enumerate(levels):
        for label in np.unique(row):
            member = (row == label).astype(float)
            size = member.sum()
            rows.append(member / size * (size / n) ** beta * 2.0 ** (-alpha * lvl))
    return np.array(rows)


def emd_affinity(F):
    d = cdist(F, F, "cityblock")
    med = np.median(d)
    return np.exp(-d / (med if med > 0 else 1.0))


def questionnaire_2d(X, n_iter, alpha, beta, c=1.0, jacobi=True):
    row = flexible_tree(cosine(X), c)
    col = flexible_tree(cosine(X.T), c)
    for _ in range(n_iter):
        new_col = flexible_tree(emd_affinity((averaging_matrix(row[0], alpha, beta) @ X).T), c)
        source = col if jacobi else new_col
        row = flexible_tree(emd_affinity((averaging_matrix(source[0], alpha, beta) @ X.T).T), c)
        col = new_col
    return row, col


def _axis_features(X, axis, trees, alpha, beta):
    others = [a for a in range(3) if a != axis]
    Y = np.moveaxis(X, axis, 0)
    M1 = averaging_matrix(trees[others[0]][0], alpha, beta)
    M2 = averaging_matrix(trees[others[1]][0], alpha, beta)
    return np.stack([(M1 @ Y[t] @ M2.T).ravel() for t in range(Y.shape[0])])


def questionnaire_3d(X, n_iter, alpha, beta, c=1.0):
    trees = [flexible_tree(cosine(np.moveaxis(X, a, 0).reshape(X.shape[a], -1)), c) for a in (0, 1)]
    trees.append(None)
    for _ in range(n_iter):
        for axis in (2, 0, 1):
            trees[axis] = flexible_tree(
                emd_affinity(_axis_features(X, axis, trees, alpha, beta)), c
            )
    return trees
