"""Figures the README's later sections and speed tables quote equal their committed results.

The second half of ``test_docs_figures_readme.py`` (whose docstring says how the checks
are built and what is left out): PVI, the artifact atlas and model-free associations,
the report at scale, the canary, the multiple-choice table, and the speed tables: the
GPU audits, fast paths and fine-tune loops, the SNLI dev and 550k audits of
``audit_scale.json`` (medians and ranges over their runs), one AFLite round through the
CLI, sparse AFLite, the probe's preconditioner, joint cross-fits, fast-path recording,
heuristics and threads. Not checked here: the AFLite round rows (``aflite_round.json``),
the minority scale curve and start-up, which are being re-measured, and the figures of
earlier runs that a result file keeps no copy of. The list grows as benchmarks are re-run.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable
from typing import Any

from tests._figures import ROOT, Check, assert_quoted, fmt, parametrize_checks, result, row, say

README = ROOT / "README.md"
MIB_PER_GIB = 1024
SST2 = {"0": "negative (0)", "1": "positive (1)"}


def _lo_hi(xs: list[float]) -> str | None:
    """'lo-hi', one decimal (``None`` when either end sits halfway)."""
    lo, hi = fmt(min(xs), ".1f"), fmt(max(xs), ".1f")
    return None if lo is None or hi is None else f"{lo}-{hi}"


def _mb(x: float) -> str:
    return f"{x:.1f}" if x < 10 else f"{x:.0f}"


def _secs(xs: list[float]) -> str | None:
    """A median in seconds, one decimal (``None`` when it sits halfway)."""
    return fmt(statistics.median(xs), ".1f")


# fmt: off
def _pvi() -> list[Check]:
    """The SNLI table (V-information per input, accuracies), agreement, cost at scale."""
    name, pvi = "pvi_real.json", result("pvi_real.json")["runs"]
    out = []
    for setting, label in (("snli_oof", "5-fold out of fold"), ("snli_test_dev", "SNLI dev")):
        for feats, probe in (("tfidf", "tf-idf"), ("minilm", "MiniLM")):
            r = pvi[f"{setting}/{feats}"]
            views = ("full", "hypothesis_only", "premise_only")
            cells = " | ".join("{:.3f} [{:.3f}, {:.3f}]".format(*r["v_info"][v]) for v in views)
            acc = " / ".join(f"{r['accuracy'][v]:.3f}" for v in views)
            out.append(row(name, f"table: {setting}, {feats}", f"{label} | {probe} | {cells} | {acc} |"))
    key = "spearman_pvi_hyp_minilm_vs_leak_tfidf"
    oof, t2d = pvi["snli_oof/agreement"][key], pvi["snli_test_dev/agreement"][key]
    tfidf, minilm = pvi["snli_oof/tfidf"]["seconds"], pvi["snli_oof/minilm"]["seconds"]
    scale, sizes = result("atlas_scale.json")["pvi"], ("10000", "100000", "1000000")
    own = [scale[n]["pvi_cpu_s_reusing_partial_input"] for n in sizes]
    probes = [scale[n]["partial_input_cpu_s"] for n in sizes]
    bits = ", ".join(f"{scale[n]['v_info_hypothesis_only']:.2f}" for n in sizes)
    return [*out,
        say(name, "across representations", f"{oof:.3f} out of fold and {t2d:.3f} test -> dev"),
        say(name, "the probes' CPU", f"(tf-idf out of fold: {tfidf['partial_input_cpu']:.1f} CPU s; MiniLM: {minilm['partial_input_cpu']:.1f} CPU s"),
        say("atlas_scale.json", "at scale", f"takes {own[0]:.1f} / {own[1]:.1f} / {own[2]:.0f} CPU s at 10k / 100k / 1M rows (the out-of-fold tf-idf probes before it: {probes[0]:.1f} / {probes[1]:.0f} / {probes[2]:.0f} CPU s; peak {scale['1000000']['peak_rss_mb'] / 1000:.1f} GB at 1M"),
        say("atlas_scale.json", "V-information at scale", f"(hypothesis-only {bits} bits)"),
    ]


def _atlas() -> list[Check]:
    """The atlas table, the top tokens per label, the nine words, the associations table."""
    name, real = "atlas_real.json", result("atlas_real.json")
    data = {"snli_dev": "SNLI dev", "mnli_dev_matched": "MNLI dev-matched", "sst2_train": "SST-2 train", "cad_original_train": "CAD original train",
            "cad_revised_hypothesis_train": "CAD revised-hypothesis train", "cad_revised_hypothesis_train_subsample": "CAD revised-hypothesis, 1,666 sampled"}
    out = []
    for key, label in data.items():
        a = real["atlas"][key]
        for field, f in a["per_field"].items():
            if key.startswith("cad") and field == "premise":
                continue  # the table's CAD rows are the hypotheses; a sentence covers the premises
            cpu = f" {a['cpu_s']:.2f} |" if field != "premise" else ""
            out.append(row(name, f"table: {key}, {field}", f"| {label} | {a['n']:,} | {field} | {f['n_tested']:,} | {f['n_significant_bonferroni']:,} | {f['n_significant_bh']:,} | {f['n_flagged_shuffled_labels']} | {f['share_examples_flagged']:.1%} |{cpu}"))
    for key, label in (("snli_dev", "SNLI dev"), ("mnli_dev_matched", "MNLI dev-m"), ("sst2_train", "SST-2 train")):
        field = "text" if key == "sst2_train" else "hypothesis"
        for lab, tokens in real["atlas"][key]["per_field"][field]["top10_by_z"].items():
            pieces: list[str | None] = [f"| {label} | {SST2.get(lab, lab)} |"]
            for t in tokens:
                pieces += [None, f" {t['token']} ", fmt(t["z"], ".1f"), "/", fmt(t["pmi"], ".2f")]
            out.append(row(name, f"top tokens: {key}, {lab}", *pieces))
    for word, w in real["atlas"]["snli_dev"]["gururangan_table4_words"].items():
        yes = " | ".join("yes" if w[k] else "no" for k in ("flagged_bonferroni", "flagged_bh"))
        out.append(row(name, f"nine words: {word}", f"| {word.replace('->', ' -> ')} | {w['n']} | {w['p_hat']:.2f} | ", fmt(w["z"], ".1f"), f" | {w['pmi']:.3f} | {w['z_rank_at_label']} | {yes} |"))
    for key, label in (("snli_dev", "SNLI dev"), ("mnli_dev_matched", "MNLI dev-m"), ("squad_dev", "SQuAD dev")):
        for f in real["associations"][key]["features"]:
            if not f["significant"] or (key != "snli_dev" and f["feature"] in ("all_words_in_premise", "is_subsequence")):
                continue  # MNLI's two zero-effect features share one row
            lo, hi = f["effect_ci"]
            out.append(row(name, f"associations: {key}, {f['feature']}", f"| {label} | {f['feature']} | ", fmt(f["effect"], "+.3f"), f" [{lo:+.3f}, {hi:+.3f}] | ", fmt(f["mi_bits"], ".3f"), " | ", fmt(f["p_bh"], ".3f"), " |"))
    cpu = [real["associations"][k]["cpu_s"] for k in ("snli_dev", "mnli_dev_matched", "squad_dev", "sst2_train")]
    scale = result("atlas_scale.json")
    big = scale["associations_1000_permutations"]["1000000"]
    return [*out,
        say(name, "associations' CPU", f"{cpu[0]:.1f} s (SNLI), {cpu[1]:.1f} s (MNLI), {cpu[2]:.1f} s (SQuAD), {cpu[3]:.1f} s (SST-2)"),
        say("atlas_scale.json", "1M pairs", f"the atlas {scale['unigrams']['1000000']['atlas_wall_s']:.1f} s wall on a quiet 2-core machine (goal: 60 s), the associations {big['associations_cpu_s_heuristics_cached']:.1f} CPU s once the heuristics are computed ({big['heuristics_cpu_s']:.0f} CPU s"),
    ]


def _report_and_canary() -> list[Check]:
    """The report's size and load time by rows; the canary's table and example-level figures."""
    out = []
    for n, s in result("report_scale.json")["sizes"].items():
        rows = f"{int(n) // 1000}k" if int(n) < 10**6 else "1M"
        out.append(row("report_scale.json", f"report: {rows}", f"| {rows} | {s['report_bytes'] / 1000:.0f} kB | {_mb(sum(s['parquet'].values()) / 1e6)} MB | {s['chromium']['load_s']:.2f} s |"))
    columns = [("snli_shuffled", "token@hypothesis"), ("snli_shuffled", "token@premise"), ("snli_shuffled", "length@hypothesis"), ("snli_shuffled", "overlap@hypothesis"),
               ("snli_shuffled_n2000", "token@hypothesis"), ("mnli_shuffled", "token@hypothesis"), ("mnli_shuffled", "length@hypothesis"), ("sst2_shuffled", "token@text"), ("sst2_shuffled", "length@text")]
    found: dict[tuple[str, str, str], str] = {}
    for setting in {c[0] for c in columns}:
        for sentence in result(f"canary_{setting}.json")["sentences"]:
            m = re.search(r": (\w+) (?:detects|does not detect) (\S+@\w+)(?: planted in >= ([\d.]+)%)?", sentence)
            found[(setting, m[1], m[2])] = f">= {float(m[3]):g}%" if m[3] else "no"
    for analysis in ("atlas", "associations", "partial_input", "pvi"):
        cells = [found.get((s, analysis, plant)) for s, plant in columns]  # None: not run (one field)
        out.append(row("canary_*.json", f"canary table: {analysis}", f"| {analysis} ", *[x for c in cells for x in (None, c and f"| {c}")]))
    def at(setting: str, rate: float) -> dict[str, Any]:
        return {s["analysis"]: s for s in result(f"canary_{setting}.json")["summary"] if s["rate"] == rate and s["plant"].startswith("token@hyp")}
    def pr(s: dict, recall: str = "") -> str:
        return f"{s['precision']:.2f} / {recall}{s['recall']:.2f}"
    r3, own, slow = at("snli_shuffled_r3", 0.05), at("snli_own", 0.2), at("snli_slow_n2000", 0.2)
    walls = [result(f"canary_{s}.json")["seconds_wall"] for s in ("snli_shuffled", "mnli_shuffled", "sst2_shuffled", "snli_shuffled_n2000")]
    per = {a: t["mean"] for a, t in result("canary_snli_shuffled.json")["seconds_per_analysis"].items()}
    slow_per = {a: t["mean"] for a, t in result("canary_snli_slow_n2000.json")["seconds_per_analysis"].items()}
    return [*out,
        say("canary_snli_shuffled_r3.json", "example level, shuffled background", f"atlas' flags have precision {pr(r3['atlas'], 'recall ')}, pvi's {pr(r3['pvi'])}, partial_input's {pr(r3['partial_input'])} (its flag needs p(gold) >= 0.9); chance precision {r3['atlas']['chance_precision']:.3f}"),
        say("canary_snli_own.json", "example level, own background", f"precision {pr(own['partial_input'], 'recall ')}, pvi's {pr(own['pvi'])}, atlas' {pr(own['atlas'])} (chance {own['atlas']['chance_precision']:.3f})"),
        say("canary_snli_slow_n2000.json", "slow analyses' flags", f"precision {pr(slow['aflite'], 'recall ')} and peco's (in a biased region and labelled with its dominant label) {pr(slow['peco'])}"),
        say("canary_snli_slow_n2000.json", "minority's flags at chance", f"(precision {slow['minority']['precision']:.2f}, chance {slow['minority']['chance_precision']:.3f})"),
        say("canary_*.json", "re-run wall times", f"grid took {walls[0]:.0f} s wall, MNLI (6 copies) {walls[1]:.0f} s, SST-2 (6 copies) {walls[2]:.1f} s, SNLI n=2000 (6 copies) {walls[3]:.1f} s."),
        say("canary_snli_shuffled.json", "re-run: seconds per copy", f"partial_input {per['partial_input']:.2f} s, associations {per['associations']:.2f} s, pvi {per['pvi']:.2f} s (reusing partial_input's probabilities), atlas {per['atlas']:.2f} s;"),
        say("canary_snli_slow_n2000.json", "slow analyses: seconds per copy", "at n = 2,000: " + ", ".join(f"{a} {t:.2f}" for a, t in sorted(slow_per.items(), key=lambda kv: -kv[1])) + " (the first run"),
        say("canary_snli_slow_n2000.json", "slow analyses' wall time", f"`bench/results/canary_snli_slow_n2000.json`, {result('canary_snli_slow_n2000.json')['seconds_wall']:.0f} s wall"),
    ]


def _mcq() -> list[Check]:
    """The benchmarks table, MMLU's subjects, AFLite and cartography on option blocks."""
    name, b = "mcq_leakage.json", result("mcq_leakage.json")["benchmarks"]
    benchmarks = [b[k] for k in ("arc_challenge", "commonsenseqa", "mmlu")]
    def mcq_row(what: str, cell) -> Check:
        return row(name, f"table: {what}", f"| {what} | " + " | ".join(cell(x) for x in benchmarks) + " |")
    def letters(x: dict) -> str:
        m = x["cues_metrics"]
        shares = " / ".join(f"{100 * m[f'letter_{c}_share']:.1f}" for c in "ABCDE" if m.get(f"letter_{c}_expected_share", 0) > 0.01)
        p = m["position_p_value"]
        return f"{shares}%, p {p:.1e}" if p < 0.001 else f"{shares}%, {'chi-square ' if x is benchmarks[0] else ''}p {p:.2f}"
    views = lambda x: x["views"]  # noqa: E731
    out = [
        mcq_row("chance (mean 1/k)", lambda x: f"{x['chance']:.3f}"),
        mcq_row("choices-only accuracy [95% CI]", lambda x: "{:.3f} [{:.3f}, {:.3f}]".format(views(x)["choices_only"]["accuracy"], *views(x)["choices_only"]["accuracy_ci"])),
        mcq_row("Delta over chance (verdict)", lambda x: "{:+.3f} [{:+.3f}, {:+.3f}] ({})".format(views(x)["choices_only"]["delta_chance"], *views(x)["choices_only"]["delta_chance_ci"], x["leakage_headline"]["severity"])),
        mcq_row("full (question + options) / question-only", lambda x: f"{views(x)['full']['accuracy']:.3f} / {views(x)['question_only']['accuracy']:.3f}"),
        mcq_row("gold letters A/B/C/D(/E)", letters),
    ]
    top = b["mmlu"]["top_groups"]
    subjects = [f"{g['group']} {g['delta_chance']:+.3f} [{g['delta_chance_ci_low']:+.3f}, {g['delta_chance_ci_high']:+.3f}] ({g['n']})" for g in top[:2]]
    subjects += [f"{g['group']} {g['delta_chance']:+.3f} ({g['n']})" for g in top[2:5]]
    ac = result("mcq_aflite_cartography.json")["benchmarks"]
    arc, mmlu = ac["arc_challenge"], ac["mmlu"]
    def aflite(x: dict) -> tuple[str, None, str]:
        return f"removes {x['aflite_removed_share']:.1%}; ", None, f"{x['choices_only_all']['beyond_chance']:+.3f} -> {x['choices_only_kept']['beyond_chance']:+.3f} |"
    return [*out,
        say(name, "MMLU subjects", "n): " + ", ".join(subjects)),
        row("mcq_aflite_cartography.json", "table: AFLite", "| AFLite (MiniLM option blocks, defaults) | ", *aflite(arc), None, *aflite(mmlu)),
        say("mcq_aflite_cartography.json", "cartography: longest gold", f"are {arc['gold_longest_share_all']:.1%} of ARC but {arc['gold_longest_share_easy']:.1%} of its easy-to-learn region (Fisher odds ratio {arc['fisher_odds_ratio']:.2f}, p {arc['fisher_p']:.3f}) and {mmlu['gold_longest_share_all']:.1%} of MMLU but {mmlu['gold_longest_share_easy']:.1%} of its easy-to-learn region (odds ratio {mmlu['fisher_odds_ratio']:.1f})"),
    ]


