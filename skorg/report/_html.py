"""A self-contained HTML report: sections of text, tables and base64 PNG figures.

The numbers of every table are also written as CSV, and all of them as one JSON file, so the
report can be read by a person and by a program.
"""

from __future__ import annotations

import base64
import csv
import html
import io
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = ["Figure", "Report", "Section", "Table", "matplotlib_available"]

PLOT_HINT = "Figures need matplotlib: pip install skorg[plot]"


def matplotlib_available():
    """Whether matplotlib can be imported (the ``plot`` extra)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _plain(value):
    # JSON and CSV want Python scalars; NaN and inf become null in JSON
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()]
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _cell(value, digits):
    value = _plain(value)
    if value is None:
        return "&ndash;"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if value == 0:
            return "0"
        if abs(value) >= 1e5 or abs(value) < 10.0 ** -(digits - 1):
            return f"{value:.{digits - 1}e}"
        if abs(value) >= 1:
            return f"{value:.{digits}g}"
        return f"{value:.{digits}f}".rstrip("0").rstrip(".")
    return html.escape(str(value))


def _is_p_value(column):
    return "p_value" in str(column)


def _p_cell(value):
    """A p-value, compactly: two significant digits (``0.012``, ``0.0022``, ``5.0e-04``),
    three decimals from 0.1 on."""
    value = _plain(value)
    if not isinstance(value, float) or value == 0 or not math.isfinite(value):
        return _cell(value, 3)
    if value >= 0.1:
        return f"{value:.3f}".rstrip("0").rstrip(".")
    if value >= 1e-3:
        digits = 1 - math.floor(math.log10(value))  # two significant digits
        return f"{value:.{digits}f}"
    return f"{value:.1e}"


# "p = 0.012", "p < 0.001", "p = 5.0e-04" in running text (after escaping): kept on one line
_P_IN_TEXT = re.compile(r"\bp (?:=|&lt;|&gt;|<=|>=) ?[0-9][0-9.]*(?:e[-+]?[0-9]+)?")


def _text(paragraph):
    """Escaped text with every p-value in a span that does not break across lines."""
    escaped = html.escape(paragraph)
    return _P_IN_TEXT.sub(lambda m: f'<span class="p">{m.group(0)}</span>', escaped)


def _header(column):
    """A column name that may wrap after its underscores when long (short ones stay whole)."""
    text = html.escape(column)
    return text if len(column) <= _WHOLE_HEADER else text.replace("_", "_<wbr>")


# headers up to this many characters never wrap
_WHOLE_HEADER = 12


# Width of the table columns in one HTML table, in em of the table's font: a table whose
# columns need more (numbers never wrap, headers wrap at underscores, text at spaces) is
# shown as several tables of at most this width, each repeating the key columns, so that it
# fits a page of about 950 pixels (the body is at most 1100 wide) without scrolling.
_TABLE_EM = 62.0


def _min_width_em(header, texts, numeric):
    """The narrowest a column can be, in em: its widest number (which never wraps), longest
    word, or longest header piece between underscores, plus the cell padding."""
    header = str(header)
    pieces = [len(p) + 1 for p in header.split("_")] if len(header) > _WHOLE_HEADER else [0]
    width = 0.62 * max(len(header) if len(header) <= _WHOLE_HEADER else 0, *pieces)
    for text in texts:  # character widths of the report's sans-serif font, bold for headers
        plain = html.unescape(text)
        if numeric:
            width = max(width, 0.6 * len(plain))
        else:
            width = max(width, 0.56 * max((len(w) for w in plain.split()), default=0))
    return width + 1.3


@dataclass
class Table:
    """Rows of numbers: a list of dicts sharing the keys ``columns``.

    ``name`` is the file stem of its CSV; ``headers`` optionally maps columns to display names;
    ``max_rows`` and ``html_columns`` limit the rows and columns shown in HTML (the CSV and
    JSON keep all of them). In HTML a table too wide for the page is split into several
    that each repeat ``key_columns`` (default: the first column); p-value columns (names
    holding ``p_value``) are written compactly and, like every number, never wrap.
    """

    name: str
    rows: list
    columns: list | None = None
    caption: str = ""
    headers: dict = field(default_factory=dict)
    digits: int = 3
    max_rows: int | None = None
    html_columns: list | None = None
    key_columns: list | None = None

    def __post_init__(self):
        if self.columns is None:
            self.columns = list(self.rows[0]) if self.rows else []

    def records(self):
        return [{c: _plain(r.get(c)) for c in self.columns} for r in self.rows]

    def to_csv(self, path):
        with open(path, "w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, fieldnames=self.columns)
            writer.writeheader()
            for record in self.records():
                writer.writerow({k: "" if v is None else v for k, v in record.items()})

    def _cells(self, row, column):
        v = row.get(column)
        text = _p_cell(v) if _is_p_value(column) else _cell(v, self.digits)
        return text, isinstance(_plain(v), (int, float))

    def _column_groups(self, columns, shown):
        """The columns of each HTML table: the key columns, then as many others as fit."""
        width = {}
        for c in columns:
            cells = [self._cells(row, c) for row in shown]
            numeric = bool(cells) and all(is_num for _, is_num in cells)
            header = self.headers.get(c, c)
            width[c] = _min_width_em(header, [text for text, _ in cells], numeric)
        keys = [c for c in (self.key_columns or columns[:1]) if c in columns]
        rest = [c for c in columns if c not in keys]
        base = sum(width[c] for c in keys)

        def pack(limit):
            groups, current, used = [], [], base
            for c in rest:
                if current and used + width[c] > limit:
                    groups.append(current)
                    current, used = [], base
                current.append(c)
                used += width[c]
            return [*groups, current]

        groups = pack(_TABLE_EM)
        if len(groups) > 1:  # as many parts, of about equal width (no one-column remnant)
            even = pack(min(_TABLE_EM, base + 1.1 * sum(width[c] for c in rest) / len(groups)))
            groups = even if len(even) == len(groups) else groups
        return [keys + group for group in groups]

    def to_html(self):
        columns = self.columns if self.html_columns is None else self.html_columns
        shown = self.rows if self.max_rows is None else self.rows[: self.max_rows]
        groups = self._column_groups(columns, shown)
        tables = []
        for part, group in enumerate(groups):
            head = "".join(f"<th>{_header(self.headers.get(c, c))}</th>" for c in group)
            body = []
            for row in shown:
                cells = []
                for c in group:
                    text, numeric = self._cells(row, c)
                    cls = ' class="num"' if numeric else ""
                    cells.append(f"<td{cls}>{text}</td>")
                body.append("<tr>" + "".join(cells) + "</tr>")
            title = self.caption
            if part and title:
                title += f" (continued, {part + 1} of {len(groups)})"
            caption = f"<caption>{html.escape(title)}</caption>" if title else ""
            tables.append(
                f"<table>{caption}<thead><tr>{head}</tr></thead>"
                f"<tbody>{''.join(body)}</tbody></table>"
            )
        more = ""
        if len(shown) < len(self.rows):
            more = f"first {len(shown)} of {len(self.rows)} rows; all of them in "
        link = f'<p class="file">{more}<code>{html.escape(self.name)}.csv</code></p>'
        return f'<div class="table-wrap">{"".join(tables)}{link}</div>'


@dataclass
class Figure:
    """A rendered figure: PNG bytes (None when matplotlib is missing) and its caption."""

    png: bytes | None
    caption: str = ""
    alt: str = ""

    @classmethod
    def from_matplotlib(cls, fig, caption="", alt="", dpi=100):
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight")
        return cls(buffer.getvalue(), caption, alt or caption)

    def to_html(self):
        caption = f"<figcaption>{html.escape(self.caption)}</figcaption>" if self.caption else ""
        if self.png is None:
            return f'<figure class="missing"><p>{PLOT_HINT}.</p>{caption}</figure>'
        data = base64.b64encode(self.png).decode("ascii")
        alt = html.escape(self.alt or self.caption, quote=True)
        return f'<figure><img src="data:image/png;base64,{data}" alt="{alt}">{caption}</figure>'


@dataclass
class Section:
    """A heading with paragraphs, tables and figures, shown in the order they were added."""

    title: str
    items: list = field(default_factory=list)

    def text(self, paragraph):
        self.items.append(("text", paragraph))
        return self

    def table(self, table):
        self.items.append(("table", table))
        return self

    def figure(self, figure):
        if figure is not None:
            self.items.append(("figure", figure))
        return self

    def tables(self):
        return [item for kind, item in self.items if kind == "table"]

    def to_html(self, anchor):
        parts = [f'<section id="{anchor}"><h2>{html.escape(self.title)}</h2>']
        for kind, item in self.items:
            if kind == "text":
                parts.append(f"<p>{_text(item)}</p>")
            else:
                parts.append(item.to_html())
        parts.append("</section>")
        return "\n".join(parts)


_CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,Helvetica,Arial,sans-serif;
margin:0 auto;max-width:1100px;padding:1.5em 2em;color:#1b1b1b;line-height:1.45}
h1{font-size:1.7em;margin-bottom:.2em}h2{border-bottom:2px solid #d7dbe0;padding-bottom:.2em;
margin-top:1.8em}.meta{color:#555}nav ol{columns:2}figure{margin:1em 0}
figure img{max-width:100%;height:auto;border:1px solid #e3e3e3}
figcaption{color:#444;font-size:.92em;margin-top:.3em}
.banner{color:#8a1c1c;font-weight:600}
figure.missing{border:1px dashed #b55;padding:.6em 1em;background:#fff6f6}
.table-wrap{overflow-x:auto;margin:1em 0;max-width:100%}
table{border-collapse:collapse;font-size:.85em;margin-bottom:.6em}
caption{caption-side:top;text-align:left;font-weight:600;padding:.3em 0}
th,td{border:1px solid #d0d4d9;padding:.25em .6em;text-align:left}
th{background:#eef1f4;vertical-align:bottom;overflow-wrap:normal}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.p{white-space:nowrap}
tbody tr:nth-child(even){background:#f8f9fa}
.file{font-size:.8em;color:#666;margin:.2em 0}.summary{background:#f3f7fb;border-left:4px solid
#3b78b5;padding:.6em 1em}.summary li{margin:.2em 0}
"""


