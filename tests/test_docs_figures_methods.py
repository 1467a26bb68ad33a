"""Figures the method pages quote equal the committed results they come from.

``test_docs_figures.py`` checks the README; this module checks ``docs/methods/*.md``. An
entry of ``FIGURES`` names a page, a result file (``bench/results/``), the key path of one
value in it and how the page prints it. A builder below turns a sentence that lists
several values of one result into the text the page must hold (``PHRASES``), or a table
row into the cells that one line of the page must hold (``ROWS``). Bold markup is
ignored; prose is compared with whitespace normalised. Re-running a benchmark whose
figures change then fails here until the page follows.

The entries are each page's headline figures (effect sizes and their intervals, kept and
removed counts, accuracies, speed ratios), and the list grows as benchmarks are re-run.
Not checked: figures from the papers, runs whose JSON is not committed, differences a
page takes from its own rounded cells, and values that sit exactly halfway at the
printed precision in a JSON that stores them rounded (either rounding is right).
"""

from __future__ import annotations

import difflib
from typing import Any

import pytest

from tests._figures import ROOT, normalised, result, value

METHODS = ROOT / "docs" / "methods"


def _prose(page: str) -> str:
    """The page's text, whitespace normalised, bold markup dropped."""
    return normalised(METHODS / f"{page}.md").replace("**", "")


def _lines(page: str) -> list[str]:
    """The page's lines, bold markup dropped."""
    return (METHODS / f"{page}.md").read_text(encoding="utf-8").replace("**", "").splitlines()


def _pt(x: float) -> str:
    """A share in points, one decimal: 0.2878 -> '28.8'."""
    return f"{100 * x:.1f}"


def _listed(items: list[str]) -> str:
    """'a, b, c and d', as the prose lists values."""
    return ", ".join(items[:-1]) + " and " + items[-1]


