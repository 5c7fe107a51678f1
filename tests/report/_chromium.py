"""Headless Chromium for the report tests: where it is, and what a page looks like in it."""

import html
import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

# Run in the page after it has laid out: every table against the width its container gives
# it, and the lines that every p-value (table cells under a p_value header, and the spans
# that hold the p-values of running text) takes.
_MEASURE = """
(function () {
  function lines(el) {
    var range = document.createRange();
    range.selectNodeContents(el);
    var tops = new Set();
    Array.from(range.getClientRects()).forEach(function (r) {
      if (r.width > 0) tops.add(Math.round(r.top));
    });
    return tops.size;
  }
  var out = {page: document.documentElement.clientWidth, wide: [], split: [], tables: 0,
             p_values: 0};
  document.querySelectorAll("table").forEach(function (t) {
    out.tables += 1;
    var room = t.parentElement.clientWidth, width = t.getBoundingClientRect().width;
    var right = t.getBoundingClientRect().right;
    if (width > room + 0.5 || right > out.page + 0.5) {
      out.wide.push([t.caption ? t.caption.textContent : "", width, room]);
    }
    var heads = Array.from(t.querySelectorAll("thead th")).map(function (th) {
      return th.textContent;
    });
    t.querySelectorAll("tbody tr").forEach(function (tr) {
      Array.from(tr.children).forEach(function (td, j) {
        if (/p_value/.test(heads[j] || "")) {
          out.p_values += 1;
          if (lines(td) > 1) out.split.push(td.textContent);
        }
      });
    });
  });
  document.querySelectorAll(".p").forEach(function (el) {
    out.p_values += 1;
    if (lines(el) > 1) out.split.push(el.textContent);
  });
  var pre = document.createElement("pre");
  pre.id = "skorg-measure";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
"""


def chromium():
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _run(args, timeout=120):
    profile = tempfile.mkdtemp()
    try:
        return subprocess.run(
            [
                chromium(),
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                f"--user-data-dir={profile}",
                *args,
            ],
            check=True,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def measure(page, width, folder):
    """Lay ``page`` (an index.html) out in a window ``width`` pixels wide: the tables wider
    than their room and the p-values that take more than one line."""
    text = Path(page).read_text(encoding="utf-8")
    probe = Path(folder) / f"probe_{width}.html"
    probe.write_text(text.replace("</body>", f"<script>{_MEASURE}</script></body>"), "utf-8")
    out = _run([f"--window-size={width},2000", "--dump-dom", probe.as_uri()]).stdout
    found = re.search(r'<pre id="skorg-measure">(.*?)</pre>', out, re.S)
    assert found, out[-2000:]
    return json.loads(html.unescape(found.group(1)))


def screenshot(page, path, width, height):
    _run(["--hide-scrollbars", f"--window-size={width},{height}", f"--screenshot={path}",
          Path(page).as_uri()])  # fmt: skip
