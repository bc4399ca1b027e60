"""A static results browser: one self-contained HTML page over run folders (no server, no network).

    memharness browse results/sweeps/<time> --out results/tables/browser.html

Lists every run (memory, dataset, setting, models, counts, headline metrics) with a filter box;
clicking a run lists its questions (filterable, with status and scores); clicking a question shows
the question, references and options, the prediction, the judge's reply, every metric, and the
retrieved items with their score, level, node id and source units. Reads only metrics.json and
samples.jsonl; long retrieved texts are cut at ``--max-chars`` to keep the page small.
"""

from __future__ import annotations

import argparse
import html
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memharness.eval.metrics import registry
from memharness.eval.record import scores
from memharness.eval.record.read import ReportError, find_runs, iter_samples, load_run, setting
from memharness.memsys.services import files as fileio
from memharness.memsys.services.formats import html_page

HEADLINE = registry.names(headline=True)

_STYLE = """
body{font-family:sans-serif;font-size:14px;margin:1em} table{border-collapse:collapse;margin:.4em 0}
td,th{border-bottom:1px solid #ddd;padding:.2em .5em;text-align:left;vertical-align:top}
tr.pick{cursor:pointer} tr.pick:hover{background:#eef4ff} tr.sel{background:#dbe7ff}
input{width:24em;margin:.3em 0} .meta{color:#666;font-size:12px} pre{white-space:pre-wrap;margin:0}
#sample{border-top:2px solid #36c;margin-top:1em;padding-top:.5em} .bad{color:#b00}
"""

_SCRIPT = r"""
const D = JSON.parse(document.getElementById('data').textContent);
const $ = id => document.getElementById(id);
function cell(tr, text, cls){ const td = document.createElement('td'); td.textContent = text ?? '-'; if (cls) td.className = cls; tr.append(td); return td; }
function fmt(m){ return m == null ? '-' : (typeof m === 'object' ? m.mean.toFixed(3) + ' (n=' + m.n + ')' : (+m).toFixed(3)); }
function runs(){
  const q = $('runfilter').value.toLowerCase(), body = $('runs');
  body.innerHTML = '';
  D.runs.forEach((r, k) => {
    const hay = [r.memory, r.dataset, r.setting, r.llm, r.embedder, r.folder].join(' ').toLowerCase();
    if (q && !hay.includes(q)) return;
    const tr = document.createElement('tr'); tr.className = 'pick'; tr.dataset.k = k;
    [r.memory, r.dataset, r.setting || '-', r.llm, r.scored + '/' + r.questions].forEach(t => cell(tr, t));
    D.headline.forEach(m => cell(tr, fmt(r.metrics[m])));
    tr.onclick = () => openRun(k); body.append(tr);
  });
}
let current = null;
function openRun(k){
  current = k;
  document.querySelectorAll('#runs tr').forEach(t => t.classList.toggle('sel', +t.dataset.k === k));
  $('runtitle').textContent = D.runs[k].memory + ' on ' + D.runs[k].dataset + ' — ' + D.runs[k].folder;
  $('samplebox').style.display = ''; $('sample').innerHTML = ''; samples();
}
function samples(){
  const q = $('samplefilter').value.toLowerCase(), body = $('samples');
  body.innerHTML = '';
  D.runs[current].samples.forEach((s, i) => {
    if (q && !(s.question + ' ' + (s.prediction || '')).toLowerCase().includes(q)) return;
    const tr = document.createElement('tr'); tr.className = 'pick'; tr.dataset.i = i;
    cell(tr, s.question); cell(tr, s.prediction); cell(tr, s.status, s.status === 'scored' ? '' : 'bad');
    D.headline.forEach(m => cell(tr, s.metrics[m] == null ? '-' : (+s.metrics[m]).toFixed(2)));
    tr.onclick = () => openSample(i); body.append(tr);
  });
}
function openSample(i){
  const s = D.runs[current].samples[i], box = $('sample');
  document.querySelectorAll('#samples tr').forEach(t => t.classList.toggle('sel', +t.dataset.i === i));
  box.innerHTML = '';
  const add = (label, text) => { const p = document.createElement('p'); const b = document.createElement('b');
    b.textContent = label + ': '; const pre = document.createElement('pre'); pre.textContent = text ?? '-';
    p.append(b, pre); box.append(p); };
  add('Question', s.question); add('References', (s.references || []).join(' / '));
  if (s.options) add('Options', s.options.map((o, k) => String.fromCharCode(65 + k) + ') ' + o).join('\n'));
  add('Prediction', s.prediction); add('Status', s.status + (s.error ? ' — ' + s.error : ''));
  add('Judge reply', s.judge_reply); add('Metrics', Object.entries(s.metrics || {}).map(([k, v]) => k + ' ' + (typeof v === 'number' ? v.toFixed(3) : v)).join(' · '));
  const t = document.createElement('table'); t.id = 'retrieved';
  t.innerHTML = '<tr><th>#</th><th>score</th><th>level</th><th>node</th><th>source units</th><th>text</th></tr>';
  (s.retrieved || []).forEach((r, k) => { const tr = document.createElement('tr');
    [k + 1, r.score.toFixed(3), r.level, r.node_id, (r.source_unit_ids || []).join(', ')].forEach(x => cell(tr, String(x)));
    const td = cell(tr, ''); const pre = document.createElement('pre'); pre.textContent = r.text; td.append(pre); t.append(tr); });
  const h = document.createElement('b'); h.textContent = 'Retrieved (' + (s.retrieved || []).length + ')';
  box.append(h, t);
}
$('runfilter').oninput = runs; $('samplefilter').oninput = samples;
const head = $('runhead'); ['memory', 'dataset', 'setting', 'llm', 'scored'].concat(D.headline).forEach(h => { const th = document.createElement('th'); th.textContent = h; head.append(th); });
const shead = $('samplehead'); ['question', 'prediction', 'status'].concat(D.headline).forEach(h => { const th = document.createElement('th'); th.textContent = h; shead.append(th); });
runs();
"""