#: (what, page, result file, key path of the value, how the page prints it)
# fmt: off
FIGURES: list[tuple[str, str, str, tuple[Any, ...], str]] = [
    ("eval mode: pool kept", "aflite", "aflite_snli.json",
     ("modes", "eval", "aflite", "n_final"), "the pool went 9,824 → {:,}"),
    ("eval mode: dev AF-selected", "aflite", "aflite_snli.json",
     ("modes", "eval", "aflite", "stages_dev", "af_selected"), "dev 9,842 → {:,} AF-selected"),
    ("union mode: kept", "aflite", "aflite_snli.json",
     ("modes", "union", "aflite", "n_final"), "U went 19,666 → {:,}"),
    ("control: flipped rows removed", "aflite", "aflite_synthetic.json",
     ("flipped_bias_original", "flipped_removed_fraction_mean"), "only {:.1%} of the flipped rows"),
    ("sparse round, bag of words, vs sklearn", "aflite", "aflite_sparse.json",
     ("features", "bow", "speedup_cpu_vs_sklearn", "batched"), "per partition ({:.1f}x)"),
    ("sparse round, tf-idf, vs sklearn", "aflite", "aflite_sparse.json",
     ("features", "tfidf", "speedup_cpu_vs_sklearn", "batched"), "({:.1f}x); predictions agree"),
    ("MLP evaluator: full model", "amplified_splits", "amplify_snli_cartography.json",
     ("table1", "cartography", "full", "mean"), "scored {:.1%} on cartography's"),
    ("MLP evaluator: biased training", "amplified_splits", "amplify_snli_cartography.json",
     ("table1", "cartography", "biased", "mean"), "% and {:.1%}, so"),
    ("1M rows", "associations", "atlas_scale.json",
     ("associations_1000_permutations", "1000000", "associations_cpu_s_heuristics_cached"),
     "and {:.1f} s at 1M"),
    ("1M rows, wall", "associations", "atlas_scale.json",
     ("associations_1000_permutations", "1000000", "associations_wall_s"), "({:.1f} s wall;"),
    ("heuristics of 1M pairs", "associations", "atlas_scale.json",
     ("associations_1000_permutations", "1000000", "heuristics_cpu_s"), "time took {:.0f} s CPU"),
    ("1M pairs", "atlas", "atlas_scale.json",
     ("unigrams", "1000000", "atlas_wall_s"), "{:.1f} s wall (= CPU)"),
    ("1M pairs: flagged", "atlas", "atlas_scale.json",
     ("unigrams", "1000000", "hypothesis_n_flagged"), "At 1M resampled pairs {:,} of"),
    ("1M pairs: tested", "atlas", "atlas_scale.json",
     ("unigrams", "1000000", "hypothesis_n_tested"), "of {:,} hypothesis tokens are flagged"),
    ("SNLI dev: flagged", "atlas", "atlas_real.json",
     ("atlas", "snli_dev", "per_field", "hypothesis", "n_significant_bonferroni"),
     "at 10k SNLI pairs {} hypothesis tokens"),
    ("SNLI dev: share holding one", "atlas", "atlas_real.json",
     ("atlas", "snli_dev", "per_field", "hypothesis", "share_examples_flagged"),
     "and {:.0%} of examples hold one"),
    ("SST-2: significant under the prior", "atlas", "atlas_real.json",
     ("atlas", "sst2_train", "per_field", "text", "n_significant_bonferroni"),
     "vs {} tokens significant"),
    ("bias model temperature", "debiasing", "debiasing.json",
     ("snli", "bias_model", "temperature"), "epochs with T = {:.2f}"),
    ("bias model ECE before", "debiasing", "debiasing.json",
     ("snli", "metrics", "bias_model_ece_before"), "dev ECE {:.3f} ->"),
    ("bias model ECE after", "debiasing", "debiasing.json",
     ("snli", "metrics", "bias_model_ece"), "-> {:.3f}; with it"),
    ("LearnedMixin+H dev accuracy", "debiasing", "debiasing.json",
     ("snli", "metrics", "accuracy_learned_mixin_h"), "H = 0.074 ({:.3f} after 30 epochs"),
    ("planted: PoE", "debiasing", "debiasing.json",
     ("planted", "reliance", "poe", "share_removed"), "PoE removes {:.0%} of"),
    ("planted: LearnedMixin+H", "debiasing", "debiasing.json",
     ("planted", "reliance", "learned_mixin_h", "share_removed"), "LearnedMixin+H {:.0%} (55%"),
    ("planted: ConfReg", "debiasing", "debiasing.json",
     ("planted", "reliance", "conf_reg", "share_removed"), "ConfReg {:.0%}, reweighting"),
    ("planted: reweighting", "debiasing", "debiasing.json",
     ("planted", "reliance", "reweight", "share_removed"), "reweighting {:.0%}."),
    ("small: warm-up adversary kept", "fairness", "fairness_snli_small.json",
     ("n_selected", "minilm_ft"), "keeps {:,.0f} of 9,842 dev pairs"),
    ("small: warm-up adversary share", "fairness", "fairness_snli_small.json",
     ("metrics", "selected_fraction_minilm_ft"), "dev pairs ({:.1%};"),
    ("small: headline p", "fairness", "fairness_snli_small.json",
     ("headline", "evidence", "p_value"), "(p = {:.2f} after the Bonferroni"),
    ("easy examples", "partial_input", "leakage_easy_auc.json",
     ("n_easy",), "right on {:,} of 9,842"),
    ("TRA mean", "partial_input", "finetune.json",
     ("tra_snli_9842", "tra_mean"), "| {:.3f} (median"),
    ("relevance on the hypothesis", "partial_input", "finetune.json",
     ("tra_snli_9842", "full_input_relevance_share_on_hypothesis_tokens"),
     "puts {:.1%} of its relevance"),
    ("SNLI, authors' scale", "peco", "peco_real.json",
     ("held_out", "snli/psc", "peco_l2_reference"), "SNLI reads {:.1f} (Table"),
    ("MNLI, authors' scale", "peco", "peco_real.json",
     ("held_out", "mnli/psc", "peco_l2_reference"), "MNLI {:.1f} (6.5-7.5)"),
    ("full input, 3 epochs", "training", "finetune.json",
     ("snli_full_3ep", "metrics", "eval_accuracy"), "3 epochs: dev accuracy {:.3f} (the"),
    ("full input, training seconds", "training", "finetune.json",
     ("snli_full_3ep", "metrics", "train_seconds"), "of which {:,.0f} s training"),
    ("hypothesis only, 3 epochs", "training", "finetune.json",
     ("snli_hypothesis_only_3ep", "metrics", "eval_accuracy"), "3 epochs: dev accuracy {:.3f}, above"),
    ("H100: compiled, second epoch", "training", "finetune_gpu_compiled.json",
     ("parts", "compiled", "last_epoch_examples_per_s"), "second epoch | {:,.0f} |"),
    ("H100: TRA", "training", "finetune_gpu.json",
     ("parts", "tra", "tra_mean"), "mean {:.3f}, median"),
]
# fmt: on


