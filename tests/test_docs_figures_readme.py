"""Figures the README's analysis sections quote equal the committed results they come from.

``test_docs_figures.py`` checks a first set of README figures (the MMLU audit, the default
AFLite run, the probe, the encoding, the fairness, amplified-split and debiasing tables);
this module and ``test_docs_figures_readme_speed.py`` (PVI, the atlas, the canary, the
multiple-choice table and the speed tables) check the rest of what the README quotes from
``bench/results/*.json``. A builder per section turns one result file into the texts the
README must hold: a sentence (compared with whitespace normalised, bold markup dropped)
or the texts one line of a table must hold. Re-running a benchmark whose figures change
then fails here until the prose follows.

The checks are each section's headline figures, and the list grows as benchmarks are
re-run. Not checked: figures from the papers, figures whose run is not committed (the
minority table, QA partial input, duplicates, the run-framework table), figures of an
earlier run that the prose sets beside the committed one, figures the prose derives from
other quoted ones, the rows whose benchmark is being re-measured (the AFLite round rows of
``aflite_round.json``, the minority scale curve, start-up), and values that sit exactly
halfway at the printed precision in a JSON that stores them rounded (``fmt`` gives
``None`` and ``runs`` leaves that figure out: either rounding is right).
"""

from __future__ import annotations

from collections.abc import Callable

from tests._figures import ROOT, Check, assert_quoted, fmt, parametrize_checks, result, row, say

README = ROOT / "README.md"


def _pt(x: float, spec: str = ".1f") -> str | None:
    """A share in points: 0.2878 -> '28.8'."""
    return fmt(100 * x, spec)


def _span(xs: list[float], spec: str) -> str:
    """'lo-hi' of the values, or the one value when both ends round alike."""
    lo, hi = format(min(xs), spec), format(max(xs), spec)
    return lo if lo == hi else f"{lo}-{hi}"


# fmt: off
def _extras() -> list[Check]:
    """What each extra adds on disk."""
    name, r = "extras_size.json", result("extras_size.json")
    out = [row(name, "core install", "| (core) |", None, " ", fmt(r["core_mib"], ".0f"), " MiB |")]
    for extra, e in r["extras"].items():
        out.append(row(name, extra, f"| `{extra}` |", None, "| +", fmt(e["adds_mib"], ",.0f"), " MiB |"))
    return out


def _verdict_and_leakage() -> list[Check]:
    """AFLite's verdict per data set, the leakage score's AUC, the real-data leakage table."""
    name, v = "aflite_verdict.json", result("aflite_verdict.json")["runs"]
    hyp = {k: next(b for b in r["baselines"] if b["view"] == "hypothesis_only") for k, r in v.items() if r.get("baselines")}
    sst2 = v["sst2"]["predictable"]
    out = [
        say(name, "SST-2", f"SST-2 ({v['sst2']['n']:,}) {v['sst2']['severity']}, {sst2['share']:.0%} predictable vs {sst2['share_null']:.0%} with shuffled labels"),
        say(name, "SNLI dev", f"SNLI dev {v['snli']['severity']} (inconclusive), {hyp['snli']['share']:.0%} of pairs predictable from the hypothesis alone vs {hyp['snli']['share_null']:.1%} shuffled"),
        say(name, "CAD original", f"CAD original {v['cad_original']['severity']} ({hyp['cad_original']['share']:.0%} vs {hyp['cad_original']['share_null']:.1%})"),
        say(name, "CAD revised", f"CAD revised {v['cad_revised']['severity']} ({hyp['cad_revised']['share']:.1%} vs {hyp['cad_revised']['share_null']:.1%})"),
    ]
    auc = {f: (r["auc_new_leaking_conditions_only"], r["auc_old_max_over_all_partial_inputs"]) for f, r in result("leakage_easy_auc.json")["runs"].items()}
    out.append(say("leakage_easy_auc.json", "AUC of the leakage score", f"from {auc['bow'][0]:.3f} to {auc['bow'][1]:.3f} with bag of words, {auc['minilm'][0]:.3f} to {auc['minilm'][1]:.3f} with MiniLM"))
    for key, r in result("leakage_real.json")["runs"].items():
        lo, hi = r["delta_maj_hypothesis_only_ci"]
        accs = " | ".join(f"{r[k]:.3f}" for k in ("accuracy_full", "accuracy_hypothesis_only", "accuracy_premise_only", "majority_accuracy"))
        out.append(row("leakage_real.json", f"table: {key}", f"({r['n_train']} -> {r['n_eval']}) | {key.split('/')[1]} | {accs} | {r['delta_maj_hypothesis_only']:+.3f} [{lo:+.3f}, {hi:+.3f}] | {100 * r['recovery_hypothesis_only']:.1f} | {r['nba_hypothesis_only']:.3f} | {r['nbr_hypothesis_only']:.3f} |"))
    return out


