"""Text tables (CSV, TSV, spreadsheet exports): separator, decimal mark, header line and index
column found from the structure of the file.

The rules are stated in :func:`skorg.io.read_array` and in the user guide ("Reading files").
Cells are parsed by the standard library's :mod:`csv` (quoted fields may hold the separator).
"""

from __future__ import annotations

import csv
import math
import re

import numpy as np

from ._errors import ReadError, option, spelled_error

__all__ = ["MISSING_TOKENS", "describe_layout", "read_text_table"]

# what a cell may hold for "no value"
MISSING_TOKENS = frozenset(
    {"", "na", "nan", "n/a", "null", "none", "-", "?", "#n/a", "<na>", "-nan", "nat"}
)
_BOOL_TOKENS = frozenset({"true", "false"})
_INFINITY = frozenset({"inf", "+inf", "-inf", "infinity", "+infinity", "-infinity"})
_FLOAT64_MAX = np.finfo(np.float64).max

_POINT = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_COMMA = re.compile(r"[+-]?(?:\d+,?\d*|,\d+)(?:[eE][+-]?\d+)?")
# thousands in groups of three: 1,234,567.5 beside a decimal point, 1.234.567,5 beside a comma
_POINT_GROUPED = re.compile(r"[+-]?[1-9]\d{0,2}(?:,\d{3})+(?:\.\d*)?")
_COMMA_GROUPED = re.compile(r"[+-]?[1-9]\d{0,2}(?:\.\d{3})+(?:,\d*)?")
_INTEGER = re.compile(r"[+-]?\d+")

# the kinds of cells
NUMBER, MISSING, LABEL, OVERFLOW = 0, 1, 2, 3
# candidate separators, in the order that breaks ties
_SEPARATORS = (",", "\t", ";", "|")
WHITESPACE = r"\s+"
_MIXED_LINE = "line 1 holds numbers and text"
_MIXED_COLUMN = "the first column holds numbers and text"
# lines and cells the separator is chosen from
_SNIFF_LINES = 50
_SNIFF_CELLS = 5000


def _number(text, decimal):
    """The value of a (stripped) cell, or None when it is no number with this decimal mark."""
    if decimal == "." and _POINT.fullmatch(text):  # the common case first
        return float(text)
    if text.lower() in _INFINITY:
        return -math.inf if text.startswith("-") else math.inf
    if decimal == ".":
        if _POINT_GROUPED.fullmatch(text):
            return float(text.replace(",", ""))
    else:
        if _COMMA.fullmatch(text):
            return float(text.replace(",", "."))
        if _COMMA_GROUPED.fullmatch(text):
            return float(text.replace(".", "").replace(",", "."))
    return None


def _classify(texts, decimal):
    """Kind, value and integer-literal flag of each distinct cell text."""
    kind = np.full(len(texts), LABEL, dtype=np.int8)
    value = np.full(len(texts), np.nan)
    integer = np.zeros(len(texts), dtype=bool)
    for k, text in enumerate(texts):
        number = _number(text, decimal)
        if number is not None:
            if math.isinf(number) and text.lower() not in _INFINITY:
                kind[k] = OVERFLOW  # a finite literal beyond float64, not an "inf" cell
            else:
                kind[k] = NUMBER
                value[k] = number
                integer[k] = _INTEGER.fullmatch(text) is not None
        elif text.lower() in MISSING_TOKENS:
            kind[k] = MISSING
    return kind, value, integer


def _split(lines, sep):
    """The cells of every row and the index (into ``lines``) of the line each row starts on."""
    if sep == WHITESPACE:  # runs of blanks; quotes as R's write.table writes them
        lines = [line.strip().replace("\t", " ") + "\n" for line in lines]
        reader = csv.reader(lines, delimiter=" ", skipinitialspace=True)
    else:
        reader = csv.reader(lines, delimiter=sep)
    rows, starts, consumed = [], [], 0
    for row in reader:
        rows.append(row)
        starts.append(consumed)
        consumed = reader.line_num  # a quoted field may span lines
    return rows, starts


def _body_width(widths):
    """The number of fields (2 or more) of a table whose lines all have it, or whose first
    line has one fewer (a header without the top-left cell, as R's write.table writes);
    None otherwise."""
    rest = set(widths[1:]) or {widths[0]}
    if len(rest) != 1:
        return None
    width = rest.pop()
    if width < 2 or widths[0] not in (width, width - 1):
        return None
    return width