@pytest.mark.parametrize(
    ("what", "page", "name", "path", "template"), FIGURES, ids=[f"{f[1]}: {f[0]}" for f in FIGURES]
)
def test_the_page_quotes_the_result(what, page, name, path, template):
    expected = template.format(value(name, path))
    assert expected in _prose(page), (
        f"{what}: docs/methods/{page}.md should say {expected!r} (bench/results/{name})"
    )


# Builders, one per page: rows as (what, result file, cells on one line of the page) and
# phrases as (what, result file, text in the prose).


def _aflite() -> tuple[list, list]:
    """The verdict table, the circles' Table 7 and removal rows, the SNLI probe tables."""
    rows, phrases = [], []

    def share(r: dict) -> str:
        lo_hi = f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}]"
        return f"{r['share']:.3f} vs {r['share_null']:.3f}: {r['effect']:+.3f} {lo_hi}"

    for key, run in result("aflite_verdict.json")["runs"].items():
        views = {b["view"]: share(b) for b in run.get("baselines") or []}
        cells = [share(run["predictable"]), views.get("hypothesis_only", "-")]
        cells += [views.get("premise_only", "-"), run["severity"]]
        text = f"({run['n']:,}) | " + " | ".join(cells)
        rows.append((f"verdict: {key}", "aflite_verdict.json", [text]))
    syn = result("aflite_synthetic.json")
    s = syn["summary"]["0.8"]
    for model, label in (("svm", "SVM-RBF"), ("linear", "Logistic reg.")):
        paper = {k: f"{v[0]:.1f} ± {v[1]:.1f}" for k, v in s["paper"][model].items()}
        ours = [s[f"{model}_acc_{k}"] for k in ("D", "D_phi", "D_phi_model_on_fresh_unfiltered")]
        ours = [f"{x['mean']:.1f} ± {x['std']:.1f}" for x in ours]
        text = f"| {label} | {paper['D']} | {ours[0]} | {paper['D_phi']} | {ours[1]} | {ours[2]} |"
        rows.append((f"circles 0.8: {label}", "aflite_synthetic.json", ["| 0.8", text]))
    lo, hi = s["flipped_removed_fraction_min"], s["flipped_removed_fraction_max"]
    text = (
        f"| 0.8 | {s['n_final']['mean']:.0f} ± {s['n_final']['std']:.0f} | "
        f"{s['n_rounds']['mean']:.0f} (tau) | {syn['params']['bias_fraction']:.2f} → "
        f"{s['biased_fraction_after']['mean']:.2f} | {s['biased_removed_fraction']['mean']:.0%} | "
        f"{s['unbiased_removed_fraction']['mean']:.0%} | {s['flipped_removed_fraction_mean']:.1%} of "
        f"{s['n_flipped_per_seed']} ({_pt(lo)}-{_pt(hi)}% per seed) |"
    )
    rows.append(("circles 0.8: removed rows", "aflite_synthetic.json", [text]))
    k1 = syn["k1_check"]
    k20 = next(r for r in syn["per_seed"] if r["seed"] == 0 and r["separation"] == 0.8)
    text = (
        f"k=1 took {k1['n_rounds']:,} rounds ({k1['aflite_seconds']:.0f} s, vs "
        f"{k20['n_rounds']} rounds and {k20['aflite_seconds']:.1f} s with k=20"
    )
    phrases.append(("circles: k=1 against k=20", "aflite_synthetic.json", text))
    modes = result("aflite_snli.json")["modes"]
    for mode, split, phi in (("eval", "dev", "dev_af_selected"), ("union", "test", "test_phi")):
        acc = modes[mode]["accuracy"]
        for probe in ("full", "hypothesis_only"):
            for part in (split, phi):
                rand = acc["D_random"][probe][part]
                cells = [_pt(acc["D"][probe][part]), f"{_pt(rand['mean'])} ± {_pt(rand['std'])}"]
                if mode == "eval":  # its Δ column is taken from the rounded cells: not checked
                    cells.append(_pt(acc["D_one_shot"][probe][part]))
                cells.append(_pt(acc["D_phi"][probe][part]))
                if mode == "union":
                    cells.append(
                        f"{100 * (acc['D_phi'][probe][part] - acc['D'][probe][part]):+.1f}"
                    )
                text = "| " + " | ".join(cells) + " |"
                rows.append((f"SNLI {mode} mode: {probe}, {part}", "aflite_snli.json", [text]))
    acc = modes["union"]["accuracy"]
    for probe in ("full", "hypothesis_only"):
        drop = 100 * (acc["D_phi"][probe]["test_phi"] - acc["D"][probe]["test"])
        what = f"SNLI union mode: {probe}, D on the test half -> D(Φ) on its filtered part"
        phrases.append((what, "aflite_snli.json", f"(Δ {drop:+.1f};"))
    return rows, phrases