def _prediction_bias() -> list[Check]:
    """The SQuAD table (bias / worse-group EM per model, shared thresholds), scores, times."""
    name, r = "prediction_bias_squad.json", result("prediction_bias_squad.json")
    def cell(x: float) -> str | None:
        return "0" if x == 0 else (f := fmt(x, ".3f")) and f.lstrip("0")
    out = []
    for h, comp in r["paper_comparison"].items():
        t = r["tables"]["em"]["shared_threshold"][h]
        paper = "-" if comp["paper_threshold"] is None else f"{comp['paper_threshold']:g}"
        relaxed = ", relaxed" if comp["validity_em"] == "relaxed" else ""
        pieces: list[str | None] = [f"| {h} | {comp['our_threshold_em']:g} ({paper}){relaxed} | {t['n_low']} / {t['n_high']} | "]
        for model in ("electra-base", "bert-base-uncased", "bert-tiny"):
            pieces += [cell(t["models"][model]["bias"]), " / ", cell(t["models"][model]["worse_performance"]), " | "]
        out.append(row(name, f"table: {h}", *pieces, cell(t["human"][0]["bias"]), " |"))
    s, t = r["official_scores"], r["timings_s"]
    scores = ", ".join(f"{label} {s[m]['em']:.2f}/{s[m]['f1']:.2f}" for m, label in (("electra-base", "ELECTRA-base"), ("bert-base-uncased", "BERT-base"), ("bert-tiny", "BERT-Tiny")))
    return [*out,
        say(name, "official scores", f"({scores} EM/F1)"),
        say(name, "wall time of the sweep", f"{t['sweep_excluding_spacy']:.1f} s excluding spaCy, {t['sweep_including_spacy']:.1f} s including it (spaCy NER + parse of SQuAD dev: {t['heuristics_spacy']:.1f} s; cached afterwards); one 3 x 7 bias table: {t['bias_shared_em_s']:.2f} s"),
    ]


def _aflite() -> list[Check]:
    """Synthetic circles across the four separations, the SNLI filtering (union mode)."""
    name, syn = "aflite_synthetic.json", result("aflite_synthetic.json")
    s = [x for k, x in syn["summary"].items() if k != "paper"]
    def spread(key: str, scale: float = 1) -> str:
        return _span([scale * x[key]["mean"] for x in s], ".0f")
    flip = syn["summary"]["0.8"]
    union = result("aflite_snli.json")["modes"]["union"]
    acc, af = union["accuracy"], union["aflite"]
    drop = {p: acc["D"][p]["test"] - acc["D_phi"][p]["test_phi"] for p in ("full", "hypothesis_only")}
    rand = acc["D"]["full"]["test"] - acc["D_random"]["full"]["test"]["mean"]
    return [
        say(name, "linear model, D -> D(phi)", f"the linear model falls from {spread('linear_acc_D')}% to {spread('linear_acc_D_phi')}%"),
        say(name, "rows removed", f"AFLite removes {spread('biased_removed_fraction', 100)}% of the bias-feature rows, {spread('unbiased_removed_fraction', 100)}% of the others"),
        say(name, "flipped rows removed", f"({flip['flipped_removed_fraction_mean']:.1%}; ", _pt(flip["flipped_removed_fraction_min"]), "-", _pt(flip["flipped_removed_fraction_max"]), "% per seed)"),
        say(name, "flipped rows, original bias features", f"({syn['flipped_bias_original']['flipped_removed_fraction_mean']:.1%} removed)"),
        say("aflite_snli.json", "SNLI: kept", f"{af['n_final']:,} kept after {af['n_rounds']:.0f} rounds"),
        say("aflite_snli.json", "SNLI: drops", "loses ", _pt(drop["full"]), " points against D on the full test half (paper -30.0); hypothesis-only loses ", _pt(drop["hypothesis_only"]), " (paper -23.5); a random subset of the same size loses only ", _pt(rand)),
    ]


