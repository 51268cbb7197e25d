"""Text from a results file, quoted for where it goes. A results file may come from anyone (one
attached to a bug report): its ids, reasons and names are shown on a terminal and written to
spreadsheets, and neither may act on them.

- `terminal`: control characters (ESC and the rest of C0 and C1, DEL) and Unicode format
  characters (bidi overrides, zero widths) are written as escapes (``\\x1b``, ``\\u202e``): an
  id with ``ESC[2J`` cleared the screen of whoever ran `gemmconf report diff` on it.
- `csv_cell`: a text cell that starts with ``=``, ``+``, ``-``, ``@``, tab or carriage return is
  a formula to a spreadsheet (``=HYPERLINK(...)``, ``@SUM(...)``); such a cell gets a leading
  ``'``, which spreadsheets read as "text" (OWASP's advice for CSV injection).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal(text: str) -> str:
    """`text` with every character a terminal would act on written as an escape (newlines and
    tabs kept)."""
    text = _CONTROL.sub(lambda m: _escape(m.group()), text)
    if text.isascii():
        return text
    return "".join(_escape(c) if unicodedata.category(c) == "Cf" else c for c in text)


def csv_cell(value: Any) -> Any:
    """A cell's value: text that a spreadsheet would run as a formula gets a leading quote;
    numbers and other text are kept as they are."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value