def _amplified() -> tuple[list, list]:
    """The drop over marking seeds, and debiasing on the minority definition's biased split."""
    spread = result("amplify_snli_marking_spread.json")["definitions"]
    seeds = spread["minority"]["per_marking_seed"]
    over = spread["minority"]["drop_over_marking_seeds"]
    carto = spread["cartography"]["drop_over_marking_seeds"]
    drops = _listed([_pt(seeds[k]["drop"]) for k in sorted(seeds)])
    interval = f"[{_pt(over['ci_low'])}, {_pt(over['ci_high'])}]"
    texts = [
        ("minority drop per marking seed", f"gave minority drops of {drops} points"),
        (
            "minority drop over marking seeds",
            f"(mean {_pt(over['mean'])}, sd {_pt(over['sd'])}, 95% t interval over the seeds {interval})",
        ),
        ("cartography drop range", f"stayed within {_pt(carto['max'])} to {_pt(carto['min'])}"),
    ]
    phrases = [(w, "amplify_snli_marking_spread.json", t) for w, t in texts]
    debias = result("amplify_debias_snli.json")
    for scheme in ("biased", "self-debiasing", "ambiguous filtering", "100% train"):
        r = debias["table"][scheme]
        label = scheme
        if scheme == "ambiguous filtering":
            label = f"ambiguous: {debias['n_ambiguous']:,} pairs, whose dev accuracy falls to "
            label += f"{r['dev_mean']:.1%}"
        text = f"{_pt(r['anti_biased_mean'])} ± {_pt(r['anti_biased_sd'])} ({label})"
        phrases.append((f"debiasing: {scheme}", "amplify_debias_snli.json", text))
    return [], phrases


def _cartography() -> tuple[list, list]:
    """The headline against permuted labels, the SNLI dev map table, fast vs fine-tuned."""
    snli = result("cartography_snli.json")
    phrases = []
    for setting, lead in (("test_to_dev", "the raw rho is"), ("dev_held_out_2_folds", "rho")):
        h = snli["headline"][setting]
        ci = f"[{h['spearman_confidence_ci_low']:.3f}, {h['spearman_confidence_ci_high']:.3f}]"
        excess = f"{h['spearman_excess']:+.3f} [{h['spearman_excess_ci_low']:+.3f}, "
        excess += f"{h['spearman_excess_ci_high']:+.3f}]: {h['severity'].upper()}"
        null = f"{h['spearman_confidence_null']:.3f} (sd {h['spearman_confidence_null_sd']:.3f}"
        phrases.append((f"{setting}: rho", f"{lead} {h['spearman_confidence']:.3f} {ci}"))
        phrases.append((f"{setting}: null", null))
        phrases.append((f"{setting}: excess", f"excess {excess}"))
    phrases = [(w, "cartography_snli.json", t) for w, t in phrases]
    dev = snli["settings"]["dev"]["metrics"]
    t2d = snli["settings"]["test_to_dev"]["metrics"]

    def regions(m: dict, prefix: str = "") -> str:
        kinds = ("easy_to_learn", "ambiguous", "hard_to_learn", "other")
        return " / ".join(_pt(m[f"{prefix}share_{r}"]) for r in kinds) + "%"

    def conf(m: dict) -> str:
        return f"{m['mean_confidence']:.3f} / {m['partial_mean_confidence']:.3f}"

    def cut(m: dict) -> str:
        return f"{m['n_anti_biased']:,.0f}; {m['hard_confidence_cut']:.3f}"

    table = [
        ("mean confidence", f"| {conf(dev)} | {conf(t2d)} |"),
        ("regions, full input", f"| {regions(dev)} | {regions(t2d)} |"),
        (
            "regions, hypothesis only",
            f"| {regions(dev, 'partial_')} | {regions(t2d, 'partial_')} |",
        ),
        ("anti-biased", f"| {cut(dev)} | {cut(t2d)} (train: {t2d['n_anti_biased_train']:,.0f}) |"),
    ]
    rows = [(f"SNLI dev maps: {w}", "cartography_snli.json", [t]) for w, t in table]
    views = result("finetune.json")["agreement_fast_vs_finetune"]["views"]
    for view in ("full", "hypothesis_only"):
        for variant in ("fast_mlp_10ep", "fast_mlp_3ep"):
            a = views[view][variant]["eval"]
            overlap = f"{a['hardest_21pct_overlap']:.1%} | {a['same_region_share']:.1%} |"
            cells = [
                f"| {a['spearman_confidence']:.3f} |",
                f"| {a['spearman_correctness']:.3f} | {overlap}",
            ]
            rows.append((f"fast vs fine-tuned on dev: {view}, {variant}", "finetune.json", cells))
    return rows, phrases