def _names_line(texts):
    """Labels only, or 3 or more integers increasing in equal steps (0, 1, 2 or years): a
    line that names columns by itself."""
    if not any(_number(t, ".") is not None or _number(t, ",") is not None for t in texts):
        return True
    if len(texts) < 3 or not all(_INTEGER.fullmatch(t) for t in texts):
        return False
    steps = np.diff([int(t) for t in texts])
    return bool(steps[0] > 0 and (steps == steps[0]).all())


def _is_value(text):
    text = text.strip()
    return (
        text.lower() in MISSING_TOKENS
        or _number(text, ".") is not None
        or _number(text, ",") is not None
    )


def _sniff_separator(lines):
    """The candidate that cuts the first lines into equally many (2 or more) fields, the one
    whose cells are most often numbers; whitespace when none does."""
    sample = lines[:_SNIFF_LINES]
    best, best_score = None, -1.0
    for sep in _SEPARATORS:
        rows, _ = _split(sample, sep)
        if _body_width([len(row) for row in rows]) is None:
            continue
        cells = [cell for row in rows for cell in row][:_SNIFF_CELLS]
        score = float(np.mean([_is_value(cell) for cell in cells]))
        if score > best_score:
            best, best_score = sep, score
    if best is not None:
        return best
    rows, _ = _split(sample, WHITESPACE)
    if _body_width([len(row) for row in rows]) is not None:
        return WHITESPACE
    for sep in _SEPARATORS:  # a broken table: read with the separator it shows, to say why
        if sep in lines[0]:
            return sep
    return WHITESPACE if len(lines[0].split()) > 1 else ","


def _detect_decimal(texts, sep):
    """'.', ',' or None (undecidable) from the distinct cell texts.

    A comma is the decimal mark when some cells are numbers only with a decimal comma and
    every cell with a point is a number with a decimal comma too (thousands grouped by
    points); a point otherwise. Cells such as ``1,000`` alone fit both (1000 with thousands
    grouped by commas, 1.0 with a decimal comma): a comma-separated file has decimal points,
    any other is undecidable.
    """
    commas = [t for t in texts if "," in t and _number(t, ",") is not None]
    if not commas:
        return ".", None
    dots = [t for t in texts if "." in t and _number(t, ".") is not None]
    fits_point = [t for t in commas if _number(t, ".") is None]  # the cells a point rejects
    fits_comma = [t for t in dots if _number(t, ",") is None]
    if not fits_point and not fits_comma:
        return ("." if sep == "," else None), commas[0]
    if not fits_comma:
        return ",", None
    if not fits_point:
        return ".", None
    # both marks occur: the more frequent one, and the others are reported as not numbers
    return ("," if len(fits_point) > len(fits_comma) else "."), None


def _separator_name(sep):
    return {"\t": "tab", WHITESPACE: "whitespace"}.get(sep, repr(sep))


def describe_layout(layout):
    """One sentence: how a text table was read (separator, decimal mark, header, index)."""
    if not layout:
        return ""

    def yes_no(key):
        return f"{'yes' if layout[key] else 'no'} ({layout[key + '_reason']})"

    return (
        f"separator {_separator_name(layout['separator'])}, decimal "
        f"{'point' if layout['decimal'] == '.' else 'comma'}; header line: "
        f"{yes_no('header')}; index column: {yes_no('index_col')}"
    )


def _increasing_integers(values):
    return len(values) >= 2 and bool(np.all(np.diff(values) > 0))


def _infer_header(cells, kind, value, integer):
    """Whether line 1 names the columns, and why (the rules of read_array's docstring)."""
    n, m = kind.shape
    if n < 2:
        return False, "a single line"
    first = kind[0]
    numeric = (first == NUMBER) | (first == OVERFLOW)
    if not numeric.any():
        if (first == LABEL).any():
            return True, "line 1 holds labels"
        return False, "line 1 is empty"
    if (first[1:] == LABEL).any():
        return False, _MIXED_LINE
    corner_empty = cells[0, 0] == ""
    start = 1 if m > 1 and (corner_empty or first[0] == LABEL) else 0
    names = value[0, start:]
    if not (integer[0, start:].all() and _increasing_integers(names)):
        return False, "line 1 holds numbers"
    what = f"the increasing integers {int(names[0])} to {int(names[-1])}"
    under = (kind[1:, start:] == NUMBER) & ~integer[1:, start:]
    if under.any():
        return True, f"line 1 holds {what} above values that are not integers"
    if start == 0:
        return False, "line 1 holds integers, like the lines below it"
    if corner_empty:
        return True, f"line 1 holds {what} beside an empty top-left cell"
    first_column = kind[1:, 0]
    if (first_column == NUMBER).all() and integer[1:, 0].all():
        return True, f"line 1 holds {what} beside a label above a column of integers"
    steps = np.diff(names)
    if len(names) >= 3 and (steps == steps[0]).all() and (first_column == LABEL).all():
        return True, f"line 1 holds {what} in equal steps, above a column of labels"
    return False, "line 1 holds integers, like the lines below it"