def _gpu() -> list[Check]:
    """The GPU audits (550k pairs, SNLI dev), the fast paths, the H100 fine-tune loops."""
    name, gpu = "audit_gpu.json", result("audit_gpu.json")["parts"]
    big = gpu["snli_like_550000_cuda"]
    walls = {k: v["wall_s"] for k, v in big["steps"].items()}
    dyn = [v for k, v in walls.items() if k.startswith("artifact:training_dynamics")]
    enc = next(v for k, v in walls.items() if k.startswith("artifact:features") and "view=full" in k)
    dev, cpu, p = [gpu["snli_dev_cuda"], gpu["snli_dev_cuda_r2"]], gpu["snli_dev_cpu_r2"], gpu["paths"]
    peaks = sorted(r["gpu_peak_mib_device_wide"] / MIB_PER_GIB for r in dev)
    c = result("finetune_gpu_compiled.json")
    comp, cs = c["parts"]["compiled"], c["parts"]["speed"]
    eager, tra = result("finetune_gpu.json")["parts"]["speed"], result("finetune_gpu.json")["parts"]["tra"]
    fast = comp["last_epoch_examples_per_s"]
    return [
        row(name, "550k quick audit", f"| {big['wall_s']:.0f} s ({big['wall_s'] / 60:.1f} min) wall, {big['cpu_s']:.0f} CPU-s; by step: cartography {walls['cartography']:.0f} s", None, f"minority {walls['minority']:.0f}, fast-path dynamics {dyn[0]:.0f} + {dyn[1]:.0f}, partial input {walls['partial_input']:.0f}, PECO {walls['peco']:.0f}, AFLite {walls['aflite']:.0f}, PVI {walls['pvi']:.0f}, encoding {enc:.0f} | {big['steps']['cartography']['peak_rss_gib']:.1f} GiB RSS", None, f"GPU {big['gpu_peak_mib_device_wide'] / MIB_PER_GIB:.1f} GiB"),
        say(name, "550k quick audit, on a GPU", f"the quick audit of 550k SNLI-like pairs took {big['wall_s'] / 60:.1f} minutes"),
        row(name, "SNLI dev", f"`--device cuda` {dev[0]['wall_s']:.1f} s and {dev[1]['wall_s']:.1f} s", None, f"| GPU {peaks[0]:.1f}-{peaks[1]:.1f} GiB | `--device cpu` on the same 16 cores: {cpu['wall_s']:.1f} s", None, f"| {cpu['wall_s'] / dev[1]['wall_s']:.2f}-{cpu['wall_s'] / dev[0]['wall_s']:.1f}x |"),
        row(name, "fast paths", f"dynamics (5 epochs) {p['dynamics']['cuda_s']:.2f} s vs {p['dynamics']['cpu_s']:.2f} s on the CPU; minority's MLP (2 epochs) {p['mlp_embedding']['cuda_s']:.2f} vs {p['mlp_embedding']['cpu_s']:.2f}; partial-input cross-fit (5 folds) {p['cross_fit']['cuda_s']:.2f} vs {p['cross_fit']['cpu_s']:.2f} | {p['cuda_peak_gib']:.2f} GiB GPU", None, f"| {p['dynamics']['ratio']:.1f}x, {p['mlp_embedding']['ratio']:.1f}x, {p['cross_fit']['ratio']:.1f}x", None, f"p_gold within {p['dynamics']['max_abs_p_gold_diff']:.3f}"),
        row("finetune_gpu_compiled.json", "H100, compiled", f"| {c['n_train'] / fast:.1f} s per epoch once compiled ({fast:,.0f} examples/s); the first epoch takes {comp['first_epoch_seconds_incl_compilation']:.1f} s", None, f"| {comp['gpu_peak_gib']:.2f} GiB GPU, {c['process_peak_rss_gib']:.1f} GiB RSS | plain `transformers.Trainer`, same process: {cs['median_examples_per_s']['trainer_plain']:.0f} examples/s | {fast / cs['median_examples_per_s']['trainer_plain']:.1f}x ({fast / 553:.1f}x the issue's 553/s); dev accuracy {comp['eval_accuracy']:.3f}"),
        row("finetune_gpu.json", "H100, lean loop", f"| median {eager['median_examples_per_s']['lean_training']:,.0f} examples/s ({cs['median_examples_per_s']['lean_training']:,.0f} in another run)", None, f"| Trainer {eager['median_examples_per_s']['trainer_plain']:.0f} (median; {cs['median_examples_per_s']['trainer_plain']:.0f} in the other run) | {eager['ratio_lean_over_trainer_plain']['training']:.2f}x ({cs['ratio_lean_over_trainer_plain']['training']:.2f}x)"),
        row("finetune_gpu.json", "H100, TRA", f"| {tra['relevance_seconds']['full']:.1f} s full-input, {tra['relevance_seconds']['hypothesis_only']:.1f} s hypothesis-only ({tra['relevance_examples_per_s']['full']:,.0f} and {tra['relevance_examples_per_s']['hypothesis_only']:,.0f} examples/s); mean TRA ", fmt(tra["tra_mean"], ".3f"), f" | {tra['gpu_peak_gib_relevance']:.2f} GiB GPU |"),
    ]