def _debiasing() -> tuple[list, list]:
    """The headline gain with its interval, and the entropy-weight grid."""
    m = result("debiasing.json")["snli"]["metrics"]
    lo_hi = f"[{m['best_hard_gain_low']:+.3f}, {m['best_hard_gain_high']:+.3f}]"
    gain = f"confidence regularization's {m['best_hard_gain']:+.3f} (interval {lo_hi}"
    phrases = [("best hard-pair gain", "debiasing.json", gain)]
    for h, g in result("debiasing_entropy_grid.json")["grid"].items():
        text = f"{g['last']:.3f} / {g['hard_accuracy_last']:.3f} at"
        phrases.append((f"entropy grid: H = {h}", "debiasing_entropy_grid.json", text))
    return [], phrases


def _fairness() -> tuple[list, list]:
    """SNLI (kept, taus, accuracies, agreement), the small setting, SQuAD."""
    snli = result("fairness_snli.json")
    advs, m = list(snli["adversaries"]), snli["metrics"]
    kept = " / ".join(f"{snli['n_selected'][a]:,.0f}" for a in advs)
    taus = " / ".join(f"{m[f'kendall_tau/{a}']:+.2f}" for a in advs)
    accs = " / ".join(f"{m[f'mean_accuracy/{a}']:.3f}" for a in advs)
    agree = ", ".join(
        f"{m[f'agreement_selected/{a}']:.3f} vs {m[f'agreement_first_round/{a}']:.3f} for {label}"
        for a, label in (("bow", "bag of words"), ("minilm_ft", "the warm-up"))
    )
    lo_hi = f"[{m['min_kendall_tau_ci_low']:+.2f}, {m['min_kendall_tau_ci_high']:+.2f}]"
    texts = [
        ("SNLI: kept", f"(kept: {kept} of 9,842)"),
        ("SNLI: Kendall's tau", f"unfiltered ranking {taus},"),
        ("SNLI: mean accuracy", f"{m['mean_accuracy/none']:.3f} on the full set, {accs} on"),
        ("SNLI: annotator agreement", f"({agree}"),
        ("SNLI: headline interval", f"interval {lo_hi})"),
    ]
    out = [(w, "fairness_snli.json", t) for w, t in texts]
    lo, hi = result("fairness_snli_small.json")["headline"]["evidence"]["interval"]
    out.append(
        ("small: headline interval", "fairness_snli_small.json", f"interval [{lo:.2f}, {hi:.2f}]")
    )
    squad = result("fairness_squad.json")
    qa, q = list(squad["adversaries"]), squad["metrics"]
    f1 = " / ".join(f"{q[f'mean_f1/{a}']:.3f}" for a in qa)
    shares = " / ".join(f"{q[f'selected_fraction/{a}']:.1%}" for a in qa)
    out.append(
        (
            "SQuAD: mean F1",
            "fairness_squad.json",
            f"{q['mean_f1/none']:.3f} on the full set, {f1} on",
        )
    )
    out.append(("SQuAD: kept", "fairness_squad.json", f"(kept {shares} of"))
    t, t_sq = snli["runtime_s"], squad["runtime_s"]
    took = f"The analysis took {t['analysis']:.0f} s and the warm-up fine-tunes {t['warmup_finetunes']:.0f} s"
    out.append(("SNLI: runtime", "fairness_snli.json", took))
    out.append(
        ("SQuAD: re-run's runtime", "fairness_squad.json", f"AMD EPYC: {t_sq['analysis']:.0f} s,")
    )
    return [], out