def _infer_index(kind, value, integer, header, corner_empty):
    """Whether the first column names the rows, and why."""
    if kind.shape[1] < 2:
        return False, "a single column"
    if header and corner_empty:
        return True, "an empty top-left cell, as DataFrame.to_csv and R's write.csv write"
    body = slice(1 if header else 0, None)
    first, rest = kind[body, 0], kind[body, 1:]
    rest_numeric = float(np.mean((rest == NUMBER) | (rest == MISSING))) > 0.5
    numeric = (first == NUMBER) | (first == OVERFLOW)
    if (first == LABEL).any() and not numeric.any() and rest_numeric:
        return True, "the first column holds labels"
    counts = value[body, 0]
    if (first == NUMBER).all() and integer[body, 0].all() and counts[0] in (0, 1):
        if len(counts) >= 2 and bool(np.all(np.diff(counts) == 1)):
            floats = ((rest == NUMBER) & ~integer[body, 1:]).any()
            if header or floats:
                return True, f"the first column counts the rows from {int(counts[0])}"
    if (first == LABEL).any():
        return False, _MIXED_COLUMN
    return False, "the first column holds values"


def _shown(text, limit=40):
    """A cell or name as a message quotes it, cut short past ``limit`` characters."""
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


def _describe_cell(text, decimal):
    """Why a cell is not a number, in a few words."""
    low = text.lower()
    shown = _shown(text)
    if low in _BOOL_TOKENS:
        return f"{shown} is a boolean; write 1/0 instead"
    other = "," if decimal == "." else "."
    if _number(text, other) is not None:
        marks = {".": "a decimal point", ",": "a decimal comma"}
        return (
            f"{shown} has {marks[other]}, but the other numbers of the file have {marks[decimal]}"
        )
    try:
        complex(text.replace("i", "j"))
    except ValueError:
        pass
    else:
        return f"{shown} is a complex number; keep its real part or magnitude"
    try:
        np.datetime64(text)
    except ValueError:
        pass
    else:
        return f"{shown} is a date or time; convert it to a number first"
    return f"{shown} is not a number"


