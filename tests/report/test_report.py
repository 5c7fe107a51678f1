"""The HTML report builder, the figures and a real browser rendering of a report."""

import base64
import json
import shutil
import subprocess
import tempfile

import numpy as np
import pytest

from skorg.report import Figure, Progress, Report, Table, organize_report
from skorg.report._html import _cell

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_table_csv_json_and_html_share_the_numbers(tmp_path):
    rows = [{"name": "a<b", "x": 0.5, "n": np.int64(3)}, {"name": "c", "x": np.nan, "n": 4}]
    report = Report("T & T", summary=["one"], meta={"k": 1})
    report.section("S").text("x < y").table(Table("numbers", rows, caption="cap"))
    path = report.write(tmp_path)
    assert (tmp_path / "numbers.csv").read_text().splitlines() == [
        "name,x,n",
        "a<b,0.5,3",
        "c,,4",
    ]
    data = json.loads((tmp_path / "results.json").read_text())
    assert data["tables"]["numbers"] == [
        {"name": "a<b", "x": 0.5, "n": 3},
        {"name": "c", "x": None, "n": 4},
    ]
    html = path.read_text()
    assert "<title>T &amp; T</title>" in html and "a&lt;b" in html and "x &lt; y" in html
    assert '<td class="num">0.5</td>' in html and "<td>&ndash;</td>" in html


def test_table_limits_rows_and_columns_in_html_only(tmp_path):
    rows = [{"a": i, "b": 2 * i} for i in range(10)]
    table = Table("t", rows, max_rows=3, html_columns=["b"])
    html = table.to_html()
    assert html.count("<tr>") == 4 and "<th>a</th>" not in html
    assert "first 3 of 10 rows" in html
    table.to_csv(tmp_path / "t.csv")
    assert len((tmp_path / "t.csv").read_text().splitlines()) == 11


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.0, "0"),
        (1.0, "1"),
        (0.9996, "1"),
        (-0.27, "-0.27"),
        (3.14159, "3.14"),
        (1e-17, "1.00e-17"),
        (123456.0, "1.23e+05"),
        (7, "7"),
        (True, "yes"),
    ],
)
def test_cell_format(value, text):
    assert _cell(value, 3) == text


def test_matplotlib_figure_is_embedded_as_png():
    from matplotlib.figure import Figure as MplFigure

    fig = MplFigure(figsize=(2, 2))
    fig.subplots().plot([0, 1], [1, 0])
    figure = Figure.from_matplotlib(fig, "a line")
    assert figure.png.startswith(PNG_MAGIC)
    html = figure.to_html()
    payload = html.split("base64,", 1)[1].split('"', 1)[0]
    assert base64.b64decode(payload) == figure.png
    assert "<figcaption>a line</figcaption>" in html
    assert "pip install skorg[plot]" in Figure(None, "x").to_html()


def _drawn(out):
    """The states a tqdm bar drew on a stream (tqdm redraws after a carriage return)."""
    return [line.split(" (")[0] for line in out.getvalue().splitlines() if line.strip()]


def test_progress_counts_steps_with_tqdm():
    import io

    import skorg

    out = io.StringIO()
    progress = Progress(3, stream=out)
    for label in ("a", "b", "c"):
        progress.step(label)
    progress.done()
    drawn = _drawn(out)
    assert drawn[:3] == ["[1/3] a", "[2/3] b", "[3/3] c"] and drawn[-1] == "[3/3] done"
    assert progress.count == progress.total == 3
    out = io.StringIO()
    progress = Progress(None, stream=out)
    progress.note("loading")  # before the total is known: counted nowhere
    progress.total = 2
    progress.step("x")
    progress.step("y")
    progress.step("z")  # one step too many: the total follows, never "3/2"
    assert _drawn(out)[:4] == ["loading ...", "[1/2] x", "[2/2] y", "[3/3] z"]
    quiet = io.StringIO()
    Progress(2, stream=quiet, enabled=False).step("x")
    assert quiet.getvalue() == ""
    silenced = io.StringIO()
    with skorg.config_context(progress=False):  # the library-level switch
        Progress(2, stream=silenced, enabled=None).step("x")
    assert silenced.getvalue() == ""


def test_config_is_thread_local_and_checked():
    import threading

    import skorg

    seen = {}
    with skorg.config_context(progress=False):
        worker = threading.Thread(target=lambda: seen.update(skorg.get_config()))
        worker.start()
        worker.join()
        assert skorg.get_config()["progress"] is False
    assert seen["progress"] is True
    with pytest.raises(TypeError, match="progress must be True or False"):
        skorg.set_config(progress="no")