def _training_and_scale() -> list[Check]:
    """The SNLI fine-tunes, the recording overhead, out-of-fold leakage at scale."""
    name, ft = "finetune.json", result("finetune.json")
    full, hyp = ft["snli_full_3ep"], ft["snli_hypothesis_only_3ep"]
    epochs = " / ".join(f"{h['eval_accuracy']:.3f}" for h in full["history"])
    ratio = ft["overhead"]["time_ratio_vs"]["trainer_plain"]["engine_dynamics_forward"]
    ls = result("leakage_scale.json")
    new = {c["n"]: c for c in ls["curve"] if c["path"] == "new" and c.get("executor") == "local"}
    old = {c["n"]: c for c in ls["curve"] if c["path"] == "old"}
    before = next(r for r in ls["runs_1m"] if r["label"] == "local, before the probe change")
    two = result("leakage_scale_2threads.json")
    one_thread = {c["n"]: c["wall_s"] for c in two["curve"]}
    default = next(r["wall_s"] for r in two["runs_1m"] if r["torch_threads"] == 0)
    return [
        say(name, "full input, per epoch", f"3 epochs: dev accuracy {epochs} (frozen-MiniLM probe"),
        say(name, "examples/s, last epoch", f"{full['n_train'] / full['history'][-1]['train_seconds']:.0f} examples/s (about"),
        say(name, "hypothesis only", f"hypothesis-only, 3 epochs: {hyp['metrics']['eval_accuracy']:.3f} (probe"),
        say(name, "recording overhead", f"Recording dynamics costs {ratio:.2f}x plain `Trainer`"),
        say("leakage_scale.json", "10k", f"10k in {new[10000]['wall_s']:.1f} s (alone"),
        say("leakage_scale.json", "100k / 1M", f"100k in {new[100000]['wall_s']:.0f} s / {new[100000]['peak_rss_gib']:.2f} GiB and 1M in {new[1000000]['wall_s']:.0f} s / {new[1000000]['peak_rss_gib']:.1f} GiB"),
        say("leakage_scale.json", "growth", f"time grows as n^{ls['growth']['new_time_exponent']:.2f}"),
        say("leakage_scale.json", "before issue 14", f"takes {old[10000]['wall_s']:.1f} s and {old[100000]['wall_s']:.0f} s at 10k and 100k in the same runs ({ls['growth']['old_over_new']['10000']:.1f}x and {ls['growth']['old_over_new']['100000']:.1f}x)"),
        say("leakage_scale.json", "1M before the probe change", f"1M took {before['wall_s']:.0f} s before"),
        say("leakage_scale.json", "agreement on real SNLI", f"(largest change {ls['agreement_vs_previous_run']['summary']['max_abs_diff']:.4f})"),
        say("leakage_scale_2threads.json", "2 threads vs 1", f"and {default:.0f} s at 1M, against {one_thread[100000]:.0f} s and {one_thread[1000000]:.0f} s with 1 thread"),
    ]