def _dev(prefix: str) -> dict[str, list[dict]]:
    """The cold and warm runs of ``files.<prefix>*`` in ``audit_scale.json``."""
    files = result("audit_scale.json")["files"]
    return {p: [files[k][p] for k in sorted(files) if k.startswith(prefix)] for p in ("cold", "warm")}


def _snli_dev() -> list[Check]:
    """The SNLI dev audits on the CPU: the AMD and Intel rounds, b59122c, the full profile."""
    name, out = "audit_scale.json", []
    files_ = result(name)["files"]
    for label, new, base in (("AMD", "dev_quick_amd_6e4409d", "dev_quick_amd_base"), ("Intel", "dev_quick_ward_new", "dev_quick_ward_base")):
        now, then = _dev(new), _dev(base)
        wall = {(w, p): [r["wall_s"] for r in runs_[p]] for w, runs_ in (("now", now), ("then", then)) for p in ("cold", "warm")}
        minority = {w: [r["steps"]["minority"]["wall_s"] for p in ("cold", "warm") for r in runs_[p]] for w, runs_ in (("now", now), ("then", then))}
        peak = " / ".join(f"{statistics.median(r['peak_rss_gib'] for r in now[p]):.1f}" for p in ("cold", "warm"))
        ratio = statistics.median(wall["then", "cold"]) / statistics.median(wall["now", "cold"])
        now_c, now_w, then_c, then_w = wall["now", "cold"], wall["now", "warm"], wall["then", "cold"], wall["then", "warm"]
        out += [
            row(name, f"{label}: this code", "cold median ", _secs(now_c), " s (", _lo_hi(now_c), "; goal: 60 s", None, "warm ", _secs(now_w), " s (", _lo_hi(now_w), None, f"| {peak} GiB (cold / warm) |"),
            row(name, f"{label}: the base", "cold ", _secs(then_c), " s (", _lo_hi(then_c), "), warm ", _secs(then_w), " s (", _lo_hi(then_w), ")", None, f"| cold {ratio:.2f}x"),
        ]
        m, old = minority["now"], minority["then"]
        if label == "AMD":
            out.append(row(name, f"{label}: minority step", "the minority step ", _lo_hi(m), " s over the six runs (median ", _secs(m), ")", None, "the minority step ", _lo_hi(old), " s (median ", _secs(old), ")"))
        else:
            out.append(row(name, f"{label}: minority step", "the minority step ", _secs(m), " s (median of the 8 runs; ", _lo_hi(m), ")", None, "minority ", _secs(old), " s (", _lo_hi(old), ")"))
            paired = [b / a for a, b in zip(m, old, strict=True)]
            out.append(row(name, f"{label}: minority ratio", f"the minority step {statistics.median(old) / statistics.median(m):.2f}x (ratio of the medians; the eight paired ratios {min(paired):.2f}-{max(paired):.2f}, median {statistics.median(paired):.2f})"))
    full = files_["dev_full_amd_a6ad319_r1"]
    fsteps = {k: v["wall_s"] for k, v in full["cold"]["steps"].items()}
    fenc = next(v for k, v in fsteps.items() if k.startswith("artifact:features"))
    out.append(row(name, "full profile, AMD, fifth session", f"cold cache {full['cold']['wall_s']:.1f} s, warm {full['warm']['wall_s']:.1f} s, {full['cold']['user_s'] + full['cold']['sys_s']:.0f} / {full['warm']['user_s'] + full['warm']['sys_s']:.0f} CPU-s, {full['cold']['peak_rss_gib']:.1f} / {full['warm']['peak_rss_gib']:.1f} GiB; by step (cold): AFLite {fsteps['aflite']:.0f} s, PECO {fsteps['peco']:.0f}, partial input {fsteps['partial_input']:.0f}, encoding {fenc:.0f}, cartography {fsteps['cartography']:.0f}, minority {fsteps['minority']:.0f}."))
    head = _dev("dev_quick_amd_4658cf8")
    cold, warm = ([r["wall_s"] for r in head[p]] for p in ("cold", "warm"))
    out.append(row(name, "AMD, fifth session", "cold median ", _secs(cold), " s (", _lo_hi(cold), "; goal: 60 s, met in 3 of 3), warm ", _secs(warm), " s (", _lo_hi(warm), ")"))
    amd_enc = [r["steps"]["artifact:features:featurizer=minilm,view=full,split=train"]["wall_s"] for r in _dev("dev_quick_amd_6e4409d")["cold"]]
    out.append(row(name, "AMD: the encoder, cold", "the encoder ", _secs(amd_enc), " s of the cold runs"))
    files = result(name)["files"]
    def steps(key: str, phase: str, spec: str = ".1f") -> dict[str, str]:
        return {k: format(v["wall_s"], spec) for k, v in files[key][phase]["steps"].items()}
    q, warm = files["dev_quick_b59122c"], steps("dev_quick_b59122c", "warm")
    enc = "artifact:features:featurizer=minilm,view=full,split=train"
    out.append(row(name, "b59122c", f"warm cache {q['warm']['wall_s']:.1f} s, cold {q['cold']['wall_s']:.1f} s (goal: 60 s; one run each); by step (warm): minority {warm['minority']} s, cartography {warm['cartography']}, AFLite {warm['aflite']}, PECO {warm['peco']}, partial input {warm['partial_input']}", None, f"encoding {warm[enc]} (cold: {steps('dev_quick_b59122c', 'cold')[enc]} s", None, f"| {q['warm']['peak_rss_gib']:.1f} / {q['cold']['peak_rss_gib']:.1f} GiB (warm / cold) |"))
    re_runs = [files[f"dev_quick_{c}"] for c in ("d6ce559", "f85ea8c")]
    out.append(row(name, "b59122c: re-runs", "warm ", *[x for r in re_runs for x in (fmt(r["warm"]["wall_s"], ".1f"), " / ")][:-1], f" s, cold {re_runs[0]['cold']['wall_s']:.1f} / {re_runs[1]['cold']['wall_s']:.1f} s (encoding {steps('dev_quick_d6ce559', 'cold')[enc]} / {steps('dev_quick_f85ea8c', 'cold')[enc]} s)"))
    on, off = [files[f"dev_quick_prefetch_on_r{i}"] for i in (1, 2)], [files[f"dev_quick_prefetch_off_r{i}"] for i in (1, 2)]
    def pair(rs: list[dict], phase: str, key: str = "wall_s") -> str:
        return " / ".join(f"{r[phase][key]:.1f}" for r in rs)
    r3 = files["dev_quick_prefetch_on_r3"]
    out += [
        row(name, "report helper", f"(the page was written {pair(off, 'warm', 'report_after_manifest_s')} s after the manifest without the helper, {pair(on, 'warm', 'report_after_manifest_s')} s with it), warm wall {pair(on, 'warm')} s against {pair(off, 'warm')} s; cold {pair(on, 'cold')} s against {pair(off, 'cold')} s"),
        row(name, "report helper as a subprocess", f"cold {r3['cold']['wall_s']:.1f} s, warm {r3['warm']['wall_s']:.1f} s, the page written {r3['warm']['report_after_manifest_s']:.1f} s after the manifest; {r3['cold']['tree_peak_rss_gib']:.2f} / {r3['warm']['tree_peak_rss_gib']:.2f} GiB", None, f"{r3['cold']['peak_rss_gib']:.2f} / {r3['warm']['peak_rss_gib']:.2f} for the run's own process"),
    ]
    full, cold, warm = files["dev_full_03f9be3"], steps("dev_full_03f9be3", "cold", ".0f"), steps("dev_full_03f9be3", "warm")
    cpu = [full[p]["user_s"] + full[p]["sys_s"] for p in ("cold", "warm")]
    helper = [files["dev_full_prefetch_off_r1"], files["dev_full_prefetch_on_r1"]]
    out.append(row(name, "full profile", "cold cache ", fmt(full["cold"]["wall_s"], ".1f"), f" s, warm {full['warm']['wall_s']:.1f} s (goal: 3 min; one run each, at 03f9be3), {cpu[0]:.0f} / {cpu[1]:.0f} CPU-s; by step (cold): PECO {cold['peco']} s, cartography {cold['cartography']}, minority {cold['minority']}, AFLite {cold['aflite']}, partial input {cold['partial_input']} ({warm['partial_input']} warm), encoding {cold[enc]} ({warm[enc]} warm", None, f"| {full['cold']['peak_rss_gib']:.1f} / {full['warm']['peak_rss_gib']:.1f} GiB (cold / warm) |", None, f"cold {pair(helper, 'cold')} s, warm {pair(helper, 'warm')} s (off / on); the page was written {helper[0]['cold']['report_after_manifest_s']:.1f} / {helper[0]['warm']['report_after_manifest_s']:.1f} s after the manifest without it, {helper[1]['cold']['report_after_manifest_s']:.1f} / {helper[1]['warm']['report_after_manifest_s']:.1f} s with it"))
    return out