def _minority() -> tuple[list, list]:
    """Exact Ward's timing, the routes' agreement with it, the cost curve, consensus drops."""
    rows = []
    for s in result("ward_exact.json")["sizes"]:
        b, n = s["median_s"]["before"], s["median_s"]["now"]
        parts = [f"{b[k]:#.3g} / {n[k]:#.3g} s" for k in ("fill", "linkage", "total")]
        text = f"| {s['n']:,} | " + " | ".join(parts) + f" ({s['speedup']['total']:g}x) |"
        rows.append((f"exact Ward, {s['n']:,} points", "ward_exact.json", [text]))
    scale = result("minority_scale.json")

    def ari(x: dict) -> str:
        return f"{x['ari']:.3f} / {x['minority_jaccard']:.3f}"

    a = scale["agreement"]["10000"]
    cells = [
        f"| synthetic, 10,000 | {a['exact_s']:.1f} s, {a['peak_rss_gib']:.1f} GiB |",
        f"({a['approx_counts_500']['seconds']:.1f} s) | {ari(a['approx_counts_2000'])} "
        f"({a['approx_counts_2000']['seconds']:.1f} s) | {ari(a['approx_none_500'])} | "
        f"{ari(a['approx_none_2000'])} | {ari(a['paper_half_sample_seed0'])} |",
    ]
    rows.append(("agreement with exact Ward, synthetic 10k", "minority_scale.json", cells))
    a = scale["agreement_snli"]
    text = (
        f"| {a['exact_s']:.1f} s | {ari(a['approx_counts_500'])} | {ari(a['approx_counts_2000'])} "
        f"| - | {ari(a['approx_none_2000'])} | {ari(a['paper_half_sample_seed0'])} (seed 0), "
        f"{ari(a['paper_half_sample_seed1'])} (seed 1) |"
    )
    rows.append(("agreement with exact Ward, SNLI", "minority_scale.json", [text]))
    c = scale["curve"]["400000"]
    st = c["stages"]
    cells = [
        f"| 400,000 | {c['wall_s']:.1f} s | {c['peak_rss_gib']:.2f} GiB | "
        f"{st['task_model']['seconds']:.1f} s | {st['pseudo_labels']['seconds']:.1f} s (",
        f"| {st['deepcluster']['seconds']:.1f} s | {st['clustering']['seconds']:.1f} s "
        f"({st['clustering']['n_preclusters']:,} pre-clusters, {st['clustering']['n_replicas']:,} copies)",
        f"| {st['assign_seconds']:.1f} s | {c['anti_biased_fraction_train']:.1%} / "
        f"{c['anti_biased_fraction_eval']:.1%} |",
    ]
    rows.append(("cost curve, 400k points", "minority_scale.json", cells))
    cons = result("amplify_snli_consensus.json")

    def drops(d: dict, then: str) -> str:
        values = _listed([_pt(v) for v in d["values"]])
        return f"{values} {then} (mean {_pt(d['mean'])}, sd {_pt(d['sd'])})"

    phrases = [
        ("consensus drops", drops(cons["consensus_drop_over_groups"], "points")),
        (
            "first-seed drops",
            drops(cons["first_seed_minority_drop_over_groups"], "for the groups' first seeds"),
        ),
    ]
    return rows, [(w, "amplify_snli_consensus.json", t) for w, t in phrases]


def _partial_input() -> tuple[list, list]:
    """Ranking "easy" examples, joint vs fold-by-fold fits, TRA, the fine-tuned analysis."""
    rows = []
    for feats, r in result("leakage_easy_auc.json")["runs"].items():
        (h0, h1), (p0, p1) = r["delta_maj_hypothesis_only_ci"], r["delta_maj_premise_only_ci"]
        cells = [
            f"| {r['auc_old_max_over_all_partial_inputs']:.3f} | {r['auc_new_leaking_conditions_only']:.3f} "
            f"| {r['auc_p_gold_premise_only']:.3f} | hypothesis_only (",
            f"[{h0:.3f}, {h1:.3f}]; premise-only [{p0:.3f}, {p1:.3f}]) |",
        ]
        rows.append((f"easy examples: {feats}", "leakage_easy_auc.json", cells))
    cases = result("partial_input_joint.json")["cases"]
    for cond in ("full", "hypothesis_only", "premise_only"):
        ratios = [f"({cases[f'{cond}_x{k}']['ratio_by_fold_over_joint']:.2f}x) |" for k in (1, 10)]
        cells = [f"| {cond.replace('_', ' ')} (", *ratios]
        rows.append((f"joint fits: {cond}", "partial_input_joint.json", cells))
    ft = result("finetune.json")
    by_label = ft["tra_snli_9842"]["tra_by_gold_label"]
    text = " / ".join(f"{by_label[k]:.3f}" for k in ("entailment", "neutral", "contradiction"))
    rows.append(("TRA by gold label", "finetune.json", [f"| {text} |"]))
    for run in ("probe_minilm", "finetune"):
        m = {k: v[0] for k, v in ft["leakage_finetune_1ep"]["runs"][run]["metrics"].items()}
        d = ft["leakage_finetune_1ep"]["runs"][run]["metrics"]["delta_maj_hypothesis_only"]
        text = (
            f"| {m['accuracy_full']:.3f} | {m['accuracy_hypothesis_only']:.3f} | {d[0]:+.3f} "
            f"[{d[1]:+.3f}, {d[2]:+.3f}] | {_pt(m['recovery_hypothesis_only'])} | "
            f"{m['nba_hypothesis_only']:.3f} | {m['nbr_hypothesis_only']:.3f} |"
        )
        rows.append((f"fine-tuned analysis: {run}", "finetune.json", [text]))
    return rows, []