def _cartography() -> list[Check]:
    """The fast path's times, the region table, the AUCs, the headline against permuted labels."""
    name, c = "cartography_snli.json", result("cartography_snli.json")
    dev, h = c["settings"]["dev"], c["headline"]["test_to_dev"]
    out = [
        say(name, "fast path and analysis times", f"The fast path takes {dev['dynamics_train_s']['full']:.1f} s (full input) and {dev['dynamics_train_s']['partial']:.1f} s (hypothesis only); the whole analysis {dev['cartography_total_s']:.1f} s"),
        say(name, "full vs hypothesis-only confidence", "confidence: Spearman ", fmt(dev["metrics"]["spearman_confidence"], ".3f"), "."),
    ]
    labels = {"easy_to_learn": "easy-to-learn", "hard_to_learn": "hard-to-learn", "anti-biased": "anti-biased (21% hardest)"}
    for g in (g for g in dev["by_full_region"] if g["group"] != "other"):  # 'other' is no README row
        label = labels.get(g["group"], g["group"])
        out.append(row(name, f"regions: {label}", f"| {label} | {g['hyp_only_probe_error']:.1%} | ", fmt(g["leakage_score_mean"], ".3f"), " |"))
    a = dev["agreement"]
    def f3(key: str, spec: str = ".3f") -> str | None:
        return fmt(h[key], spec)
    return [*out,
        say(name, "AUC of 1 - confidence", "with AUC ", fmt(a["auc_cartography_score_vs_hyp_only_mistake"], ".3f"), " (full map) and ", fmt(a["auc_partial_cartography_score_vs_hyp_only_mistake"], ".3f"), " (hypothesis-only map)"),
        say(name, "headline: CPU", f"mapped; {h['cpu_s']:.0f} CPU s"),
        say(name, "headline: rho and null", "Spearman ", f3("spearman_confidence"), " [", f3("spearman_confidence_ci_low"), ", ", f3("spearman_confidence_ci_high"), "], against ", f3("spearman_confidence_null"), " (sd ", f3("spearman_confidence_null_sd"), " over 5 draws)"),
        say(name, "headline: excess", "the excess, ", f3("spearman_excess", "+.3f"), " [", f3("spearman_excess_ci_low", "+.3f"), ", ", f3("spearman_excess_ci_high", "+.3f"), f"], is {h['severity'].upper()}"),
    ]


def _peco() -> list[Check]:
    """The held-out table (score, null, excess, verdict, regions, reference), whole splits."""
    name, peco = "peco_real.json", result("peco_real.json")
    out = []
    for key, r in peco["held_out"].items():
        rep, reg = key.split("/")[1], r["regions"]
        sev = r["severity"] + (", inconc." if r["inconclusive"] else "")
        leak = f" {peco['delta_maj_hypothesis_only'][key]:+.3f} |" if rep == "minilm" else ""
        out.append(row(name, f"table: {key}",
            f"| {'MiniLM' if rep == 'minilm' else 'PSC'} | {r['peco_l2']:.2f} [{r['peco_l2_ci_low']:.2f}, {r['peco_l2_ci_high']:.2f}] | {r['peco_l2_baseline']:.2f} | "
            f"{r['peco_l2_excess']:+.2f} [{r['peco_l2_excess_ci_low']:.2f}, {r['peco_l2_excess_ci_high']:.2f}] ({r['peco_l2_p_value']:.2f}) | {sev} | "
            f"{reg['authors']['n_biased_clusters']:.0f} ({reg['authors']['n_biased_clusters_null']:.1f}) / {reg['null']['n_biased_clusters']:.0f} (", fmt(reg["null"]["n_biased_clusters_null"], ".1f"),
            f") | {r['peco_l2_reference']:.1f} / {r['peco_kl_reference']:.3f} |{leak}"))
    w, prof = peco["whole"], peco["profiles_snli_dev"]
    def whole(k: str, label: str) -> str:
        return f"{w[k]['peco_l2']:.2f} ({label}{w[k]['peco_l2_excess']:+.2f} [{w[k]['peco_l2_excess_ci_low']:.2f}, {w[k]['peco_l2_excess_ci_high']:.2f}])"
    return [*out,
        say(name, "whole splits", f"SNLI dev {whole('snli_dev', 'excess ')}, SNLI test {whole('snli_test_tokenized', '')}, MNLI dev-matched {whole('mnli_dev_matched', '')}; shuffled {_span([x['peco_l2_baseline'] for x in w.values()], '.2f')}"),
        say(name, "seeds and profiles", f"(excess {_span([p['peco_l2_excess'] for p in prof], '.2f')}, interval lower bounds {_span([p['peco_l2_excess_ci_low'] for p in prof], '.2f')};"),
        say(name, "CPU", f"The analysis took {peco['cpu_s']:.0f} CPU-seconds"),
        *_peco_runtime(),
    ]


