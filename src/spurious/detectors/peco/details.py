"""Details of a PECO result: per-example scores, clusters, example sentences, Fig. 8.

:func:`example_scores` is the per-example score table; :func:`cluster_table` lists
every cluster (size, label counts, divergences, biased flag); :func:`region_examples`
samples example sentences of each biased region; :func:`projection` draws a seeded
sample on a 2-D map (t-SNE or PCA, Fig. 1); :func:`cartography_comparison` compares
cartography's confidence in biased and other clusters when the run has a cartography
result (Sec. 6.1, Fig. 8).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import mannwhitneyu

from spurious.context import RunContext
from spurious.data.dataset import Dataset
from spurious.detectors.peco.score import PecoFit

#: Examples shown per biased region in the report.
EXAMPLES_PER_REGION = 5
#: Bins of the Fig. 8 confidence histograms.
CONFIDENCE_BINS = 10


def cluster_table(
    fit: Any, names: np.ndarray, biased: np.ndarray, p_values: np.ndarray
) -> list[dict[str, Any]]:
    """One row per cluster: size, label counts, dominant label, divergences, biased flag."""
    rows = []
    for i, counts in enumerate(fit.counts):
        size = int(counts.sum())
        top = int(counts.argmax())
        rows.append(
            {
                "cluster": i,
                "size": size,
                "counts": {str(names[j]): int(c) for j, c in enumerate(counts)},
                "dominant_label": str(names[top]),
                "dominant_share": float(counts[top] / size) if size else 0.0,
                "divergence_l2": float(fit.divergences["l2"][i]),
                "divergence_kl": float(fit.divergences["kl"][i]),
                "p_value": float(p_values[i]),
                "biased": bool(biased[i]),
            }
        )
    return rows


def region_examples(
    dataset: Dataset,
    clusters: np.ndarray,
    biased: np.ndarray,
    majority: np.ndarray,
    names: np.ndarray,
    seed: int,
) -> list[dict[str, Any]]:
    """Example sentences of each biased region (a seeded sample, dominant label first)."""
    rng = np.random.default_rng(seed)
    labels = np.asarray(dataset.labels)
    fields = dataset.task.text_fields
    texts = {f: dataset.texts(f) for f in fields}
    out = []
    for c in np.flatnonzero(biased):
        rows = np.flatnonzero(clusters == c)
        dominant = rows[labels[rows] == majority[c]]
        pick = rng.choice(dominant, size=min(EXAMPLES_PER_REGION, len(dominant)), replace=False)
        out.append(
            {
                "cluster": int(c),
                "dominant_label": str(names[majority[c]]),
                "examples": [
                    {
                        "id": str(dataset.ids[i]),
                        "label": str(names[labels[i]]),
                        **{f: texts[f][i] for f in fields},
                    }
                    for i in sorted(pick)
                ],
            }
        )
    return out


def projection(
    Z: np.ndarray,
    y: np.ndarray,
    clusters: np.ndarray,
    biased: np.ndarray,
    method: str,
    sample: int,
    seed: int,
) -> dict[str, Any]:
    """2-D map of a seeded sample (Fig. 1): coordinates, label, cluster, biased flag."""
    from scipy import sparse

    rng = np.random.default_rng(seed)
    n = Z.shape[0]
    rows = np.sort(rng.choice(n, size=min(sample, n), replace=False))
    pts = Z[rows]
    if sparse.issparse(pts):
        pts = pts.toarray()
    if method == "tsne" and len(rows) > 5:
        from sklearn.manifold import TSNE

        perplexity = float(min(30.0, (len(rows) - 1) / 3))
        xy = TSNE(n_components=2, init="pca", perplexity=perplexity, random_state=seed)
        coords = xy.fit_transform(np.asarray(pts, dtype=np.float32))
    else:
        from sklearn.decomposition import PCA

        method = "pca"
        coords = PCA(n_components=min(2, pts.shape[1]), random_state=seed).fit_transform(pts)
        if coords.shape[1] == 1:
            coords = np.c_[coords, np.zeros(len(coords))]
    return {
        "method": method,
        "x": np.round(coords[:, 0], 3).tolist(),
        "y": np.round(coords[:, 1], 3).tolist(),
        "label": y[rows].astype(int).tolist(),
        "cluster": clusters[rows].astype(int).tolist(),
        "biased": biased[clusters[rows]].tolist(),
        "n_total": int(n),
    }


def cartography_comparison(
    ctx: RunContext, scored: Dataset, in_region: np.ndarray
) -> dict[str, Any] | None:
    """Sec. 6.1 / Fig. 8: cartography confidence in biased vs other clusters, if at hand."""
    carto = ctx.results.get("cartography")
    if carto is None or not carto.ok or "confidence" not in carto.scores:
        return None
    conf = carto.scores.set_index(carto.scores["id"].astype(str))["confidence"]
    ids = np.asarray(scored.ids, dtype=str)
    if not set(ids) <= set(conf.index):
        return None  # cartography scored another split
    c = conf.loc[ids].to_numpy(dtype=float)
    edges = np.linspace(0.0, 1.0, CONFIDENCE_BINS + 1)
    biased, other = c[in_region], c[~in_region]
    out: dict[str, Any] = {
        "details": {
            "bins": edges.tolist(),
            "biased": np.histogram(biased, edges)[0].tolist(),
            "other": np.histogram(other, edges)[0].tolist(),
        }
    }
    if len(biased) and len(other):
        out["confidence_biased"] = float(biased.mean())
        out["confidence_other"] = float(other.mean())
        out["confidence_mwu_p"] = float(mannwhitneyu(biased, other).pvalue)
    return out


def example_scores(
    scored: Dataset, fit: PecoFit, clusters: np.ndarray, in_region: np.ndarray
) -> pd.DataFrame:
    """Per example (dataset row order): its cluster, the cluster's label share and
    divergence, and whether it carries the dominant label of a biased region."""
    sizes = fit.counts.sum(axis=1)
    majority = fit.counts.argmax(axis=1)
    labels = np.asarray(scored.labels)
    names = np.asarray(scored.label_names, dtype=object)
    p_label = fit.counts[clusters, labels] / sizes[clusters]
    cluster_l2 = fit.divergences["l2"]
    return pd.DataFrame(
        {
            "id": scored.ids,
            "label": names[labels],
            "cluster": clusters,
            "cluster_size": sizes[clusters],
            "cluster_majority_label": names[majority[clusters]],
            "p_label_in_cluster": p_label,
            "divergence_l2": cluster_l2[clusters],
            "divergence_kl": fit.divergences["kl"][clusters],
            "in_biased_region": in_region,
            "peco_score": cluster_l2[clusters],
            "is_peco_issue": in_region & (labels == majority[clusters]),
        }
    )