def _peco() -> tuple[list, list]:
    """PECO per data set and representation, biased regions, the sweep, the profiles."""
    peco = result("peco_real.json")
    ho = peco["held_out"]

    def scored(r: dict) -> str:
        lo_hi = f"[{r['peco_l2_excess_ci_low']:.2f}, {r['peco_l2_excess_ci_high']:.2f}]"
        text = f"{r['peco_l2_excess']:+.2f} {lo_hi}, {r['severity']}"
        return text + (", inconclusive" if r["inconclusive"] else "")

    def flagged(rule: dict) -> str:
        return f"{rule['n_biased_clusters']:.0f} ({rule['share_in_biased_regions']:.1%})"

    sweep = [c for c in peco["whole"]["snli_dev"]["sweep"] if c["divergence"] == "l2"]

    def span(k: int, lo: str = "peco", hi: str = "peco") -> str:
        cells = [c for c in sweep if c["k"] == k]
        return f"{min(c[lo] for c in cells):.2f}-{max(c[hi] for c in cells):.2f}"

    s, m = ho["snli/psc"], ho["mnli/psc"]
    o, r = ho["cad_original/psc"], ho["cad_revised_combined/psc"]
    reg, mini = s["regions"], ho["snli/minilm"]["regions"]
    excess = [p["peco_l2_excess"] for p in peco["profiles_snli_dev"]]
    lower = [p["peco_l2_excess_ci_low"] for p in peco["profiles_snli_dev"]]
    texts = [
        ("SNLI, PSC", f"SNLI dev scores {s['peco_l2']:.2f} (excess {scored(s)})"),
        ("MNLI, PSC", f"30% {m['peco_l2']:.2f} ({scored(m)})"),
        (
            "CAD, PSC",
            f"test sets {o['peco_l2']:.2f} and {r['peco_l2']:.2f} (excess "
            f"{o['peco_l2_excess']:+.2f} and {r['peco_l2_excess']:+.2f}, {o['severity']})",
        ),
        (
            "frozen MiniLM",
            f"(SNLI {ho['snli/minilm']['peco_l2']:.2f}, MNLI {ho['mnli/minilm']['peco_l2']:.2f}, "
            f"both {ho['snli/minilm']['severity']}",
        ),
        (
            "biased regions",
            f"flags {reg['authors']['n_biased_clusters']:.0f} of {s['n_clusters']:.0f} clusters "
            f"({reg['authors']['share_in_biased_regions']:.1%} of the examples; "
            f"{reg['authors']['share_in_biased_regions_null']:.1f} under shuffled labels), the "
            f"former `0.2^2/C` rule {flagged(reg['eq11'])}, the per-cluster permutation test "
            f"{reg['null']['n_biased_clusters']:.0f} (against {reg['null']['n_biased_clusters_null']:.1f} "
            f"by chance). With MiniLM: {flagged(mini['authors'])}, {flagged(mini['eq11'])}, "
            f"{mini['null']['n_biased_clusters']:.0f}.",
        ),
        (
            "App. C sweep",
            f"L2 {span(10)} at k = 10, {span(25)} at 25, {span(50)} at 50, {span(100)} at 100; "
            f"single seeds at k = 25 range over {span(25, 'peco_seed_min', 'peco_seed_max')}",
        ),
        (
            "SNLI dev profiles",
            f"(excess {min(excess):.2f}-{max(excess):.2f}, lower bounds "
            f"{min(lower):.2f}-{max(lower):.2f})",
        ),
    ]
    return [], [(w, "peco_real.json", t) for w, t in texts]