def _peco_runtime() -> list[Check]:
    """The runtime of the default analysis and the sweep on SNLI dev and 200k rows."""
    name, st = "peco_scale.json", result("peco_scale.json")["settings"]
    dev, big = st["snli_dev_minilm"], st["synthetic_200000"]
    def t(r: dict, k: str, spec: str) -> str:
        return format(r[k]["median_s"], spec)
    return [
        say(name, "SNLI dev", f"medians of 3: {t(dev, 'default_no_map', '.2f')} s without the map ({dev['default_no_map']['cpu_s']:.2f} CPU-s), {t(dev, 'default', '.2f')} s with the t-SNE map ({dev['default']['cpu_s']:.1f} CPU-s), and the 12-cell sweep with 5 k-means seeds per cell {dev['sweep_s']:.1f} s ({dev['sweep_cpu_s']:.1f} CPU-s)"),
        say(name, "PECO_L2 on SNLI dev", f"PECO_L2 moved from 1.407 to {dev['default']['peco_l2']:.3f} (shuffled labels 0.131 -> {dev['default']['peco_l2_baseline']:.3f})"),
        say(name, "200k rows", f"(same run): {t(big, 'default', '.1f')} s for the default analysis ({big['default']['cpu_s']:.1f} CPU-s; {t(big, 'default_no_map', '.1f')} s without the map), {big['sweep_s']:.0f} s for the sweep", None, f"PECO_L2 {big['default']['peco_l2']:.3f} against {big['default']['peco_l2_baseline']:.3f} with shuffled labels"),
    ]


def _fairness() -> list[Check]:
    """SNLI's mean accuracies and agreement, SQuAD's table, means and agreement."""
    name, snli = "fairness_snli.json", result("fairness_snli.json")
    m, advs = snli["metrics"], list(snli["adversaries"])
    accs = " / ".join(f"{m[f'mean_accuracy/{a}']:.3f}" for a in advs)
    sel, first = ([m[f"agreement_{s}/{a}"] for a in advs] for s in ("selected", "first_round"))
    out = [
        say(name, "SNLI: mean accuracy", f"(mean {m['mean_accuracy/none']:.3f} on full dev; {accs} on the four AF-selected sets)"),
        say(name, "SNLI: agreement", f"({_span(sel, '.3f')} against {_span(first, '.3f')})"),
        say(name, "SNLI: warm-up adversary kept", f"keeps {m['selected_fraction/minilm_ft']:.1%} of dev"),
        say(name, "SNLI: runtime", f"Runtime: {snli['runtime_s']['analysis']:.0f} s for the analysis and {snli['runtime_s']['warmup_finetunes']:.0f} s for the three warm-up"),
        say("fairness_squad.json", "SQuAD: re-run's runtime", f"AMD EPYC: {result('fairness_squad.json')['runtime_s']['analysis']:.0f} s, every score"),
    ]
    name, sq = "fairness_squad.json", result("fairness_squad.json")
    q = sq["metrics"]
    def f1(key: str, ci: bool = True) -> str:
        interval = f" [{q[f'f1_ci_low/{key}']:.3f}, {q[f'f1_ci_high/{key}']:.3f}]" if ci else ""
        return f"{q[f'f1/{key}']:.3f}{interval} ({q[f'em/{key}']:.3f})"
    for model, label in (("electra-base", "ELECTRA-base"), ("bert-base-uncased", "BERT-base-uncased"), ("bert-tiny", "BERT-Tiny")):
        cells = [f1(f"{model}/none"), f1(f"{model}/qa_position", ci=False), f1(f"{model}/qa_lexical"), f1(f"{model}/qa_heuristic")]
        out.append(row(name, f"SQuAD table: {model}", f"| {label} | " + " | ".join(cells) + " |"))
    kept = " | ".join(f"{sq['n_selected'][a]:,.0f}" for a in ("qa_position", "qa_lexical", "qa_heuristic"))
    agree = {(a["adversary"], a["stage"]): a["agreement"] for a in sq["agreement"]}
    pairs = ", ".join(f"{label}: {agree[a, 'af_selected']:.3f} vs {agree[a, 'filtered_first_round']:.3f}" for a, label in (("qa_lexical", "lexical"), ("qa_heuristic", "heuristic")))
    return [*out,
        row(name, "SQuAD table: kept", f"| kept of 10,570 (mean over seeds) | | {kept} |"),
        say(name, "SQuAD: mean F1", f"(mean F1 {q['mean_f1/none']:.3f} -> {q['mean_f1/qa_lexical']:.3f} / {q['mean_f1/qa_heuristic']:.3f})"),
        say(name, "SQuAD: agreement", f"({pairs})"),
        say(name, "SQuAD: position keeps", f"Position alone keeps {q['selected_fraction/qa_position']:.0%}"),
    ]