def test_progress_bar_follows_the_switch():
    import io

    import skorg
    from skorg._progress import progress_bar

    out = io.StringIO()
    assert list(progress_bar(range(3), file=out, mininterval=0)) == [0, 1, 2]
    assert "3/3" in out.getvalue()
    out = io.StringIO()
    with skorg.config_context(progress=False):
        assert list(progress_bar(range(3), file=out)) == [0, 1, 2]
    assert out.getvalue() == ""


def _chromium():
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(_chromium() is None, reason="chromium is not installed")
def test_report_renders_in_a_headless_browser(tmp_path):
    from PIL import Image

    from skorg.datasets import make_shuffled_matrix

    X = make_shuffled_matrix(32, 24, random_state=0).X
    report, _ = organize_report(X, n_iter=1, name="shuffled band")
    page = report.write(tmp_path / "report")
    shot = tmp_path / "shot.png"
    profile = tempfile.mkdtemp()
    try:
        subprocess.run(
            [
                _chromium(),
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                f"--user-data-dir={profile}",
                "--hide-scrollbars",
                "--window-size=1200,2400",
                f"--screenshot={shot}",
                page.as_uri(),
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    image = np.asarray(Image.open(shot).convert("L"), dtype=float)
    assert image.shape == (2400, 1200)
    # a white page would be one value: text, tables and the embedded heatmaps add contrast,
    # and the heatmaps add many dark pixels in the upper part of the page
    assert image.std() > 20
    assert (image[:1400] < 60).mean() > 0.05
    # laid out at that width: no table wider than its room, no number over two lines
    from ._chromium import measure

    seen = measure(page, 1200, tmp_path)
    assert seen["tables"] >= 3 and seen["wide"] == [] and seen["split"] == [], seen


def _wide_report():
    """A report with the attention report's widest tables, built by its own row functions."""
    from skorg.attention import ranking_stability
    from skorg.report._uncertainty import head_entropy_rows, stability_rows, stability_sentence

    rng = np.random.default_rng(0)
    scores = rng.random((6, 24)) + np.linspace(0, 2, 24)  # stable ranks: small p-values
    names = [f"L{h // 12}H{h % 12}" for h in range(24)]
    stability = ranking_stability(scores, n_resamples=2000)
    organized = rng.random((6, 24))
    heads = head_entropy_rows(names, organized, organized + 1.0, organized + rng.random((6, 24)))
    variants = ("exact", "softmax", "softmax_exp", "softmax_collapsed")
    columns = [f"{v}_{k}" for v in variants for k in ("share", "low", "high")]
    tolerance = [
        {"parameter": "tolerance", "value": t} | {c: rng.random() for c in columns}
        for t in (0.01, 0.1, 0.5)
    ]
    report = Report("wide", summary=[stability_sentence(stability, 6) + " " * 3 + "x" * 40])
    s = report.section("tables")
    s.text("Paired test, p = 0.0123; again p < 0.001 and p = 5.0e-04. " * 8)
    s.table(Table("ranking_stability", stability_rows(stability, 6), caption="stability"))
    s.table(Table("head_entropy_tests", heads, caption="per head", max_rows=12))
    s.table(Table("sensitivity_tolerance", tolerance, html_columns=list(tolerance[0])[1:]))
    return report


@pytest.mark.skipif(_chromium() is None, reason="chromium is not installed")
@pytest.mark.parametrize("width", [1000, 1400])
def test_no_table_wider_than_the_page_and_no_p_value_split(tmp_path, width):
    from ._chromium import measure

    page = _wide_report().write(tmp_path / "report")
    seen = measure(page, width, tmp_path)
    assert seen["page"] >= width - 20  # the window's width, less a scroll bar
    assert seen["wide"] == [], seen
    assert seen["split"] == [], seen
    assert seen["tables"] > 3  # the widest are split into parts
    assert seen["p_values"] >= 2 * 2 + 12 * 2 + 3 * 2  # cells, and the sentences' p-values


def test_wide_tables_split_into_parts_that_repeat_the_key_column():
    table = _wide_report().tables()[1]
    html = table.to_html()
    assert html.count("<table>") >= 2
    assert html.count("<th>head</th>") == html.count("<table>")
    # every column is in some part, and only the key column in more than one
    shown = [c for c in table.columns if f"<th>{c}</th>" in html.replace("<wbr>", "")]
    assert shown == table.columns
    assert "(continued, 2 of" in html


@pytest.mark.parametrize(
    ("value", "text"),
    [(0.5, "0.5"), (0.0123, "0.012"), (0.0022, "0.0022"), (4.998e-4, "5.0e-04"), (1.0, "1")],
)
def test_p_values_are_compact(value, text):
    from skorg.report._html import _p_cell, _text

    assert _p_cell(value) == text
    assert _text(f"so (p = {text})") == f'so (<span class="p">p = {text}</span>)'