def _scale() -> list[Check]:
    """The 550k quick audit (now, at 02ec237, at b59122c), the full profile, the size curve."""
    name, a = "audit_scale.json", result("audit_scale.json")
    other = a["other_runs"]
    def cpu(r: dict) -> float:
        return r["user_s"] + r["sys_s"]
    def walls(r: dict, spec: str = ".0f") -> dict[str, str]:
        return {k.split(",")[1] if k.startswith("artifact:training") else k: format(v["wall_s"], spec) for k, v in r["steps"].items()}
    head = a["runs"]["quick"]["550000"]
    now, amd, pre = other["quick_550000_d6739e6"], other["quick_550000_02ec237"], other["quick_550000_b59122c"]
    w_head, w_now, w_amd, w_pre = walls(head), walls(now), walls(amd), walls(pre)
    dyn = "view=full"
    old = {k: other[f"quick_550000_{k}"] for k in ("cbef966", "3b311bb", "bb4ad51", "da26dab", "177c38a_run1", "177c38a_run2")}
    peaks = {k: v["steps"] for k, v in (("pre", pre),)}["pre"]
    full = a["runs"]["full"]["550000"]
    w_full = walls(full)
    q = a["runs"]["quick"]
    growth = a["growth_exponent"]["quick"]
    return [
        row(name, "550k quick, AMD at 7caa946", f"{head['wall_s'] / 60:.1f} min ({head['wall_s']:,.0f} s) wall at 7caa946", None, f"{cpu(head):,.0f} CPU-s, peak {head['peak_rss_gib']:.1f} GiB ({head['tree_peak_rss_gib']:.1f} with the report helper; goal: 30 min, 8 GiB); by step: cartography {w_head['cartography']} s (fast-path dynamics {w_head[dyn]} + {walls(head, '.1f')['view=hypothesis_only']} of it), minority {w_head['minority']}, AFLite {w_head['aflite']}, partial input {w_head['partial_input']}, PECO {w_head['peco']}, PVI {w_head['pvi']}, encoding {walls(head, '.1f')['artifact:features:featurizer=minilm,view=full,split=train']} (texts cached)"),
        row(name, "550k quick, Intel", f"{now['wall_s'] / 60:.1f} min ({now['wall_s']:,.0f} s) wall at d6739e6 on the Intel Xeon of 2026-11-28, {cpu(now):,.0f} CPU-s, peak {now['peak_rss_gib']:.1f} GiB ({now['tree_peak_rss_gib']:.1f} with the report helper)", None,
             f"(fast-path dynamics {w_now[dyn]} vs {w_amd[dyn]} s, cartography {w_now['cartography']} vs {w_amd['cartography']}, AFLite {w_now['aflite']} vs {w_amd['aflite']}, minority {w_now['minority']} vs {w_amd['minority']})"),
        row(name, "550k quick, AMD at 02ec237", f"{amd['wall_s'] / 60:.1f} min ({amd['wall_s']:,.0f} s) wall at 02ec237, {cpu(amd):,.0f} CPU-s", None, f"the page written {amd['report_after_manifest_s']:.1f} s after the manifest; by step: cartography {w_amd['cartography']} s, minority {w_amd['minority']}, AFLite {w_amd['aflite']}, partial input {w_amd['partial_input']}, PECO {w_amd['peco']}, PVI {w_amd['pvi']})",
             None, f"{amd['peak_rss_gib']:.1f} GiB at 02ec237 for the run's process, {amd['tree_peak_rss_gib']:.1f} GiB with its helper processes"),
        row(name, "550k quick, b59122c", f"{pre['wall_s'] / 60:.1f} min ({pre['wall_s']:,.0f} s) wall at b59122c", None, f"{cpu(pre):,.0f} CPU-s; by step: cartography {w_pre['cartography']} s (fast-path dynamics {w_pre[dyn]} + {w_pre['view=hypothesis_only']} of it), minority {w_pre['minority']}, AFLite {w_pre['aflite']}", None,
             f"PECO {w_pre['peco']}, PVI {w_pre['pvi']}, encoding {walls(pre)['artifact:features:featurizer=minilm,view=full,split=train']} (texts cached)", None,
             f"at b59122c {pre['peak_rss_gib']:.1f} GiB ({pre['peak_rss_gib']:.2f}; {old['cbef966']['peak_rss_gib']:.2f} at cbef966, {old['3b311bb']['peak_rss_gib']:.1f} at 3b311bb, {old['bb4ad51']['peak_rss_gib']:.1f} at bb4ad51, {old['da26dab']['peak_rss_gib']:.1f} at da26dab, {old['177c38a_run2']['peak_rss_gib']:.1f} at 177c38a", None,
             f"by step: minority {peaks['minority']['peak_rss_gib']:.1f}, PECO {peaks['peco']['peak_rss_gib']:.1f}, cartography {peaks['cartography']['peak_rss_gib']:.1f}, AFLite {peaks['aflite']['peak_rss_gib']:.1f}, partial input {peaks['partial_input']['peak_rss_gib']:.1f}", None,
             f"| cbef966: {old['cbef966']['wall_s'] / 60:.1f} min, {cpu(old['cbef966']):,.0f} CPU-s, {old['cbef966']['peak_rss_gib']:.1f} GiB; 177c38a: {old['177c38a_run1']['wall_s'] / 60:.1f} / {old['177c38a_run2']['wall_s'] / 60:.1f} min", None,
             f"| {old['cbef966']['wall_s'] / pre['wall_s']:.2f}x cbef966's time ({cpu(pre) / cpu(old['cbef966']):.2f}x its CPU)"),
        row(name, "550k full profile", f"{full['wall_s'] / 60:.1f} min ({full['wall_s']:,.0f} s) wall (goal: 2 h; one run, at 03f9be3), {cpu(full):,.0f} CPU-s; by step: cartography {float(w_full['cartography']):,.0f} s (10 epochs, 5 permuted-label draws per view; its dynamics {w_full[dyn]} + {w_full['view=hypothesis_only']} s), PECO {float(w_full['peco']):,.0f}", None,
             f"minority {w_full['minority']} (DeepCluster", None, f"AFLite {w_full['aflite']} (m=64", None, f"partial input {w_full['partial_input']}, encoding {w_full['artifact:features:featurizer=minilm,view=full,split=train']} | {full['peak_rss_gib']:.1f} GiB (PECO {full['steps']['peco']['peak_rss_gib']:.1f}, minority {full['steps']['minority']['peak_rss_gib']:.1f}, cartography {full['steps']['cartography']['peak_rss_gib']:.1f};", None,
             f"the quick profile on the same data: {old['3b311bb']['wall_s'] / 60:.1f} min, {old['3b311bb']['peak_rss_gib']:.1f} GiB at 3b311bb", None, f"| {full['wall_s'] / old['3b311bb']['wall_s']:.1f}x the quick profile |"),
        say(name, "550k, full profile, GPU paragraph", f"({head['wall_s'] / 60:.1f} minutes and {head['peak_rss_gib']:.1f} GiB on a 2-core AMD EPYC at 7caa946, {pre['wall_s'] / 60:.1f} minutes at b59122c", None, f"the full profile {full['wall_s'] / 60:.0f} minutes at {full['peak_rss_gib']:.1f} GiB"),
        row(name, "size curve", f"10k: {q['10000']['wall_s']:.1f} s wall, {cpu(q['10000']):.0f} CPU-s, {q['10000']['peak_rss_gib']:.2f} GiB ({other['quick_10000_bb4ad51']['wall_s']:.1f} s at bb4ad51); 100k: {q['100000']['wall_s']:.0f} s, {cpu(q['100000']):.0f} CPU-s, {q['100000']['peak_rss_gib']:.2f} GiB ({other['quick_100000_a6c62e6']['wall_s']:.0f} s at a6c62e6); 550k: {pre['wall_s']:,.0f} s, {cpu(pre):,.0f} CPU-s, {pre['peak_rss_gib']:.1f} GiB ({old['cbef966']['wall_s']:,.0f} s at cbef966)", None,
             f"it reads whole audit {growth['total']:.2f}, cartography {growth['cartography']:.2f}, AFLite {growth['aflite']:.2f}, minority {growth['minority']:.2f}, PECO {growth['peco']:.2f})"),
    ]