def _amplified() -> list[Check]:
    """Consensus marking, the marking seeds, the whole dev set, MNLI, the debiasing schemes."""
    name, cons = "amplify_snli_consensus.json", result("amplify_snli_consensus.json")
    drops = cons["consensus_drop_over_groups"]
    single, consensus = (list(cons[f"jaccard_between_groups_{k}"].values()) for k in ("minority", "minority_consensus"))
    spread = result("amplify_snli_marking_spread.json")["definitions"]["minority"]
    seeds = [_pt(spread["per_marking_seed"][k]["drop"]) for k in sorted(spread["per_marking_seed"])]
    t = result("amplify_snli.json")["table1"]
    biased = [100 * t[d]["orig"]["biased"]["mean"] for d in t]
    out = [
        say(name, "consensus Jaccard", f"its sets overlap at Jaccard {_span(consensus, '.2f')} against {_span(single, '.2f')} for single seeds"),
        say(name, "consensus drops", "its amplified drop ranged ", _pt(max(drops["values"])), " to ", _pt(min(drops["values"])), ", sd ", _pt(drops["sd"]), ", against sd ", _pt(cons["first_seed_minority_drop_over_groups"]["sd"])),
        say("amplify_snli_marking_spread.json", "minority drop per marking seed", "gives minority drops of " + ", ".join(seeds[:-1]) + " and " + seeds[-1] + " points (sd ", _pt(spread["drop_over_marking_seeds"]["sd"]), ")"),
        say("amplify_snli.json", "whole dev set", f"score {t['minority']['orig']['full']['mean']:.1%} (full), {t['minority']['orig']['random']['mean']:.1%} (random) and {_span(biased, '.1f')}% (biased)"),
    ]
    name, mnli = "amplify_mnli.json", result("amplify_mnli.json")
    mt = mnli["table1"]
    def drop(d: str) -> tuple[str | None, ...]:
        x = mt[d]["drop_biased_minus_random"]
        return _pt(x["mean"]), " [", _pt(x["ci_low"]), ", ", _pt(x["ci_high"], "+.1f"), "]"
    out += [
        say(name, "MNLI: whole test portion", f"scores {mt['cartography']['orig']['full']['mean']:.1%} on the whole test portion"),
        say(name, "MNLI: footnote 10", f"({mnli['minority_rule']['not_majority_share_train']:.1%} not-majority"),
        say(name, "MNLI: cartography", "cartography ", *drop("cartography"), f" ({mt['cartography']['n_test_anti_biased']} pairs; full-data model {mt['cartography']['full']['mean']:.1%})"),
        say(name, "MNLI: minority", "minority ", *drop("minority"), f" ({mt['minority']['n_test_anti_biased']}; full {mt['minority']['full']['mean']:.1%}; the biased model is below chance there, {mt['minority']['biased']['mean']:.1%})"),
        say(name, "MNLI: partial-input cartography", f"(full-data model {mt['partial_input_cartography']['full']['mean']:.1%}, below chance)"),
    ]
    name, deb = "amplify_debias_snli.json", result("amplify_debias_snli.json")
    r = deb["table"]
    def acc(scheme: str) -> tuple[str | None, ...]:
        return _pt(r[scheme]["anti_biased_mean"]), " ± ", _pt(r[scheme]["anti_biased_sd"])
    same = result("amplify_snli_cartography.json")["table1"]["cartography"]
    d = same["drop_biased_minus_random"]
    return [*out,
        say(name, "debiasing schemes", "trained on the biased split ", *acc("biased"), "; self-debiasing", None, "reweighting) ", *acc("self-debiasing"), "; the 33% most ambiguous examples of the biased split ", *acc("ambiguous filtering"),
             f" ({deb['n_ambiguous']:,} pairs; dev accuracy drops to {r['ambiguous filtering']['dev_mean']:.1%}); the whole training split ", *acc("100% train")),
        say("amplify_snli_cartography.json", "same-family evaluation", f"scored the full-data model at {same['full']['mean']:.1%} on cartography's anti-biased split and gave ", _pt(d["mean"], "+.1f"), " [", _pt(d["ci_low"]), ", ", _pt(d["ci_high"], "+.1f"), "]"),
    ]


