"""What the static pages (the conformance page, the matrix page) share: their Jinja environment,
the JSON they embed in a <script> element, the assets they inline, and the base of their style
sheets (`templates/base.css`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jinja2

TEMPLATES = Path(__file__).with_name("templates")


def environment() -> jinja2.Environment:
    """Autoescaping, strict about undefined names, templates from `templates/`."""
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def script_json(value: Any) -> str:
    """JSON that cannot end the <script> element it sits in nor open a comment."""
    text = json.dumps(value, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def asset(name: str) -> str:
    """A script or style sheet of `templates/` to inline; refused if it could close its element."""
    text = (TEMPLATES / name).read_text()
    if "</script" in text.lower() or "</style" in text.lower():
        raise ValueError(f"{name} must not contain a closing </script> or </style> tag")
    return text


def stylesheet(name: str) -> str:
    """A page's style sheet to inline (markup-safe): the pages' shared base, then `name`'s own
    rules."""
    return jinja2.utils.markupsafe.Markup(asset("base.css") + asset(name))