def _kernels() -> list[Check]:
    """The workloads of the further-figures table that are not being re-measured."""
    cli = result("aflite_cli.json")
    walls = [r["wall_s"] for r in cli["cli_runs"]]
    steps = [r["aflite_step_s"] for r in cli["cli_runs"]]
    ratio = cli["ratio"]
    sparse = result("aflite_sparse.json")["features"]
    bow, tfidf = sparse["bow"], sparse["tfidf"]
    probe = result("probe.json")["cases"]
    dense, tf = probe["dense_10k_x_1536"], probe["snli_tfidf_sparse"]
    pre = result("probe_precondition.json")["views"]
    full, hyp = pre["full"], pre["hypothesis_only"]
    joint = result("partial_input_joint.json")["cases"]
    def pair(k: str) -> tuple[str | None, ...]:
        c = joint[k]["median_wall_s"]
        spec = ".1f" if c["joint"] > 1 else ".2f"
        return fmt(c["joint"], spec), " vs ", fmt(c["by_fold"], spec), f" s ({joint[k]['ratio_by_fold_over_joint']:.2f}x)"
    rec = result("fast_path_recording.json")
    heur = result("heuristics.json")["cases"]
    th = result("threads.json")["kernels"]
    return [
        row("aflite_cli.json", "one round through the CLI", f"| {statistics.median(walls):.1f} s wall (median of 3; {min(walls):.1f}-", fmt(max(walls), ".1f"), f") on the Intel Xeon of 2026-11-28, of which the analysis {statistics.median(steps):.1f} s ({min(steps):.1f}-{max(steps):.1f}; torch", None,
             f"interleaved in one script: {cli['median']['reference_1_thread_s']:.1f} s with 1 BLAS thread, {cli['median']['reference_default_threads_s']:.1f} s with the default threads", None,
             "| ", fmt(ratio["reference_1_thread_over_cli_wall"], ".1f"), f"x / {ratio['reference_default_over_cli_wall']:.1f}x end to end", None, f"{ratio['reference_1_thread_over_aflite_step']:.1f}x / {ratio['reference_default_over_aflite_step']:.0f}x the analysis step"),
        row("aflite_sparse.json", "sparse round", f"bag of words ({bow['shape'][1]:,} columns) {bow['cpu_s']['batched']:.2f} s vs {bow['cpu_s']['sklearn_per_partition']:.2f} s ({bow['speedup_cpu_vs_sklearn']['batched']:.1f}x;", None, f"tf-idf ({tfidf['shape'][1]:,}) {tfidf['cpu_s']['batched']:.2f} s vs {tfidf['cpu_s']['sklearn_per_partition']:.1f} s ({tfidf['speedup_cpu_vs_sklearn']['batched']:.1f}x;", None,
             f"predictions agree {tfidf['prediction_agreement_batched_vs_sklearn']:.2%}", None, f"Still {bow['batched_cpu_over_dense_cpu']:.1f}x the CPU of a dense round of the same shape ({bow['batched_iterations']['median']:.0f}-{bow['batched_iterations']['max']} L-BFGS iterations"),
        row("aflite_sparse.json", "sparse round, speed table", f"| AFLite round on tf-idf, SNLI test, m=32 | {tfidf['cpu_s']['batched']:.2f} CPU-s | - | scikit-learn per partition: {tfidf['cpu_s']['sklearn_per_partition']:.1f} s | {tfidf['speedup_cpu_vs_sklearn']['batched']:.1f}x |"),
        row("probe.json", "probe, dense", f"({dense['speedup_vs_sklearn']:.1f}x; {dense['ours_iters']} iterations with the covariance preconditioner vs {dense['sklearn_iters']};", None, f"max abs probability difference {dense['max_abs_proba_diff']:.1e}".replace("e-03", "e-3"), f", predictions agree {dense['prediction_agreement']:.2%}"),
        row("probe.json", "probe, sparse", f"| {tf['ours_median_s']:.2f} s vs {tf['sklearn_median_s']:.2f} s ({tf['speedup_vs_sklearn']:.1f}x;", None, f"predictions agree {tf['prediction_agreement']:.2%}"),
        row("probe_precondition.json", "preconditioner", f"full view ({full['shape'][1]:,}-d): {full['preconditioned']['median_s']:.1f} s vs {full['plain']['median_s']:.1f} s (", fmt(full["speedup"], ".1f"), f"x), {full['preconditioned']['iterations']} iterations vs {full['plain']['iterations']}", None,
             f"hypothesis-only ({hyp['shape'][1]}-d): {hyp['preconditioned']['median_s']:.2f} vs {hyp['plain']['median_s']:.1f} s ({hyp['speedup']:.1f}x), {hyp['preconditioned']['iterations']} vs {hyp['plain']['iterations']}", None,
             f"was {full['plain']['mean_abs_p_gold_vs_minimiser']:.3f} (mean; {full['plain']['max_abs_p_gold_vs_minimiser']:.2f} at most) from the minimiser's and {1 - full['plain']['same_argmax_as_minimiser']:.1%} of its argmaxes differed", None, f"accuracy {full['preconditioned']['accuracy']:.4f} vs {full['plain']['accuracy']:.4f}"),
        row("partial_input_joint.json", "joint cross-fits", "full ", *pair("full_x1"), ", hypothesis-only ", *pair("hypothesis_only_x1"), ", premise-only ", *pair("premise_only_x1"), "; the same rows resampled to 98k: ", *pair("full_x10"), ", ", *pair("hypothesis_only_x10"), ", ", *pair("premise_only_x10"), None,
             f"within {joint['full_x1']['max_abs_proba_difference']:.4f} (10k) and {joint['full_x10']['max_abs_proba_difference']:.3f} (98k, single rows)"),
        row("fast_path_recording.json", "fast-path recording", f"100k x 32, 5 epochs {rec['logits_100k_x_32_5_epochs_s']['without_logits']:.1f} s vs {rec['logits_100k_x_32_5_epochs_s']['with_logits']:.1f} s, frame {rec['logits_frame_mib']['without_logits']:.0f} vs {rec['logits_frame_mib']['with_logits']:.0f} MiB; z-scoring a recording pass over 100k x 1536 into one buffer: {rec['zscore_pass_100k_x_1536_s']['now']:.2f} s vs {rec['zscore_pass_100k_x_1536_s']['before']:.2f} s"),
        row("heuristics.json", "heuristics", f"SNLI dev {heur['dev']['median_s']['new']['heuristics_s']:.2f} vs {heur['dev']['median_s']['baseline']['heuristics_s']:.2f} s ({heur['dev']['ratio_heuristics']:.1f}x); 100k SNLI-like pairs {heur['100000']['median_s']['new']['heuristics_s']:.1f} vs {heur['100000']['median_s']['baseline']['heuristics_s']:.1f} s ({heur['100000']['ratio_heuristics']:.1f}x); the associations' text properties {heur['100000']['ratio_properties']:.1f}x"),
        row("threads.json", "threads", f"AFLite round 20k x 384 {th['dense_small']['wall_vs_1_thread']['2_intra']:.1f}x, sparse AFLite round {th['sparse_bow']['wall_vs_1_thread']['2_intra']:.0f}x", None,
             f"2 threads ran the 100k x 768 round in {th['dense_gemm']['wall_s']['2_intra']:.2f} s vs {th['dense_gemm']['wall_s']['1']:.2f} s ({th['dense_gemm']['wall_vs_1_thread']['2_intra']:.1f}x, medians of 3); the default now subtracts the process's own share from the load average and takes 2 there ({th['dense_gemm']['wall_s']['default']:.2f} s)"),
    ]
# fmt: on


_SECTIONS: dict[str, Callable[[], list[Check]]] = {
    "PVI": _pvi,
    "atlas and associations": _atlas,
    "report and canary": _report_and_canary,
    "multiple choice": _mcq,
    "speed, GPU": _gpu,
    "speed, SNLI dev audits": _snli_dev,
    "speed, 550k audits": _scale,
    "speed, kernels": _kernels,
}


@parametrize_checks(_SECTIONS)
def test_the_readme_quotes_the_measurement(section, what, name, texts, one_line):
    assert_quoted(README, texts, one_line, f"{section}, {what}: bench/results/{name}")
