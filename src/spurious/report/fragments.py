"""Fragment rendering: the one way the report builds HTML, and the escaping rule.

Every fragment is rendered by an autoescaping Jinja template (:func:`render_fragment`),
so anything that is not already :class:`markupsafe.Markup` is escaped. The other
modules of :mod:`spurious.report` (cells, tables, blocks, sections) build on it.

Examples
--------
>>> from spurious.report.fragments import render_fragment
>>> str(render_fragment("<i>{{ x }}</i>", x="<b>"))
'<i>&lt;b&gt;</i>'
"""

from __future__ import annotations

import functools
from typing import Any

from jinja2 import Environment, StrictUndefined, Template
from markupsafe import Markup

__all__ = ["as_text", "render_fragment"]

_ENV = Environment(
    autoescape=True,
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)


@functools.lru_cache(maxsize=256)
def _compile(source: str) -> Template:
    return _ENV.from_string(source)


def render_fragment(source: str, /, **context: Any) -> Markup:
    """Render a Jinja template string with autoescaping on and return it as Markup.

    Parameters
    ----------
    source : str
        Template source (a constant of the calling module, never data). Values from
        ``context`` are escaped unless they are already :class:`markupsafe.Markup`.
    **context
        Template variables.

    Examples
    --------
    >>> str(render_fragment("<p>{{ t }}</p>", t="<b>x</b>"))
    '<p>&lt;b&gt;x&lt;/b&gt;</p>'
    """
    return Markup(_compile(source).render(**context))


def as_text(value: Any) -> str:
    """``value`` as a plain (untrusted) ``str``: Markup loses its trusted status."""
    return str.__str__(value) if isinstance(value, str) else str(value)