def _tra() -> list[Check]:
    """Token relevance agreement on SNLI dev, the fast map against the fine-tuned one."""
    name, ft = "finetune.json", result("finetune.json")
    t, views = ft["tra_snli_9842"], ft["agreement_fast_vs_finetune"]["views"]
    rho = {v: views[v]["fast_mlp_10ep"]["eval"]["spearman_confidence"] for v in views}
    var_dev = {v: views[v]["fast_mlp_10ep"]["eval"]["spearman_variability"] for v in views}
    var_all = [x[split]["spearman_variability"] for v in views.values() for k, x in v.items() if k.startswith("fast_mlp") for split in ("train", "eval")]
    return [
        say(name, "variability: dev and everywhere", f"(Spearman {var_dev['full']:+.2f} and {var_dev['hypothesis_only']:+.2f} on dev; {min(var_all):+.2f} to {max(var_all):+.2f} over both splits and 3- or 10-epoch fast maps)"),
        say(name, "mean TRA", f"9-10) {t['tra_mean']:.3f} over all {t['n_scored']:,} pairs ({t['tra_mean_pad_alignment']:.3f} with the paper's literal zero padding; a uniform-relevance reference scores {t['tra_mean_uniform_ssc_reference']:.3f}"),
        say(name, "fast map vs fine-tuned", f"at Spearman {rho['full']:.2f} (full input) and {rho['hypothesis_only']:.2f} (hypothesis only) on dev"),
        say(name, "fast map vs fine-tuned, cartography section", f"agrees with a fine-tuned MiniLM's map at Spearman {rho['full']:.2f} on SNLI dev"),
    ]