def _prediction_bias() -> tuple[list, list]:
    """App. C's group sizes at the paper's thresholds, for the library's heuristics."""
    rows = []
    for key, g in result("prediction_bias_squad.json")["app_c_group_sizes"].items():
        if "(" in key:  # the variants and reference readings: not the library's defaults
            continue
        undefined = f" ({g['n_undefined']:,})" if g["n_undefined"] else ""
        text = (
            f"| {g['threshold']:g} | {g['n_low']:,} / {g['n_high']:,}{undefined} | "
            f"{g['worse_group']}, {g['worse_group_n']:,} | {g['paper_worse_group_n']:,} |"
        )
        rows.append((f"App. C: {key}", "prediction_bias_squad.json", [f"| `{key}`", text]))
    return rows, []


def _pvi() -> tuple[list, list]:
    """PVI's cost at scale, given partial_input's probabilities."""
    pvi = result("atlas_scale.json")["pvi"]
    cpu = [pvi[n]["pvi_cpu_s_reusing_partial_input"] for n in ("10000", "100000", "1000000")]
    text = f"PVI takes {cpu[0]:.1f} / {cpu[1]:.1f} / {cpu[2]:.0f} CPU s"
    return [], [("10k / 100k / 1M rows", "atlas_scale.json", text)]


def _training() -> tuple[list, list]:
    """The SNLI fine-tunes' last epoch, the recording overhead, the H100 seeds."""
    ft, rows = result("finetune.json"), []
    for key, view in (("snli_full_3ep", "full"), ("snli_hypothesis_only_3ep", "hypothesis_only")):
        h = ft[key]["history"][-1]
        cells = [
            f"| {view} | {h['epoch']} | {h['train_loss']:.3f} | {h['train_accuracy']:.3f} | "
            f"{h['eval_loss']:.3f} | {h['eval_accuracy']:.3f} | {h['train_seconds']:.0f} (",
            f"| {h['dynamics_seconds']:.1f} |",
        ]
        rows.append((f"SNLI fine-tune: {view}, epoch {h['epoch']}", "finetune.json", cells))
    o = ft["overhead"]
    ratio = o["time_ratio_vs"]
    variants = ("trainer_plain", "trainer_with_eval", "engine_no_dynamics_no_eval")
    for v in (*variants, "engine_dynamics_forward"):
        text = (
            f"| {o['median_seconds'][v]:.2f} | {o['train_examples_per_s'][v]:.1f} | "
            f"{ratio['trainer_plain'][v]:.3f} | {ratio['trainer_with_eval'][v]:.3f} |"
        )
        rows.append((f"recording overhead: {v}", "finetune.json", [text]))
    seeds = result("finetune_gpu.json")["parts"]["seeds"]
    for loop in ("lean", "trainer"):
        accs = " | ".join(f"{x:.4f}" for x in seeds["eval_accuracy"][loop])
        text = f"| {accs} | {seeds['mean'][loop]:.4f} | {seeds['sd'][loop]:.4f} |"
        rows.append((f"H100: {loop} loop over seeds", "finetune_gpu.json", [text]))
    return rows, []


_BUILT = {
    "aflite": _aflite(),
    "amplified_splits": _amplified(),
    "cartography": _cartography(),
    "debiasing": _debiasing(),
    "fairness": _fairness(),
    "minority": _minority(),
    "partial_input": _partial_input(),
    "peco": _peco(),
    "prediction_bias": _prediction_bias(),
    "pvi": _pvi(),
    "training": _training(),
}
#: (what, page, result file, cells that one line of the page holds)
ROWS = [(w, page, name, cells) for page, (rows, _) in _BUILT.items() for w, name, cells in rows]
#: (what, page, result file, text the prose holds)
PHRASES = [(w, page, name, text) for page, (_, ph) in _BUILT.items() for w, name, text in ph]


@pytest.mark.parametrize(
    ("what", "page", "name", "text"), PHRASES, ids=[f"{p[1]}: {p[0]}" for p in PHRASES]
)
def test_the_page_lists_the_result(what, page, name, text):
    assert text in _prose(page), (
        f"{what}: docs/methods/{page}.md should say {text!r} (bench/results/{name})"
    )


@pytest.mark.parametrize(
    ("what", "page", "name", "cells"), ROWS, ids=[f"{r[1]}: {r[0]}" for r in ROWS]
)
def test_the_table_row_is_the_result(what, page, name, cells):
    lines = _lines(page)
    if not any(all(c in line for c in cells) for line in lines):
        closest = difflib.get_close_matches(" ".join(cells), lines, n=1, cutoff=0)[0]
        missing = [c for c in cells if c not in closest]
        pytest.fail(
            f"{what}: no line of docs/methods/{page}.md holds {cells} (bench/results/{name}); "
            f"the closest, {closest!r}, lacks {missing}"
        )
