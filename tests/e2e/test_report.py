"""labbox report: a sweep's or runs' results as one self-contained HTML page, Markdown, CSV.

Real sweeps and runs of real Python experiments, then the real binary's report, opened in a real
browser (Debian's headless Chromium): the DOM after rendering is checked against sweep.json and
the runs' own result.json, the page must fetch nothing (every request Chromium would make goes
to a proxy this test listens on, which must see no connection), and a screenshot is kept.
"""
import csv
import io
import json
import os
import re
import shutil
import socket
import stat
import statistics
import struct
import subprocess
import threading
from html.parser import HTMLParser
from pathlib import Path

import pytest

from conftest import LABBOX, PYTHON, REPO, labbox, write_exp
from test_sweep import t975

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"

GRID_MAIN = r'''
import argparse, json
p = argparse.ArgumentParser()
p.add_argument("--mode", required=True)
p.add_argument("--seed", type=int, required=True)
a = p.parse_args()
for step in range(1, 6):
    print(f"step={step} loss: {1.0 / (step + a.seed + (2 if a.mode == 'neg' else 1)):.6f}")
if a.mode == "crash":
    raise ValueError("evidence <script>alert(1)</script> of the crash")
print(f"accuracy: {0.5 + a.seed / 100 + (0.2 if a.mode == 'neg' else 0):.6f}")
if a.mode == "neg":
    print(f"delta: {-0.5 - a.seed / 10:.6f}")
# A results file may name a metric anything at all.
json.dump({"<img src=http://example.invalid/x.png>": a.seed + 1.0}, open("results.json", "w"))
'''


def run_json(*args, timeout=600):
    p = labbox(*args, timeout=timeout)
    try:
        return p, json.loads(p.stdout)
    except ValueError:
        raise AssertionError(f"rc={p.returncode}\nstdout:\n{p.stdout[-3000:]}\nstderr:\n"
                             f"{p.stderr[-3000:]}")


@pytest.fixture(scope="module")
def recs(tmp_path_factory):
    """Two real sweeps (the ridge example, and a grid with a crash, a metric one condition
    alone reports, negative values and per-step losses) and three plain runs of an experiment
    whose directory name is hostile (markup and a byte that is not UTF-8)."""
    tmp = tmp_path_factory.mktemp("report")
    runs = tmp / "runs"
    p, ridge = run_json("sweep", "--json", "--python", PYTHON, "--runs-dir", runs, "--jobs", "2",
                        "--seeds", "0-2", "--param", "lam=0.01,100", "--param", "noise=0.1",
                        REPO / "examples" / "sweep")
    assert p.returncode == 0, p.stderr[-3000:]
    exp = write_exp(tmp, GRID_MAIN, "metrics: none\n", name="grid")
    p, grid = run_json("sweep", "--json", "--python", PYTHON, "--runs-dir", runs, "--jobs", "2",
                       "--seeds", "0-1", "--param", "mode=ok,neg,crash", exp)
    assert p.returncode == 1 and grid["counts"]["failed"] == 2, p.stderr[-3000:]
    hostile_name = os.fsdecode(b"exp-<img src=x onerror=alert(1)>-\xff")
    hexp = write_exp(tmp, "import argparse\np = argparse.ArgumentParser()\n"
                          "p.add_argument('--seed', type=int)\np.add_argument('--lr')\n"
                          "a = p.parse_args()\nprint(f'score: {a.seed * 1.5 + float(a.lr):.4f}')\n",
                     name=hostile_name)
    plain = []
    for seed, lr in ((1, "0.1"), (2, "0.1"), (3, "0.5")):
        p, res = run_json("run", "--json", "--python", PYTHON, "--runs-dir", runs, hexp, "--",
                          "--seed", seed, "--lr", lr)
        assert p.returncode == 0, p.stderr[-3000:]
        plain.append(res)
    return {"tmp": tmp, "runs": runs, "ridge": ridge, "grid": grid, "plain": plain}


def report(recs, *args):
    return labbox("report", "--runs-dir", recs["runs"], *map(str, args))


class Dom(HTMLParser):
    """Elements with their attributes and text, as Chromium serialised them."""

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.elements, self.stack = [], []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        el = {"tag": tag, "attrs": dict(attrs), "text": "", "parents": list(self.stack)}
        self.elements.append(el)
        if tag not in ("br", "meta", "line", "circle", "input", "img", "link", "hr"):
            self.stack.append(el)

    def handle_endtag(self, tag):
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i]["tag"] == tag:
                del self.stack[i:]
                break

    def handle_data(self, data):
        for el in self.stack:
            el["text"] += data

    def find(self, tag, cls=None, within=None):
        out = []
        for el in self.elements:
            if el["tag"] != tag:
                continue
            if cls and cls not in el["attrs"].get("class", "").split():
                continue
            if within is not None and within not in el["parents"]:
                continue
            out.append(el)
        return out


# What Chromium asks for by itself, whatever the page (component updates, its account
# service), even with --disable-component-update and --disable-background-networking; an
# empty page gets these too.
CHROMIUM_OWN = {"update.googleapis.com", "accounts.google.com", "clients2.google.com",
                "clients1.google.com", "redirector.gvt1.com", "edgedl.me.gvt1.com",
                "safebrowsingohttpgateway.googleapis.com", "optimizationguide-pa.googleapis.com"}


