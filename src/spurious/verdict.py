"""Verdicts: how an analysis turns its headline evidence into a severity and words.

:class:`VerdictScale` (thresholds stated once, on the analysis class) derives a severity
only from an interval's lower bound or a test against a null, never from a point
estimate; :func:`severity_of` places a number on the thresholds. Re-exported by
:mod:`spurious.analysis`, where analyses import them from.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from spurious.results import Evidence, Headline, Severity

__all__ = ["SEVERITY_ORDER", "VerdictScale", "severity_of"]


#: Severities in increasing order (``"info"``: not judged).
SEVERITY_ORDER = ("none", "low", "moderate", "high")


def severity_of(effect: float | None, *, low: float, moderate: float, high: float) -> Severity:
    """Map an effect size onto ``"none"`` / ``"low"`` / ``"moderate"`` / ``"high"``.

    Examples
    --------
    >>> severity_of(0.12, low=0.01, moderate=0.05, high=0.1)
    'high'
    >>> severity_of(None, low=0.01, moderate=0.05, high=0.1)
    'info'
    """
    if effect is None or effect != effect:  # NaN
        return "info"
    if effect >= high:
        return "high"
    if effect >= moderate:
        return "moderate"
    if effect >= low:
        return "low"
    return "none"


def _finite(x: float | None) -> bool:
    return x is not None and x == x and abs(x) != float("inf")


@dataclass(frozen=True)
class VerdictScale:
    """How an analysis turns its headline evidence into a severity and a verdict in words.

    The thresholds are stated once, on the analysis class (``verdict_scale``), so the
    report, the terminal and the docs agree on them.

    A verdict is a claim, so a severity never comes from a point estimate alone:

    - ``p_value`` (a test against a null: shuffled labels, the majority guess, chance)
      above ``alpha`` gives ``"none"``: the effect is not distinguishable from the null;
    - ``interval`` (a 95% interval of the effect, on the thresholds' scale) sets the
      degree from its *lower* bound (at least ``"low"`` when a test also rejects the
      null); when the interval spans more than one severity, the headline is marked
      ``inconclusive`` and the verdict says so ("inconclusive at this size");
    - a significant test without an interval gives the point estimate's severity, capped
      at ``"low"``: the test says that there is an effect, not how large it is;
    - neither (a bare point estimate) gives ``"info"``: shown, not judged.

    The headline records what the severity rests on under ``"evidence"``.

    Examples
    --------
    >>> scale = VerdictScale(0.01, 0.05, 0.1, {"none": "clean", "high": "strong"})
    >>> scale.headline("leakage", 0.2, "0.20 above chance", interval=(0.15, 0.25))["verdict"]
    'strong'
    >>> h = scale.headline("leakage", 0.2, "0.20", interval=(0.03, 0.3))
    >>> h["severity"], h["inconclusive"]
    ('low', True)
    >>> scale.headline("leakage", 0.2, "0.20", p_value=0.4, null="shuffled labels")["severity"]
    'none'
    >>> scale.headline("leakage", 0.005, "small", interval=(0.002, 0.008), p_value=0.001)["severity"]
    'low'
    >>> scale.headline("leakage", 0.2, "0.20")["severity"]
    'info'
    """

    low: float
    moderate: float
    high: float
    verdicts: dict[str, str] = field(default_factory=dict)
    alpha: float = 0.05

    def headline(
        self,
        label: str,
        value: float | None,
        text: str,
        *,
        effect: float | None = None,
        interval: tuple[float, float] | None = None,
        p_value: float | None = None,
        null: str | None = None,
        measured: str | None = None,
        severity: Severity | None = None,
    ) -> Headline:
        """The headline dict, with the evidence its severity rests on.

        Parameters
        ----------
        label, value, text
            What was measured, the headline number, the figure in words.
        effect : float, optional
            The effect on the thresholds' scale (default ``value``).
        interval : (float, float), optional
            A 95% interval of ``effect`` (bootstrap, seeds, ...).
        p_value : float, optional
            A test of the effect against ``null``.
        null : str, optional
            The null in words ("shuffled labels", "the majority guess").
        measured : str, optional
            What the number measures, in words, when ``label`` does not say it.
        severity : str, optional
            Set the severity directly (``"info"`` for a figure that is not a verdict).
        """
        point = value if effect is None else effect
        lo = hi = None
        if interval is not None and _finite(interval[0]) and _finite(interval[1]):
            lo, hi = float(min(interval)), float(max(interval))
        # A p-value that is given and not NaN (None when there is none to test with).
        p = p_value if p_value is not None and p_value == p_value else None
        has_p = p is not None
        basis = [b for b, ok in (("interval", lo is not None), ("null_test", has_p)) if ok]
        inconclusive = False
        note = ""
        if severity is None:
            if p is not None and p > self.alpha:
                severity = "none"
                note = f"not distinguishable from {null or 'the null'} (p={p:.3g})"
            elif lo is not None:
                severity = self._severity(lo)
                if severity == "none" and has_p:
                    # The test rejects the null, so there is an effect, if a small one.
                    severity = "low"
                top = self._severity(hi)
                if SEVERITY_ORDER.index(top) > SEVERITY_ORDER.index(severity):
                    inconclusive = True
                    note = (
                        f"inconclusive at this size: the 95% interval "
                        f"[{lo:.3g}, {hi:.3g}] spans {severity} to {top}"
                    )
            elif has_p:
                severity = self._severity(point)
                if severity in ("moderate", "high"):
                    severity = "low"
                    note = "significant, but no interval bounds its size"
            else:
                severity = "info"
                if _finite(point):
                    note = "a point estimate without an interval or a null test: not judged"
        verdict = self.verdicts.get(severity, "")
        if note:
            verdict = f"{verdict} ({note})" if verdict else note
        evidence: Evidence = {
            "basis": "+".join(basis) or "point",
            "interval": None if lo is None or hi is None else [lo, hi],
            "p_value": None if p is None else float(p),
            "null": null,
            "measured": measured or label,
        }
        return {
            "label": label,
            "value": value,
            "text": text,
            "verdict": verdict,
            "severity": severity,
            "inconclusive": inconclusive,
            "evidence": evidence,
        }

    def _severity(self, effect: float | None) -> Severity:
        sev = severity_of(effect, low=self.low, moderate=self.moderate, high=self.high)
        return "none" if sev == "info" else sev