def _debiasing() -> list[Check]:
    """The calibrated bias model, the chance-corrected gains, the grid, cross-bias, planted;
    the fine-tuned table (the fast table is checked in ``test_docs_figures.py``)."""
    name, m = "debiasing.json", result("debiasing.json")["snli"]["metrics"]
    gains = ", ".join(f"{label} {m[f'hard_gain_{k}']:+.3f}" for k, label in (("learned_mixin", "LearnedMixin"), ("reweight", "reweighting"), ("learned_mixin_h", "LearnedMixin+H"), ("poe", "PoE")))
    planted = result("debiasing.json")["planted"]["reliance"]
    grid = result("debiasing_entropy_grid.json")["grid"]
    cells = [f"{g['last']:.3f} / {g['hard_accuracy_last']:.3f} at {'H = ' if float(h) == 0 else ''}{round(float(h), 3):g}" for h, g in grid.items()]
    cross = result("debiasing_cross_bias.json")["snli"]["cross_bias"]
    length = {k: f"{cross[k]['hypothesis_length']['overlap_rate']:.3f}" for k in ("poe", "reweight", "learned_mixin_h")}
    out = [
        say(name, "bias model calibration", f"T = {m['bias_model_temperature']:.2f}; on dev its accuracy is {m['bias_model_accuracy']:.3f} (was 0.584), ECE {m['bias_model_ece_before']:.3f} -> {m['bias_model_ece']:.3f} and NLL {m['bias_model_nll_before']:.3f} -> {m['bias_model_nll']:.3f} (before -> after scaling; out-of-fold on the training split ECE {m['bias_model_oof_ece_before']:.3f} -> {m['bias_model_oof_ece']:.3f})"),
        say(name, "hard subset", f"= the {m['n_hard']:,.0f} dev pairs this bias model gets wrong"),
        say(name, "best chance-corrected gain", f"confidence regularization, {m['best_hard_gain']:+.3f} (95% interval [{m['best_hard_gain_low']:+.3f}, {m['best_hard_gain_high']:+.3f}], Bonferroni over 6 methods; {gains})"),
        say(name, "planted: share of the reliance removed", f"remove less of it ({planted['poe']['share_removed']:.0%} and {planted['reweight']['share_removed']:.0%}, from"),
        say("debiasing_entropy_grid.json", "entropy-weight grid", "gives dev / hard accuracy " + ", ".join(cells[:-1]) + " and " + cells[-1]),
        say("debiasing_cross_bias.json", "cross-bias: LearnedMixin on overlap", f"while plain LearnedMixin raises it ({cross['learned_mixin']['overlap_rate']['overlap_rate']:+.3f};"),
        say("debiasing_cross_bias.json", "cross-bias: targeting length", f"the overlap bias by {length['poe']} (PoE), {length['reweight']} (reweighting) and {length['learned_mixin_h']} (LearnedMixin+H)"),
    ]
    name, ft = "debiasing_finetune.json", result("debiasing_finetune.json")["snli_finetune"]
    for r in ft["table"]:
        out.append(row(name, f"fine-tuned table: {r['method']}", f"| {r['accuracy']:.3f} ± {r['accuracy_sd']:.3f} | {r['hard_accuracy']:.3f} ± {r['hard_accuracy_sd']:.3f} | {r['bias_overlap_rate']:.3f} | {r['epochs_to_best']:.0f} | {r['train_s']:.1f} |"))
    fm = ft["metrics"]
    return [*out,
        say(name, "fine-tuned: bias model", f"(T = {fm['bias_model_temperature']:.2f}, dev ECE {fm['bias_model_ece_before']:.3f} -> {fm['bias_model_ece']:.3f}, out-of-fold accuracy {fm['bias_model_oof_accuracy']:.3f}), dev = SNLI dev, hard = the {fm['n_hard']:,.0f} dev pairs"),
        say(name, "fine-tuned: best gain", f"(best: reweighting {fm['best_hard_gain']:+.3f}, 95% interval [{fm['best_hard_gain_low']:+.3f}, {fm['best_hard_gain_high']:+.3f}])"),
    ]
# fmt: on


_SECTIONS: dict[str, Callable[[], list[Check]]] = {
    "extras": _extras,
    "leakage": _verdict_and_leakage,
    "prediction bias": _prediction_bias,
    "AFLite": _aflite,
    "fine-tuning and scale": _training_and_scale,
    "cartography": _cartography,
    "PECO": _peco,
    "fairness": _fairness,
    "amplified splits": _amplified,
    "TRA": _tra,
    "debiasing": _debiasing,
}


@parametrize_checks(_SECTIONS)
def test_the_readme_quotes_the_result(section, what, name, texts, one_line):
    assert_quoted(README, texts, one_line, f"{section}, {what}: bench/results/{name}")
