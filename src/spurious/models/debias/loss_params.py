"""Numbers the debiasing losses share: the log floor and LearnedMixin+H's entropy weight.

Torch-free, so :mod:`~spurious.models.debias.losses` (the registry) and
:mod:`~spurious.models.debias.loss_modules` (the torch modules) both read them.
"""

from __future__ import annotations

import math

from spurious.exceptions import ParameterError

__all__ = ["EPS", "PAPER_ENTROPY_PENALTY", "QA_POSITIONS", "default_entropy_penalty"]

#: Smallest bias probability used inside a log (a bias model may output exact zeros).
EPS = 1e-12
#: Paper 001's entropy weight of LearnedMixin+H, tuned for SQuAD span prediction.
PAPER_ENTROPY_PENALTY = 0.4
#: The classes paper 001's H was tuned over: start/end positions of a BERT input of
#: Hugging Face's default QA length (384 tokens).
QA_POSITIONS = 384


def default_entropy_penalty(n_classes: int) -> float:
    """LearnedMixin+H's entropy weight for ``n_classes`` classes: ``0.4 * ln K / ln 384``.

    Paper 001 tuned ``H = 0.4`` for QA spans (a softmax over ~384 positions). The
    penalty ``H * entropy(softmax(g(x) log b))`` is bounded by ``H * ln K``, so on 3
    classes the same ``H`` is, relative to the largest entropy it can remove, 5.4 times
    stronger than on QA: it drives the gate up until the main model over-corrects
    (SNLI: accuracy 0.687 at H = 0, 0.574 at H = 0.4; issue 19). Scaling by
    ``ln K / ln 384`` keeps ``H * max entropy`` at the paper's value (0.4 * ln 384 =
    2.38 nats). Pass ``entropy_penalty`` to set it explicitly.

    Examples
    --------
    >>> round(default_entropy_penalty(3), 4), round(default_entropy_penalty(384), 4)
    (0.0738, 0.4)
    """
    if isinstance(n_classes, bool) or int(n_classes) < 2:
        raise ParameterError(f"The 'n_classes' argument must be an int >= 2; got {n_classes!r}.")
    return PAPER_ENTROPY_PENALTY * math.log(int(n_classes)) / math.log(QA_POSITIONS)