def _sample(record: dict[str, Any], max_chars: int) -> dict[str, Any]:
    keep = (
        "question_id",
        "question",
        "references",
        "options",
        "prediction",
        "status",
        "error",
    )
    out = {k: record.get(k) for k in keep}
    # the page's own payload: each metric's value and the judge's reply, from the sample's scores
    out["metrics"] = scores.values(record)
    out["judge_reply"] = scores.detail(record, "judge", "reply")
    out["retrieved"] = [
        {**r, "text": r["text"] if len(r["text"]) <= max_chars else r["text"][:max_chars] + " […]"}
        for r in record.get("retrieved", [])
    ]
    return out


def browser_data(paths: Sequence[str | Path], max_chars: int = 1500) -> dict[str, Any]:
    """Every run under ``paths`` with its summary and its samples, ready to embed."""
    runs = []
    for folder in find_runs(paths):
        run = load_run(folder)
        samples = [_sample(s, max_chars) for s in iter_samples(folder)]
        runs.append(
            {
                "folder": str(folder),
                "memory": run["memory"],
                "dataset": run["dataset"],
                "setting": setting(run),
                "llm": run.get("llm"),
                "embedder": run.get("embedder"),
                "questions": run["counts"]["questions"],
                "scored": run["counts"]["scored"],
                "metrics": {m: run["metrics"].get(m) for m in HEADLINE},
                "samples": samples,
            }
        )
    headline = [m for m in HEADLINE if any(r["metrics"].get(m) for r in runs)]
    return {"runs": runs, "headline": headline}


def render(data: dict[str, Any], title: str = "memharness runs") -> str:
    body = (
        f"<h3>{html.escape(title)}</h3>"
        "<input id='runfilter' placeholder='filter runs (memory, dataset, setting, model)'>"
        "<table><thead><tr id='runhead'></tr></thead><tbody id='runs'></tbody></table>"
        "<div id='samplebox' style='display:none'><h4 id='runtitle'></h4>"
        "<input id='samplefilter' placeholder='filter questions'>"
        "<table><thead><tr id='samplehead'></tr></thead><tbody id='samples'></tbody></table>"
        "<div id='sample'></div></div>"
    )
    return html_page(title, _STYLE, body, data, _SCRIPT)


def write_browser(paths: Sequence[str | Path], out: Path, max_chars: int = 1500) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    fileio.write_text(out, render(browser_data(paths, max_chars)))
    return out


def main(argv: Sequence[str] | None = None) -> Path:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "runs",
        nargs="*",
        default=["results/runs", "results/sweeps"],
        help="run folders, sweep folders, or folders holding them",
    )
    ap.add_argument("--out", type=Path, default=Path("results/tables/browser.html"))
    ap.add_argument(
        "--max-chars", type=int, default=1500, help="cut retrieved texts longer than this"
    )
    args = ap.parse_args(argv)
    try:
        path = write_browser(
            [p for p in args.runs if Path(p).exists()] or args.runs, args.out, args.max_chars
        )
    except ReportError as err:
        raise SystemExit(f"error: {err}") from None
    print(f"browser: {path}")
    return path


if __name__ == "__main__":
    main()