class Proxy:
    """A TCP listener Chromium is told to use as its proxy for everything: it records the host
    of every request (CONNECT host:port, or GET http://host/...) and answers none."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.hosts = []
        self.sock.settimeout(0.2)
        self.stop = False
        self.t = threading.Thread(target=self._loop, daemon=True)
        self.t.start()

    def _loop(self):
        while not self.stop:
            try:
                c, _ = self.sock.accept()
            except OSError:
                continue
            c.settimeout(2)
            try:
                first = c.recv(4096).split(b"\r\n", 1)[0].decode(errors="replace").split()
            except OSError:
                first = []
            c.close()
            if len(first) < 2:
                # A connection closed before its request line (Chromium's own, cut off by its
                # exit, seen under the sanitizer build's load): no request, so no host. A
                # page's fetch always sends one (the control test below sees them).
                continue
            target = first[1]
            host = target.split("://", 1)[-1].split("/", 1)[0].rsplit(":", 1)[0]
            self.hosts.append(host)

    def page_hosts(self):
        return sorted(set(self.hosts) - CHROMIUM_OWN)

    def close(self):
        self.stop = True
        self.t.join()
        self.sock.close()


def chromium(html: Path, profile: Path, proxy: Proxy, *extra):
    if not os.path.exists(CHROMIUM):
        pytest.skip("chromium is not installed (scripts/deps installs Debian's chromium)")
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           "--disable-dev-shm-usage", f"--user-data-dir={profile}",
           f"--proxy-server=http://127.0.0.1:{proxy.port}", "--proxy-bypass-list=<-loopback>",
           *extra, html.as_uri()]
    p = subprocess.run(cmd, capture_output=True, timeout=180,
                       env={**os.environ, "HOME": str(profile)})
    assert p.returncode == 0, p.stderr.decode(errors="replace")[-3000:]
    return p.stdout.decode()


def png_size(path: Path):
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return struct.unpack(">II", head[16:24])


def render(recs, name, *ids):
    out = recs["tmp"] / f"{name}.html"
    p = report(recs, "-o", out, *ids)
    assert p.returncode == 0, p.stderr
    proxy = Proxy()
    try:
        profile = recs["tmp"] / f"chromium-{name}"
        dom = chromium(out, profile, proxy, "--dump-dom")
        shot = recs["tmp"] / f"{name}.png"
        chromium(out, profile, proxy, f"--screenshot={shot}", "--window-size=1366,900",
                 "--hide-scrollbars")
    finally:
        proxy.close()
    assert proxy.page_hosts() == [], "the report made Chromium fetch something"
    assert shot.exists() and shot.stat().st_size > 20000, "the screenshot is missing or blank"
    assert png_size(shot) == (1366, 900)
    return out, Dom(dom), dom


def test_the_network_check_sees_what_a_page_fetches(tmp_path):
    """The proxy check above can fail: a page that names an outside image is seen fetching."""
    page = tmp_path / "control.html"
    page.write_text('<!DOCTYPE html><img src="http://example.invalid/x.png">'
                    '<link rel="stylesheet" href="https://cdn.example.invalid/s.css">')
    proxy = Proxy()
    try:
        chromium(page, tmp_path / "profile", proxy, "--dump-dom")
    finally:
        proxy.close()
    assert {"example.invalid", "cdn.example.invalid"} <= set(proxy.page_hosts()), proxy.hosts


def assert_offline_markup(dom: Dom):
    for el in dom.elements:
        assert el["tag"] not in ("script", "img", "link", "iframe", "object", "embed"), el
        for k, v in el["attrs"].items():
            if k in ("src", "href", "xlink:href", "action", "poster", "srcset"):
                assert not (v or "").lower().lstrip().startswith(("http:", "https:", "//")), el


def num(s):
    return float(s)


def test_html_of_a_sweep_in_a_browser(recs):
    grid = recs["grid"]
    out, dom, raw = render(recs, "grid", grid["id"])
    assert_offline_markup(dom)
    rows = {r["attrs"]["data-condition"]: r for r in dom.find("tr", "condition")}
    assert sorted(rows) == sorted(c["name"] for c in grid["conditions"])
    metrics = []
    for c in grid["conditions"]:
        for m in c["metrics"]:
            if m not in metrics:
                metrics.append(m)
    assert "delta" in metrics and any("<img" in m for m in metrics)
    for c in grid["conditions"]:
        cells = {td["attrs"]["data-metric"]: td for td in dom.find("td", within=rows[c["name"]])
                 if "data-metric" in td["attrs"]}
        assert sorted(cells) == sorted(metrics)
        for m in metrics:
            st = c["metrics"].get(m)
            td = cells[m]
            if not st or not st["n"]:
                assert "data-mean" not in td["attrs"], (c["name"], m)
                continue
            assert num(td["attrs"]["data-mean"]) == pytest.approx(st["mean"], rel=1e-12)
            assert int(td["attrs"]["data-n"]) == st["n"]
            if st["ci95"]:
                assert num(td["attrs"]["data-ci-low"]) == pytest.approx(st["ci95"]["low"], rel=1e-12)
                assert num(td["attrs"]["data-ci-high"]) == pytest.approx(st["ci95"]["high"], rel=1e-12)
    # One plot per metric, each with an error bar per condition that has an interval.
    plots = dom.find("svg", "metric-plot")
    assert sorted(p["attrs"]["data-metric"] for p in plots) == sorted(metrics)
    for p in plots:
        m = p["attrs"]["data-metric"]
        with_ci = [c for c in grid["conditions"] if (c["metrics"].get(m) or {}).get("ci95")]
        assert len(dom.find("line", "err", within=p)) == 3 * len(with_ci), m
        assert dom.find("text", "tick", within=p), m
        missing = [c for c in grid["conditions"] if m not in c["metrics"] and c["completed"]]
        flags = [t["text"] for t in dom.find("text", "flag", within=p)]
        assert flags.count("not reported") == len(missing), (m, flags)
        assert flags.count("no completed run") == 1, (m, flags)
    # The losses printed per step are a series, one line per condition that completed.
    series = dom.find("svg", "series-plot")
    assert [s["attrs"]["data-metric"] for s in series] == ["loss"]
    assert len(dom.find("polyline", within=series[0])) == 2
    # Failures: each with its class and the evidence, the markup in it shown as text.
    fails = dom.find("tr", "failure")
    assert len(fails) == len(grid["failures"]) == 2
    classes = sorted(td["text"] for f in fails for td in dom.find("td", "class", within=f))
    assert classes == sorted(f["class"] for f in grid["failures"])
    ev = " ".join(e["text"] for e in dom.find("pre", "evidence"))
    assert "<script>alert(1)</script>" in ev
    assert "<img src=http://example.invalid/x.png>" in raw.replace("&lt;", "<").replace("&gt;", ">")
    # Reproducibility facts from the cells' records.
    facts = {dt["text"]: dd["text"] for dt, dd in zip(dom.find("dt"), dom.find("dd"))}
    assert set(facts) >= {"interpreter", "packages", "git commit", "isolation", "backend"}
    assert "/usr/bin/python3" in facts["interpreter"]
    assert "network none" in facts["isolation"]
    assert "local" in facts["backend"]
    html = out.read_text()
    assert "@media print" in html and "<svg" in html


def test_md_and_csv_match_sweep_json(recs):
    for key in ("ridge", "grid"):
        sw = recs[key]
        p = report(recs, "--format", "csv", sw["id"])
        assert p.returncode == 0, p.stderr
        rows = list(csv.DictReader(io.StringIO(p.stdout)))
        want = [(c["name"], m, st) for c in sw["conditions"] for m, st in c["metrics"].items()]
        assert len(rows) == len(want)
        got = {(r["condition"].lstrip("'"), r["metric"].lstrip("'")): r for r in rows}
        for cond, m, st in want:
            r = got[(cond, m)]
            assert int(r["n"]) == st["n"]
            assert float(r["mean"]) == st["mean"] and float(r["min"]) == st["min"]
            assert float(r["max"]) == st["max"]
            if st["std"] is None:
                assert r["std"] == r["ci_low"] == r["ci_high"] == ""
            else:
                assert float(r["std"]) == st["std"]
                assert float(r["ci_low"]) == st["ci95"]["low"]
                assert float(r["ci_high"]) == st["ci95"]["high"]
        p = report(recs, "--format", "md", sw["id"])
        assert p.returncode == 0, p.stderr
        lines = [l for l in p.stdout.splitlines() if l.startswith("|")]
        header = [h.strip() for h in lines[0].strip("|").split("|")]
        assert header[:2] == ["condition", "runs"]
        assert set(lines[1].replace("|", "").replace("-", "").replace(":", "")) <= {""}
        body = lines[2:]
        assert len(body) == len(sw["conditions"])
        for line, c in zip(body, sw["conditions"]):
            cells = [x.strip() for x in line.strip("|").split(" | ")]
            assert md_unescape(cells[0]) == c["name"]
            assert cells[1] == f"{c['completed']}/{c['cells']}"
            for h, cell in zip(header[2:], cells[2:]):
                st = next((v for k, v in c["metrics"].items() if k == md_unescape(h)), None)
                if st is None:
                    assert cell == "-"
                    continue
                mean, _, half = cell.partition(" ± ")
                if st["ci95"]:
                    # Digits to the interval's: the printed mean is within a tenth of it.
                    true_half = (st["ci95"]["high"] - st["ci95"]["low"]) / 2
                    assert float(half.split()[0]) == pytest.approx(true_half, rel=0.05)
                    assert abs(float(mean.split()[0]) - st["mean"]) <= 0.1 * true_half
                else:
                    assert float(mean.split()[0]) == st["mean"]


def test_runs_are_grouped_by_their_arguments_without_the_seed(recs):
    plain = recs["plain"]
    ids = [r["id"] for r in plain]
    p = report(recs, "--format", "csv", *ids)
    assert p.returncode == 0, p.stderr
    rows = list(csv.DictReader(io.StringIO(p.stdout)))
    by = {r["condition"]: r for r in rows if r["metric"] == "score"}
    assert len(by) == 2
    pooled = [float(r["metrics"]["values"]["score"]) for r in plain[:2]]
    cond = next(k for k in by if k.endswith("--lr 0.1"))
    r = by[cond]
    assert int(r["n"]) == 2 and float(r["mean"]) == pytest.approx(statistics.mean(pooled))
    half = t975(1) * statistics.stdev(pooled) / 2 ** 0.5
    assert float(r["ci_high"]) == pytest.approx(statistics.mean(pooled) + half, rel=1e-6)
    # The hostile directory name reaches the page only as text.
    out, dom, raw = render(recs, "plain", *ids)
    assert_offline_markup(dom)
    names = [r["attrs"]["data-condition"] for r in dom.find("tr", "condition")]
    assert any("<img src=x onerror=alert(1)>-\\xff" in n for n in names), names
    assert len(dom.find("svg", "metric-plot")) == 1


def test_a_sweep_id_and_runs_together_pool_by_condition(recs):
    ridge = recs["ridge"]
    p = report(recs, "--format", "csv", ridge["id"], recs["plain"][0]["id"])
    assert p.returncode == 0, p.stderr
    conds = {r["condition"] for r in csv.DictReader(io.StringIO(p.stdout))}
    assert conds >= {c["name"] for c in ridge["conditions"]} and len(conds) == 3


def test_stdout_without_o_and_json_with_it(recs):
    p = report(recs, recs["ridge"]["id"])
    assert p.returncode == 0 and p.stdout.startswith("<!DOCTYPE html>")
    out = recs["tmp"] / "r.md"
    p = report(recs, "--json", "-o", out, recs["ridge"]["id"])
    doc = json.loads(p.stdout)
    assert p.returncode == 0 and doc["schema"] == "labbox.report/1" and doc["format"] == "md"
    assert doc["conditions"] == 2 and out.read_text().startswith("| condition |")


def test_o_writes_through_links_and_into_devices_never_replacing_them(recs):
    """-o names where the report goes, as the shell's `>` does: a link is written through (the
    file it points at gets the report, the link stays), /dev/stdout's link reaches stdout, a
    FIFO or device is written into, never replaced by a regular file (a report to /dev/null
    must not turn the machine's /dev/null into a file); a device that refuses (/dev/full's
    ENOSPC) is exit 2 naming it."""
    d = recs["tmp"] / "outs"
    d.mkdir()
    rid = recs["ridge"]["id"]
    (d / "target.md").write_text("old")
    (d / "link.md").symlink_to(d / "target.md")
    p = report(recs, "--format", "md", "-o", d / "link.md", rid)
    assert p.returncode == 0, p.stderr
    assert (d / "link.md").is_symlink() and (d / "target.md").read_text().startswith("| condition |")
    (d / "stdout").symlink_to("/proc/self/fd/1")
    p = report(recs, "--format", "md", "-o", d / "stdout", rid)
    assert p.returncode == 0 and p.stdout.startswith("| condition |"), p.stderr
    assert (d / "stdout").is_symlink()
    os.mkfifo(d / "fifo")
    got = []
    t = threading.Thread(target=lambda: got.append(open(d / "fifo").read()))
    t.start()
    p = report(recs, "--format", "csv", "-o", d / "fifo", rid)
    t.join(60)
    assert p.returncode == 0 and got and got[0].startswith("condition"), (p.stderr, got)
    assert stat.S_ISFIFO(os.lstat(d / "fifo").st_mode)
    if os.geteuid() == 0:
        os.mknod(d / "null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        os.mknod(d / "full", 0o666 | stat.S_IFCHR, os.makedev(1, 7))
        p = report(recs, "-o", d / "null", rid)
        assert p.returncode == 0 and stat.S_ISCHR(os.lstat(d / "null").st_mode), p.stderr
        p = report(recs, "-o", d / "full", rid)
        assert p.returncode == 2 and "No space left" in p.stderr and str(d / "full") in p.stderr
        assert stat.S_ISCHR(os.lstat(d / "full").st_mode)


def test_errors_name_the_problem(recs):
    before = sorted(os.listdir(recs["runs"]))
    p = report(recs, "-o", recs["tmp"] / "x.html", "no-such-id")
    assert p.returncode == 2 and "no-such-id" in p.stderr
    p = report(recs, "--json", "-o", recs["tmp"] / "x.html", "no-such-id")
    doc = json.loads(p.stdout)
    assert p.returncode == 2 and doc["schema"] == "labbox.error/1"
    assert "no-such-id" in doc["error"]["message"]
    bad = recs["tmp"] / "bad"
    bad.mkdir()
    (bad / "sweep.json").write_text('{"schema": "labbox.sweep/1", "id": "x", "conditions": [')
    p = report(recs, bad / "sweep.json")
    assert p.returncode == 2 and "not JSON" in p.stderr and "sweep.json" in p.stderr
    (bad / "sweep.json").write_text('{"schema": "labbox.run/1"}')
    p = report(recs, bad / "sweep.json")
    assert p.returncode == 2 and "not a sweep document" in p.stderr
    (bad / "sweep.json").write_text(json.dumps({"schema": "labbox.sweep/1", "id": "x",
                                                "conditions": [{"name": "a", "metrics": {
                                                    "acc": {"n": 2, "mean": "high"}}}]}))
    p = report(recs, bad / "sweep.json")
    assert p.returncode == 2 and "'acc'" in p.stderr
    # The sweep's own sweep.json, damaged, is named.
    sd = recs["runs"].parent / "sweeps" / recs["grid"]["id"]
    copy = recs["tmp"] / "sweep-copy.json"
    shutil.copy(sd / "sweep.json", copy)
    try:
        (sd / "sweep.json").write_text("{")
        p = report(recs, recs["grid"]["id"])
        assert p.returncode == 2 and str(sd / "sweep.json") in p.stderr
    finally:
        shutil.copy(copy, sd / "sweep.json")
    p = report(recs, "-o", recs["tmp"] / "no-dir" / "r.html", recs["ridge"]["id"])
    assert p.returncode == 2 and "cannot write" in p.stderr and "no-dir" in p.stderr
    p = report(recs, "--format", "pdf", recs["ridge"]["id"])
    assert p.returncode == 2 and "pdf" in p.stderr
    p = report(recs)
    assert p.returncode == 2
    # Reading never runs anything.
    assert sorted(os.listdir(recs["runs"])) == before


# Names an experiment chooses that Markdown would make into links, images, autolinks, emphasis
# or code: as condition names (the runs' arguments) and as metric names (results.json keys).
MD_HOSTILE = [
    "![x](http://attacker.example/p.png?leak=1)",
    "[click me](javascript:alert(document.domain))",
    "<http://auto.example/a>",
    "www.attacker.example/w",
    "https://bare.example/b",
    "mail@attacker.example",
    "*em* _u_ ~~gone~~ **b** `code`",
    "<img src=http://attacker.example/i.png>",
]
# ASCII punctuation (what CommonMark lets a backslash escape).
MD_PUNCT = r"""!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~"""


def md_unescape(cell):
    import html
    import re
    return html.unescape(re.sub(r"\\([" + MD_PUNCT + "])", r"\1", cell.replace("`@`", "@")))


def test_md_names_from_the_experiment_form_no_link_or_image(tmp_path):
    """Condition names and metric names are the experiment's text: in the Markdown report
    each of their ASCII punctuation characters is escaped (an entity, or `@`), so a Markdown
    renderer (cmark-gfm, GitHub's: with its table, autolink and
    strikethrough extensions) makes no link, image, autolink, emphasis or code of them, and
    the text read back is the name itself."""
    import re
    exp = write_exp(tmp_path, r'''
        import json, sys
        names = json.loads(sys.argv[2])
        print("accuracy: 0.5")
        json.dump({n: 1.0 for n in names}, open("results.json", "w"))
        ''', "metrics: none\n")
    (exp / "labbox.yaml").unlink()
    runs = tmp_path / "runs"
    ids = []
    for name in MD_HOSTILE:
        p, res = run_json("run", "--json", "--python", PYTHON, "--runs-dir", runs, exp, "--",
                          name, json.dumps(MD_HOSTILE))
        assert p.returncode == 0, p.stderr[-3000:]
        ids.append(res["id"])
    out = tmp_path / "report.md"
    p = labbox("report", "--runs-dir", runs, "--format", "md", "-o", out, *ids)
    assert p.returncode == 0, p.stderr
    text = out.read_text()
    table = [l for l in text.splitlines() if l.startswith("|")]
    header = [c.strip() for c in table[0].strip("|").split(" | ")]
    conds = [l.strip("|").split(" | ")[0].strip() for l in table[2:]]
    # Every punctuation character of a name is escaped or part of an entity.
    safe = re.compile(r"(?:\\[" + MD_PUNCT + r"]|&(?:lt|gt|amp);|`@`|[^" + MD_PUNCT + r"])*")
    for cell in header[2:] + conds:
        assert safe.fullmatch(cell), cell
    assert sorted(md_unescape(h) for h in header[2:]) == sorted(MD_HOSTILE + ["accuracy"])
    for name in MD_HOSTILE:
        assert any(name in md_unescape(c) for c in conds), (name, conds)
    cmark = shutil.which("cmark-gfm")
    assert cmark, "cmark-gfm (GitHub's Markdown renderer) is missing: scripts/deps installs it"
    if cmark:
        r = subprocess.run([cmark, "-e", "table", "-e", "autolink", "-e", "strikethrough",
                            str(out)], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        dom = Dom(r.stdout)
        tags = {e["tag"] for e in dom.elements}
        assert tags.isdisjoint({"a", "img", "em", "strong", "del"}), r.stdout
        # The one code span: '@' as `@`, which keeps an address from being linked.
        assert all(e["text"] == "@" for e in dom.elements if e["tag"] == "code"), r.stdout
        cells = [e["text"].strip() for e in dom.elements if e["tag"] in ("th", "td")]
        for name in MD_HOSTILE:
            assert name in cells or any(name in c for c in cells), (name, cells)


def md_rows(text):
    """{condition: (n, cell of the first metric)} of a Markdown report."""
    table = [l for l in text.splitlines() if l.startswith("|")]
    rows = {}
    for line in table[2:]:
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        rows[md_unescape(cells[0])] = (int(cells[1].split("/")[0]), cells[2])
    return rows


def test_runs_that_differ_in_recorded_settings_are_different_conditions(tmp_path):
    """Runs of one directory and arguments that recorded another -e value, other code or
    another entry point are different conditions, named by what differs; a seed (an -e
    variable named like one) still pools."""
    runs = tmp_path / "runs"
    exp = write_exp(tmp_path, '''
        import os
        seed = int(os.environ.get("SEED", "0"))
        print(f"acc: {0.5 + float(os.environ.get('LR', '0')) + seed / 1000:.6f}")
        ''')
    ids = []
    for lr, seed in (("0.1", 1), ("0.1", 2), ("0.3", 1), ("0.3", 2)):
        p, res = run_json("run", "--json", "--python", PYTHON, "--runs-dir", runs, "-e",
                          f"LR={lr}", "-e", f"SEED={seed}", "-e", "BATCH=32", exp)
        assert p.returncode == 0, p.stderr[-3000:]
        ids.append(res["id"])
    p = labbox("report", "--runs-dir", runs, "--format", "md", *ids)
    assert p.returncode == 0, p.stderr
    rows = md_rows(p.stdout)
    assert rows.keys() == {"exp LR=0.1", "exp LR=0.3"}, rows
    assert rows["exp LR=0.1"][0] == 2 and rows["exp LR=0.3"][0] == 2
    assert float(rows["exp LR=0.1"][1].split()[0]) == pytest.approx(0.6015)
    assert float(rows["exp LR=0.3"][1].split()[0]) == pytest.approx(0.8015)
    assert "runs differ in \\-e LR" in p.stdout
    p = labbox("report", "--runs-dir", runs, "--format", "csv", *ids)
    assert p.returncode == 0, p.stderr
    got = {r["condition"]: r for r in csv.DictReader(io.StringIO(p.stdout))}
    assert got.keys() == {"exp LR=0.1", "exp LR=0.3"}
    assert float(got["exp LR=0.1"]["mean"]) == pytest.approx(0.6015)
    assert float(got["exp LR=0.1"]["std"]) == pytest.approx(statistics.stdev([0.601, 0.602]))
    # Seeds of one setting alone: one condition, named as before.
    p = labbox("report", "--runs-dir", runs, "--format", "csv", *ids[:2])
    assert {r["condition"] for r in csv.DictReader(io.StringIO(p.stdout))} == {"exp"}
    # The page's reproducibility section says what told the conditions apart.
    out = tmp_path / "r.html"
    p = labbox("report", "--runs-dir", runs, "-o", out, *ids)
    assert p.returncode == 0, p.stderr
    html = out.read_text()
    assert "exp: runs differ in -e LR: 2 conditions" in html
    assert "LR=0.1" in html and "-e variables (seeds aside)" in html

    # The code edited between runs, then another entry point.
    exp2 = write_exp(tmp_path, "print('acc: 0.2')\n", name="exp2")
    ids = []
    for code in ("print('acc: 0.2')\n", "print('acc: 0.9')\n"):
        (exp2 / "main.py").write_text(code)
        for _ in range(2):
            p, res = run_json("run", "--json", "--python", PYTHON, "--runs-dir", runs, exp2)
            assert p.returncode == 0, p.stderr[-3000:]
            ids.append(res["id"])
    (exp2 / "other.py").write_text("print('acc: 0.5')\n")
    p, res = run_json("run", "--json", "--python", PYTHON, "--runs-dir", runs, "--entry",
                      "other.py", exp2)
    assert p.returncode == 0, p.stderr[-3000:]
    p = labbox("report", "--runs-dir", runs, "--format", "md", *ids, res["id"])
    assert p.returncode == 0, p.stderr
    rows = md_rows(p.stdout)
    assert len(rows) == 3, rows
    by_mean = {float(cell.split()[0]): (name, n) for name, (n, cell) in rows.items()}
    assert sorted(by_mean) == [0.2, 0.5, 0.9]
    assert by_mean[0.2][1] == 2 and by_mean[0.9][1] == 2 and by_mean[0.5][1] == 1
    assert by_mean[0.5][0].startswith("exp2 --entry other.py (code ")
    for acc in (0.2, 0.9):
        assert by_mean[acc][0].startswith("exp2 --entry main.py (code "), rows
    assert by_mean[0.2][0] != by_mean[0.9][0]
    assert "runs differ in entry point, staged code: 3 conditions" in md_unescape(p.stdout)
    # Only the code differs: the entry point is not named.
    p = labbox("report", "--runs-dir", runs, "--format", "csv", *ids)
    names = {r["condition"] for r in csv.DictReader(io.StringIO(p.stdout))}
    assert len(names) == 2 and all(re.fullmatch(r"exp2 \(code [0-9a-f]{6}\)", n) for n in names)


def sweep_json(tmp_path, *args):
    p, doc = run_json("sweep", "--json", "--python", PYTHON, "--runs-dir", tmp_path / "runs",
                      "--jobs", "2", *map(str, args))
    return doc


def csv_rows(p):
    assert p.returncode == 0, p.stderr
    return {(r["condition"], r["metric"]): r for r in csv.DictReader(io.StringIO(p.stdout))}


def test_digits_follow_the_interval_so_conditions_that_differ_print_apart(tmp_path):
    """A large value with a small seed spread (tokens/s): two conditions whose intervals are
    disjoint print different means and intervals of non-zero width, in the page, the Markdown
    and the sweep's own summary; ± is the interval's half-width, and the footer says so."""
    exp = write_exp(tmp_path, """
        import sys
        a = dict(zip(sys.argv[1::2], sys.argv[2::2]))
        print(f"throughput: {dict(A=1234561.0, B=1234569.0)[a['--method']] + int(a['--seed'])}")
        """)
    sw = sweep_json(tmp_path, "--param", "method=A,B", "--seeds", "0-2", exp)
    st = {c["name"]: c["metrics"]["throughput"] for c in sw["conditions"]}
    out = tmp_path / "r.html"
    p = labbox("report", "--runs-dir", tmp_path / "runs", "-o", out, sw["id"])
    assert p.returncode == 0, p.stderr
    cells = re.findall(r'<span class="mean">(.*?)</span><span class="ci">\[(.*?), (.*?)\] sd',
                       out.read_text())
    assert cells == [("1234562.0", "1234559.5", "1234564.5"),
                     ("1234570.0", "1234567.5", "1234572.5")]
    p = labbox("report", "--runs-dir", tmp_path / "runs", "--format", "md", sw["id"])
    assert p.returncode == 0, p.stderr
    assert "| method\\=A | 3/3 | 1234562.0 ± 2.5 |" in p.stdout
    assert "| method\\=B | 3/3 | 1234570.0 ± 2.5 |" in p.stdout
    assert "Mean ± half-width of the 95% interval" in p.stdout
    half = (st["method=A"]["ci95"]["high"] - st["method=A"]["ci95"]["low"]) / 2
    assert round(half, 1) == 2.5
    # The same sweep again, every cell reused: its closing summary.
    p = labbox("sweep", "--python", PYTHON, "--runs-dir", tmp_path / "runs", "--param",
               "method=A,B", "--seeds", "0-2", exp)
    assert p.returncode == 0, p.stderr[-3000:]
    text = p.stdout + p.stderr
    assert "method=A (3/3): throughput=1234562.0 ± 2.5;" in text
    assert "method=B (3/3): throughput=1234570.0 ± 2.5;" in text
    assert "mean ± half-width of the 95% interval" in text


def test_md_and_csv_carry_failed_seeds_and_identical_conditions(tmp_path):
    """A condition that lost half its seeds reads 2/4 with its failures listed; conditions the
    sweep flags as identical are flagged in the Markdown and the CSV; the footer states what
    the statistics are over (a NaN seed's finite accuracy is in them)."""
    exp = write_exp(tmp_path, """
        import sys
        a = dict(zip(sys.argv[1::2], sys.argv[2::2]))
        m, s = a['--method'], int(a['--seed'])
        if m == 'unstable' and s >= 2:
            raise RuntimeError("diverged")
        print(f"acc: {[0.80, 0.82, 0.84, 0.86][s]}")
        if m == 'nanloss' and s == 3:
            print("loss: nan")
        """)
    sw = sweep_json(tmp_path, "--param", "method=stable,unstable,nanloss,copy", "--seeds",
                    "0-3", exp)
    assert [x["conditions"] for x in sw["identical_conditions"]] == [["method=stable",
                                                                      "method=copy"]]
    p = labbox("report", "--runs-dir", tmp_path / "runs", "--format", "md", sw["id"])
    assert p.returncode == 0, p.stderr
    md = p.stdout
    assert "| method\\=unstable | 2/4 | 0.81 ± 0.13 |" in md
    assert "| method\\=nanloss | 3/4 | 0.830 ± 0.041 (n=4) | NaN/Inf |" in md
    assert "- method\\=unstable, seed 2: failed (nan\\_divergence)" in md
    assert "- method\\=unstable, seed 3: failed" in md
    assert "- method\\=nanloss, seed 3: invalid\\_metrics" in md
    assert "Identical results: method\\=stable\\, method\\=copy\\: these conditions" in md
    assert "over completed runs" not in md
    assert "completed and invalid_metrics runs" in md.replace("\\_", "_")
    rows = csv_rows(labbox("report", "--runs-dir", tmp_path / "runs", "--format", "csv",
                           sw["id"]))
    assert (rows[("method=unstable", "acc")]["runs"], rows[("method=unstable", "acc")]["completed"]) == ("4", "2")
    assert rows[("method=stable", "acc")]["identical_to"] == "method=copy"
    assert rows[("method=copy", "acc")]["identical_to"] == "method=stable"
    assert rows[("method=nanloss", "acc")]["identical_to"] == ""


def test_the_same_runs_give_the_same_statistics_by_sweep_id_or_run_ids(tmp_path):
    """Seed 2 diverged (loss NaN, its accuracy the worst): by run ids as by sweep id its
    accuracy counts and its NaN is counted; integers past 2^53 are exact either way."""
    exp = write_exp(tmp_path, """
        import sys
        a = dict(zip(sys.argv[1::2], sys.argv[2::2]))
        s = int(a['--seed'])
        print(f"acc: {[0.91, 0.93, 0.52][s]}")
        print(f"loss: {['0.20', '0.18', 'nan'][s]}")
        print(f"big: {2**60 + 7 * s}")
        """)
    sw = sweep_json(tmp_path, "--param", "method=m", "--seeds", "0-2", exp)
    runs = [c["run_id"] for c in sw["cells"]]
    by_sweep = csv_rows(labbox("report", "--runs-dir", tmp_path / "runs", "--format", "csv",
                               sw["id"]))
    by_runs = csv_rows(labbox("report", "--runs-dir", tmp_path / "runs", "--format", "csv",
                              *runs))
    assert by_sweep == by_runs
    acc = by_runs[("method=m", "acc")]
    assert (acc["n"], acc["min"]) == ("3", "0.52")
    assert float(acc["mean"]) == pytest.approx((0.91 + 0.93 + 0.52) / 3)
    loss = by_runs[("method=m", "loss")]
    assert (loss["n"], loss["nonfinite"]) == ("2", "1")
    big = by_runs[("method=m", "big")]
    assert (big["min"], big["max"]) == (str(2**60), str(2**60 + 14))
    assert float(big["std"]) == pytest.approx(7.0)


def test_runs_over_other_data_or_other_e_values_are_other_conditions(tmp_path):
    """Two sweeps of one plan with -e DATASET=easy and =hard, and runs over two read-only data
    sets (-v): never pooled as seeds of one setting, named by what differs."""
    runs = tmp_path / "runs"
    exp = write_exp(tmp_path, """
        import os, sys
        a = dict(zip(sys.argv[1::2], sys.argv[2::2]))
        s = int(a.get("--seed", "0"))
        if os.path.exists("/data/score"):
            base = float(open("/data/score").read())
        else:
            base = {"easy": 0.95, "hard": 0.60}[os.environ["DATASET"]]
        if os.path.isdir("/out"):
            open(f"/out/seed{s}.txt", "w").write("written by the run")
        print(f"acc: {base + 0.01 * s}")
        """)
    ids = [sweep_json(tmp_path, "-e", f"DATASET={d}", "--param", "lr=0.1", "--seeds", "0-1",
                      exp)["id"] for d in ("easy", "hard")]
    rows = csv_rows(labbox("report", "--runs-dir", runs, "--format", "csv", *ids))
    assert {k: r["n"] for k, r in rows.items()} == {("lr=0.1 DATASET=easy", "acc"): "2",
                                                   ("lr=0.1 DATASET=hard", "acc"): "2"}
    rids = []
    for d, score in (("dataA", "0.95"), ("dataB", "0.60")):
        (tmp_path / d).mkdir()
        (tmp_path / d / "score").write_text(score)
        os.chmod(tmp_path / d, 0o755)
        for seed in (0, 1):
            p, res = run_json("run", "--json", "--python", PYTHON, "--runs-dir", runs, "-v",
                              f"{tmp_path / d}:/data:ro", exp, "--", "--seed", seed)
            assert p.returncode == 0, p.stderr[-3000:]
            rids.append(res["id"])
    p = labbox("report", "--runs-dir", runs, "--format", "csv", *rids)
    rows = csv_rows(p)
    assert len(rows) == 2 and all(r["n"] == "2" for r in rows.values())
    means = sorted(float(r["mean"]) for r in rows.values())
    assert means == pytest.approx([0.605, 0.955])
    assert all(re.fullmatch(r"exp \(data [0-9a-f]{6,}\)", c) for c, _ in rows)
    p = labbox("report", "--runs-dir", runs, "--format", "md", *rids)
    assert "exp: runs differ in mounted data: 2 conditions, not seeds of one" in md_unescape(p.stdout)
    # The same data in every run: one condition, named as before.
    rows = csv_rows(labbox("report", "--runs-dir", runs, "--format", "csv", *rids[:2]))
    assert list(rows) == [("exp", "acc")]
    # A writable output directory each seed writes into is the same setting all the same.
    out = tmp_path / "out"
    out.mkdir()
    os.chmod(out, 0o777)
    wids = []
    for seed in (0, 1, 2):
        p, res = run_json("run", "--json", "--python", PYTHON, "--runs-dir", runs, "-v",
                          f"{out}:/out:rw", "-e", "DATASET=easy", exp, "--", "--seed", seed)
        assert p.returncode == 0, p.stderr[-3000:]
        wids.append(res["id"])
    assert len(list(out.iterdir())) == 3
    rows = csv_rows(labbox("report", "--runs-dir", runs, "--format", "csv", *wids))
    assert [(k, r["n"]) for k, r in rows.items()] == [(("exp", "acc"), "3")]


def test_curve_marks_where_fewer_runs_remain(tmp_path):
    """A metric over time is the mean of the runs that reached each step: where one seed
    stopped early, the rest of the line is a survivor's values, drawn dashed, its title
    saying how many runs it averages, and the figure says so."""
    exp = write_exp(tmp_path, """
        import sys
        a = dict(zip(sys.argv[1::2], sys.argv[2::2]))
        s = int(a['--seed'])
        n = 6 if s == 0 else 2
        for e in range(1, n + 1):
            print(f"epoch={e} val_loss: {(1.0 if s == 0 else 3.0) / e:.3f}")
        print(f"final_loss: {(1.0 if s == 0 else 3.0) / n:.3f}")
        """)
    runs = tmp_path / "runs"
    p, d = run_json("sweep", "--json", "--python", PYTHON, "--runs-dir", runs, "--jobs", "2",
                    "--seeds", "0-1", "--param", "method=m", exp)
    assert p.returncode == 0, p.stderr[-3000:]
    out = tmp_path / "r.html"
    p = labbox("report", "--runs-dir", runs, d["id"], "-o", out)
    assert p.returncode == 0, p.stderr
    t = out.read_text()
    i = t.index('data-metric="val_loss"', t.index('class="series-plot"'))
    fig = t[t.rfind("<figure", 0, i):t.index("</figure>", i)]
    lines = re.findall(r'<polyline class="line( fewer)?"[^>]*data-runs="(\d+)"[^>]*points="([^"]*)">'
                       r'<title>([^<]*)</title>', fig)
    # epochs 1-2 both seeds (solid), 3-6 seed 0 alone (dashed, joined to epoch 2)
    assert [(f, n, len(pts.split())) for f, n, pts, _ in lines] == [("", "2", 2), (" fewer", "1", 5)], lines
    assert "n=2 of 2 runs" in lines[0][3] and "n=1 of 2 runs" in lines[1][3], lines
    assert "stroke-dasharray" in fig and "Dashed: fewer runs behind the line" in fig


def test_o_and_export_targets_in_labbox_records_are_refused(tmp_path):
    """report -o and runs export's directories never write over labbox's own records: a run's
    result.json, the run index, the runs directory, sweeps/ or the directory holding them are
    refused (exit 2 naming the path), and nothing there changes; a path beside them is fine."""
    exp = write_exp(tmp_path, 'print("accuracy: 0.9")\n')
    assert labbox("run", "-q", "--python", PYTHON, ".", cwd=exp).returncode == 0
    lb = exp / ".labbox"
    rid = next((lb / "runs").iterdir()).name
    result = (lb / "runs" / rid / "result.json").read_bytes()
    db = (lb / "labbox.db").read_bytes()
    db_mode = stat.S_IMODE((lb / "labbox.db").stat().st_mode)
    for target in (f".labbox/runs/{rid}/result.json", ".labbox/labbox.db",
                   f".labbox/runs/{rid}/exp/results.json", ".labbox/runs/new.md",
                   ".labbox/sweeps/new/r.md", ".labbox/runs", "./.labbox/../.labbox/labbox.db"):
        p = labbox("report", rid, "--format", "csv", "-o", target, cwd=exp)
        assert p.returncode == 2, (target, p.returncode, p.stderr)
        assert f"-o '{target}'" in p.stderr and "labbox's records" in p.stderr, p.stderr
    for target in (".labbox", ".labbox/runs/mlruns", f".labbox/runs/{rid}"):
        for kind in ("--mlflow", "--sacred"):
            p = labbox("runs", "export", kind, target, cwd=exp)
            assert p.returncode == 2, (kind, target, p.returncode, p.stderr)
            assert f"{kind} '{target}'" in p.stderr, p.stderr
    assert (lb / "runs" / rid / "result.json").read_bytes() == result
    assert (lb / "labbox.db").read_bytes()[:16] == db[:16] == b"SQLite format 3\0"
    assert stat.S_IMODE((lb / "labbox.db").stat().st_mode) == db_mode
    assert sorted(x.name for x in (lb / "runs").iterdir()) == [rid]
    assert not (lb / "sweeps" / "new").exists()
    # the run is still whole: sealed and reported
    assert labbox("report", rid, "--format", "md", "-o", "report.md", cwd=exp).returncode == 0
    assert (exp / "report.md").read_text().startswith("| condition |")
    p = labbox("runs", "export", "--mlflow", "mlruns", cwd=exp)
    assert p.returncode == 0, p.stderr
