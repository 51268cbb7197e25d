"""Extra pytest-html columns: backend, op, dtype, shape and err_ratio (registered when present)."""

from __future__ import annotations

from typing import Any

COLUMNS = ("backend", "op", "dtype", "shape", "err_ratio")


def record_of(report: Any) -> dict[str, Any]:
    for key, value in getattr(report, "user_properties", ()):
        if key == "gemmconf":
            return value
    return {}


class HtmlColumns:
    """pytest-html hook implementations; a plugin object, registered only if pytest-html is."""

    def pytest_html_results_table_header(self, cells: list[str]) -> None:
        for offset, name in enumerate(COLUMNS):
            cells.insert(2 + offset, f'<th class="sortable" data-column-type="{name}">{name}</th>')

    def pytest_html_results_table_row(self, report: Any, cells: list[str]) -> None:
        record = record_of(report)
        values = [
            record.get("backend", ""),
            record.get("op", ""),
            record.get("dtype", ""),
            record.get("shape", ""),
            _ratio(record),
        ]
        for offset, value in enumerate(values):
            cells.insert(2 + offset, f'<td class="col-{COLUMNS[offset]}">{value}</td>')


def _ratio(record: dict[str, Any]) -> str:
    value = (record.get("metrics") or {}).get("err_ratio")
    return "" if value is None else f"{value:.3g}"
