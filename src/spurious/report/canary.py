"""The report's canary block: from which strength this audit detects a planted shortcut.

Shown when the run directory holds ``canary/canary.json`` (``spurious audit --canary``
writes it with :meth:`spurious.canary.CanaryResult.save`; see :mod:`spurious.canary`).
Everything shown comes from that file and is escaped like dataset text; the plot is the
saved ``canary.svg``, embedded as a ``data:`` image (an image cannot run script).

Examples
--------
>>> import tempfile
>>> str(canary_block(tempfile.mkdtemp(), {}))
''
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from markupsafe import Markup

from spurious.report.components import (
    Plot,
    callout,
    figure_block,
    finite,
    format_number,
    html_table,
    render_fragment,
)
from spurious.utils.io import read_json

__all__ = ["CANARY_DIR", "canary_block"]

#: Where the canary's files sit inside a run directory.
CANARY_DIR = "canary"

_BACKGROUND = {
    "shuffled": "the labels permuted first, so the unplanted copy holds no real shortcut "
    "and every detection is decided",
    "own": "the data as they are; where the unplanted copy is already flagged, a plant "
    "counts when it escalates the verdict",
}

_SECTION = """<section id="canary" class="card" aria-labelledby="canary-title">
<h2 id="canary-title">Canary: which planted shortcuts this audit detects</h2>
{{ body }}
<p class="back"><a href="#top">Back to the findings</a></p>
</section>"""

_BODY = """<p class="summary">Synthetic shortcuts planted into copies of the training data
{%- if n %} ({{ n }} examples){% endif %}, pointing to the label <strong>{{ label }}</strong>;
background: {{ background }}. A plant is detected when the analysis' verdict flags the
planted copy and not the unplanted one; "detected from" is the smallest planted share of
the label's examples from which every larger share tried is detected.</p>
{{ warning }}{{ table }}
{% if sentences %}<ul>{% for s in sentences %}<li>{{ s }}</li>{% endfor %}</ul>{% endif %}
{% if skipped %}<p class="muted">Not tested on these data: {% for name, why in skipped %}
<code>{{ name }}</code> ({{ why }}){% if not loop.last %}; {% endif %}{% endfor %}.</p>{% endif %}
{{ figure }}
<p class="muted">Files: <code>canary/canary.json</code> (summary and thresholds),
<code>canary/canary.parquet</code> (one row per analysis and copy, with example-level
precision and recall of the planted rows). Method: docs/methods/canary.md.</p>"""


def canary_block(run_dir: str | Path, manifest: Mapping[str, Any]) -> Markup:
    """The canary section for ``run_dir`` (empty Markup when it has no canary).

    Parameters
    ----------
    run_dir : str or Path
        The run directory; its ``canary/canary.json`` is read.
    manifest : mapping
        The run's manifest: a canary written for another run (another ``created`` time or
        training data) gets a warning, not a refusal.

    Returns
    -------
    markupsafe.Markup
    """
    folder = Path(run_dir) / CANARY_DIR
    path = folder / "canary.json"
    if not path.is_file():
        return Markup("")
    try:
        doc = read_json(path)
        if not isinstance(doc, Mapping):
            raise ValueError(f"expected a JSON object, got {type(doc).__name__}")
    except (OSError, ValueError) as e:
        body = callout(title="canary/canary.json could not be read.", kind="error", pre=str(e))
        return render_fragment(_SECTION, body=body)
    config = _mapping(doc.get("config"))
    summary = [r for r in _list(doc.get("summary")) if isinstance(r, Mapping)]
    background = str(config.get("background") or "")
    body = render_fragment(
        _BODY,
        n=format_number(config["n_data"], "int") if "n_data" in config else "",
        label=str(config.get("label") or "the first label"),
        background=f"{background} ({_BACKGROUND[background]})"
        if background in _BACKGROUND
        else background or "not recorded",
        warning=_other_run_warning(_mapping(config.get("run")), manifest),
        table=_thresholds_table(_list(doc.get("thresholds")), summary),
        sentences=[str(s) for s in _list(doc.get("sentences"))],
        skipped=[(str(k), str(v)) for k, v in _mapping(doc.get("skipped")).items()],
        figure=_figure(folder / "canary.svg") if summary else Markup(""),
    )
    return render_fragment(_SECTION, body=body)


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _thresholds_table(thresholds: list[Any], summary: list[Mapping[str, Any]]) -> Markup:
    """One row per analysis x plant x size: the smallest rate detected, the largest tried."""
    tried: dict[tuple[str, str, str], float] = {}
    for r in summary:
        key = (str(r.get("analysis")), str(r.get("plant")), str(r.get("n")))
        rate = finite(r.get("rate"))
        if rate is not None:
            tried[key] = max(rate, tried.get(key, rate))
    rows = []
    for t in thresholds:
        if not isinstance(t, Mapping):
            continue
        key = (str(t.get("analysis")), str(t.get("plant")), str(t.get("n")))
        found = finite(t.get("min_rate_detected"))
        rows.append(
            [
                key[0],
                key[1],
                format_number(t.get("n"), "int"),
                "not detected" if found is None else format_number(found, "percent"),
                format_number(tried.get(key), "percent"),
            ]
        )
    if not rows:
        return Markup("")
    headers = [
        "Analysis",
        ("Plant", "kind@field: a made-up token, a length cue or an overlap cue"),
        "Examples",
        ("Detected from", "Smallest planted share of the label's examples from which "
         "every larger share tried is detected in at least half the repeats"),
        ("Largest share tried", "The top of the planted-rate grid"),
    ]  # fmt: skip
    return html_table(headers, rows, caption="Detection thresholds per analysis and plant.")


def _figure(svg: Path) -> Markup:
    try:
        data = svg.read_bytes()
    except OSError:
        return Markup("")
    uri = "data:image/svg+xml;base64," + base64.b64encode(data).decode("ascii")
    alt = "Detection rate against planted rate, one panel per plant, one line per analysis."
    caption = "Detected (dashed: escalated) against the planted share, largest size tested."
    return figure_block([Plot(uri, alt, caption)])


def _other_run_warning(stamp: Mapping[str, Any], manifest: Mapping[str, Any]) -> Markup:
    """A warning when ``canary.json`` records a run other than the manifest's."""
    if not stamp:
        return Markup("")  # written by ``spurious canary --out``: nothing to compare
    datasets = _mapping(manifest.get("datasets"))
    expected = {
        "created": manifest.get("created"),
        "fingerprint": _mapping(datasets.get("train")).get("fingerprint"),
    }
    differs = [k for k, v in expected.items() if v is not None and stamp.get(k) not in (None, v)]
    if not differs:
        return Markup("")
    return callout(
        "This canary was written for another run of this folder ("
        + ", ".join(f"{k}: {stamp.get(k)} here, {expected[k]} in the manifest" for k in differs)
        + "); it may not describe these results.",
        title="Canary from another run.",
    )