@dataclass
class Report:
    """A report: title, summary lines, sections; ``write`` makes the folder.

    Examples
    --------
    >>> from skorg.report import Report, Table
    >>> report = Report("Example", summary=["one line"])
    >>> _ = report.section("Numbers").table(Table("numbers", [{"x": 1, "y": 0.5}]))
    >>> "<h2>Numbers</h2>" in report.to_html()
    True
    """

    title: str
    summary: list = field(default_factory=list)
    meta: dict = field(default_factory=dict)
    sections: list = field(default_factory=list)

    def section(self, title):
        section = Section(title)
        self.sections.append(section)
        return section

    def tables(self):
        return [t for s in self.sections for t in s.tables()]

    def has_figures(self):
        return any(
            kind == "figure" and item.png is not None
            for s in self.sections
            for kind, item in s.items
        )

    def to_html(self):
        nav = "".join(
            f'<li><a href="#s{i}">{html.escape(s.title)}</a></li>'
            for i, s in enumerate(self.sections)
        )
        summary = "".join(f"<li>{_text(line)}</li>" for line in self.summary)
        meta = " &middot; ".join(
            f"{html.escape(str(k))}: {html.escape(str(v))}" for k, v in self.meta.items()
        )
        body = "\n".join(s.to_html(f"s{i}") for i, s in enumerate(self.sections))
        missing = any(
            kind == "figure" and item.png is None for s in self.sections for kind, item in s.items
        )
        banner = f'<p class="banner">{PLOT_HINT}; the tables below are complete.</p>'
        summary += "" if not missing else f"</ul>{banner}<ul>"
        return (
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{html.escape(self.title)}</title><style>{_CSS}</style></head><body>"
            f'<h1>{html.escape(self.title)}</h1><p class="meta">{meta}</p>'
            f'<div class="summary"><ul>{summary}</ul></div>'
            f"<nav><h2>Contents</h2><ol>{nav}</ol></nav>\n{body}\n</body></html>\n"
        )

    def to_json(self):
        return {
            "title": self.title,
            "summary": list(self.summary),
            "meta": {k: _plain(v) for k, v in self.meta.items()},
            "tables": {t.name: t.records() for t in self.tables()},
        }

    def write(self, folder):
        """Write ``index.html``, ``results.json`` and one CSV per table into ``folder``.

        Returns
        -------
        path : pathlib.Path
            The HTML file.
        """
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        for table in self.tables():
            table.to_csv(folder / f"{table.name}.csv")
        with open(folder / "results.json", "w", encoding="utf-8") as fh:
            json.dump(self.to_json(), fh, indent=1, allow_nan=False)
        path = folder / "index.html"
        path.write_text(self.to_html(), encoding="utf-8")
        return path