def read_text_table(text, name, *, sep, decimal, header, index_col, tab_separated=False):
    """Values (NaN where a cell is missing), row names, column names, layout and ``where``.

    ``where(i, j)`` says where value (i, j) is in the file, for the messages about missing
    values.
    """
    # the line ends stay: a quoted field across lines keeps its line break (and is no number)
    lines = text.splitlines(keepends=True)
    numbered = [(k + 1, line) for k, line in enumerate(lines) if line.strip()]
    if not numbered:
        raise ReadError(f"{name} is empty")
    numbers = [k for k, _ in numbered]
    lines = [line for _, line in numbered]
    if sep is None:
        sep = "\t" if tab_separated else _sniff_separator(lines)
    try:
        rows, starts = _split(lines, sep)
    except csv.Error as exc:  # a NUL byte, an unterminated quote at the end, ...
        raise ReadError(
            f"cannot cut {name} into fields with separator {_separator_name(sep)}: {exc}"
        ) from exc
    line_of = [numbers[s] for s in starts]
    widths = [len(row) for row in rows]
    width = _body_width(widths)
    short_header = width is not None and len(rows) > 1 and widths[0] == width - 1
    short_header = short_header and header is not False and index_col is not False
    if short_header and header == "infer":  # only names, not a line of data one cell short
        short_header = _names_line([cell.strip() for cell in rows[0]])
    if short_header:
        rows[0] = ["", *rows[0]]  # the top-left cell R's write.table leaves out
        widths[0] += 1
    if len(set(widths)) > 1:
        k = next(k for k, w in enumerate(widths) if w != widths[0])
        raise ReadError(
            f"{name} has rows of different lengths {sorted(set(widths))} (separator "
            f"{_separator_name(sep)}): line {line_of[0]} has {widths[0]} fields, line "
            f"{line_of[k]} has {widths[k]}"
        )
    cells = np.array([[cell.strip() for cell in row] for row in rows], dtype=object)
    # each distinct text is parsed once (a dict, not np.unique: sorting strings is slow)
    distinct = {}
    inverse = np.fromiter(
        (distinct.setdefault(cell, len(distinct)) for cell in cells.ravel()),
        dtype=np.intp,
        count=cells.size,
    ).reshape(cells.shape)
    texts = np.array(list(distinct), dtype=object)
    if decimal is None:
        decimal, undecided = _detect_decimal(list(texts), sep)
        if decimal is None:
            i, j = np.argwhere(cells == undecided)[0]
            raise spelled_error(
                f"{name}: {undecided!r} (line {line_of[i]}, field {j + 1}) reads as "
                f"{_number(undecided, '.'):g} with a decimal point and thousands grouped by "
                f"commas, or as {_number(undecided, ','):g} with a decimal comma, and no other "
                "cell tells which; pass ",
                option("decimal", "."),
                " or ",
                option("decimal", ","),
            )
    kinds, values, integers = _classify(texts, decimal)
    kind, value, integer = kinds[inverse], values[inverse], integers[inverse]

    corner_empty = cells[0, 0] == ""
    layout = {"separator": sep, "decimal": decimal}
    if short_header:
        reason = "line 1 has one field fewer than the lines below, as R's write.table writes"
        header, layout["header_reason"] = True, reason
        if index_col == "infer":
            index_col, layout["index_col_reason"] = True, reason
    elif header == "infer":
        header, layout["header_reason"] = _infer_header(cells, kind, value, integer)
    else:
        layout["header_reason"] = "as given"
    if header and cells.shape[0] == 1:
        raise ReadError(f"{name} has a header line and no data")
    if index_col == "infer":
        index_col, layout["index_col_reason"] = _infer_index(
            kind, value, integer, header, corner_empty
        )
    elif "index_col_reason" not in layout:
        layout["index_col_reason"] = "as given"
    if index_col and cells.shape[1] < 2:
        raise ReadError(f"{name} has only the index column, no values")
    layout["header"], layout["index_col"] = bool(header), bool(index_col)

    r0, c0 = int(header), int(index_col)
    row_names = cells[r0:, 0].copy() if index_col else None
    column_names = cells[0, c0:].copy() if header else None
    body_lines = line_of[r0:]

    def where(i, j):
        row = f"row {_shown(row_names[i])}" if row_names is not None else f"row {i}"
        col = f"column {_shown(column_names[j])}" if column_names is not None else f"column {j}"
        return f"{row}, {col} (line {body_lines[i]})"

    bkind = kind[r0:, c0:]
    bad = (bkind == LABEL) | (bkind == OVERFLOW)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        cell = cells[r0 + i, c0 + j]
        more = int(bad.sum()) - 1
        parts = [f"{name}: {where(i, j)}: "]
        if bkind[i, j] == OVERFLOW:
            parts.append(
                f"{_shown(cell)} is beyond the range of float64 (about {_FLOAT64_MAX:.1e})"
            )
        else:
            parts.append(_describe_cell(cell, decimal))
        if more:
            parts.append(f" ({more} more such cells)")
        label = bkind[i, j] == LABEL
        mixed_line = layout["header_reason"] == _MIXED_LINE
        mixed_column = layout["index_col_reason"] == _MIXED_COLUMN
        if label and mixed_line and r0 + i == 0:
            parts += [
                "; line 1 also holds numbers, so it is not read as a header (pass ",
                option("header", True),
                " if it is one)",
            ]
        elif label and mixed_column and c0 + j == 0:
            parts += [
                "; the first column also holds numbers, so it is not read as row names (pass ",
                option("index_col", True),
                " if it names the rows)",
            ]
        raise spelled_error(*parts)
    X = np.where(bkind == NUMBER, value[r0:, c0:], np.nan)
    if row_names is not None:
        row_names = np.asarray(row_names, dtype=object)
    if column_names is not None:
        column_names = np.asarray(column_names, dtype=object)
    return X, row_names, column_names, layout, where
