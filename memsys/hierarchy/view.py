"""One self-contained HTML view for any saved hierarchy.

The page embeds the nodes as JSON and renders them with a little inline script (no server, no
network): the top nodes as a collapsible tree (a node with several parents appears under each),
a search box over node text, and a question picker that highlights the nodes that question
retrieved (their ancestors are marked so the branch can be found).

``memharness hierarchy`` (``__main__.py``) re-renders the view of a saved memory.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

from memharness.memsys.hierarchy.store import HierarchyStore
from memharness.memsys.services.formats import html_page

_STYLE = """
body{font-family:sans-serif;font-size:14px;margin:1em}
#bar{position:sticky;top:0;background:#fff;padding:.4em 0;border-bottom:1px solid #ddd;z-index:1}
#bar input{width:22em} #bar select{max-width:40em}
.node{margin-left:1.1em;border-left:1px solid #ccc;padding-left:.4em}
.row{padding:.1em 0;cursor:pointer} .meta{color:#666;font-size:12px} .tog{display:inline-block;width:1em}
.full{white-space:pre-wrap;background:#f6f6f6;margin:.2em 0;padding:.3em;font-size:12px;display:none}
.open>.full{display:block}
.hit>.row{background:#ffe08a} .has-hit>.row .tog{color:#d08000;font-weight:bold} .focus>.row{outline:2px solid #36c}
#side{display:flex;gap:2em} #side ol{margin:.3em 0;padding-left:1.6em} #side li{cursor:pointer}
"""

_SCRIPT = r"""
const D = JSON.parse(document.getElementById('data').textContent);
const N = D.nodes, el = {}, tree = document.getElementById('tree');
function snippet(t, n){ return t.length > n ? t.slice(0, n) + '…' : t; }
function make(i){
  const n = N[i], d = document.createElement('div');
  d.className = 'node'; d.dataset.i = i;
  const kids = n.c.length, meta = ['L' + n.l];
  if (kids) meta.push(kids + ' children');
  if (n.u) meta.push(n.u + ' units');
  if (n.p.length > 1) meta.push(n.p.length + ' parents');
  if (n.e) meta.push(n.e + ' neighbours');
  const row = document.createElement('div'); row.className = 'row';
  row.innerHTML = '<span class="tog">' + (kids ? '▸' : '·') + '</span><span class="meta"></span> <span class="txt"></span>';
  row.querySelector('.meta').textContent = meta.join(' · ');
  row.querySelector('.txt').textContent = snippet(n.t, 140);
  d.append(row);
  if (n.t.length > 140){ const full = document.createElement('div'); full.className = 'full'; full.textContent = n.t; d.append(full); }
  row.onclick = () => toggle(d);
  (el[i] = el[i] || []).push(d);
  return d;
}
function expand(d){
  const i = +d.dataset.i;
  d.classList.add('open');
  if (!d.dataset.filled){
    d.dataset.filled = 1;
    for (const c of N[i].c) d.append(make(c));
    mark();
  }
  if (N[i].c.length) d.querySelector('.tog').textContent = '▾';
}
function toggle(d){
  if (d.classList.contains('open')){ d.classList.remove('open'); if (N[+d.dataset.i].c.length) d.querySelector('.tog').textContent = '▸'; }
  else expand(d);
}
function pathTo(i){ const p = [i]; while (N[p[0]].p.length && !D.top.includes(p[0])) p.unshift(N[p[0]].p[0]); return p; }
function reveal(i){
  let scope = tree;
  for (const j of pathTo(i)){
    const d = [...scope.children].find(x => +x.dataset.i === j);
    if (!d) return null;
    if (j !== i) expand(d);
    scope = d;
  }
  return scope;
}
let hits = new Set(), above = new Set();
function mark(){
  document.querySelectorAll('.node').forEach(d => {
    const i = +d.dataset.i;
    d.classList.toggle('hit', hits.has(i)); d.classList.toggle('has-hit', above.has(i));
  });
}
function focus(i){
  document.querySelectorAll('.focus').forEach(x => x.classList.remove('focus'));
  const d = reveal(i);
  if (d){ d.classList.add('focus'); d.scrollIntoView({block: 'center'}); }
}
function listInto(ol, items){
  ol.innerHTML = '';
  for (const [i, label] of items){
    const li = document.createElement('li'); li.dataset.i = i; li.textContent = label;
    li.onclick = () => focus(i); ol.append(li);
  }
}
for (const i of D.top) tree.append(make(i));
document.getElementById('search').oninput = e => {
  const q = e.target.value.trim().toLowerCase(), out = [];
  if (q) for (let i = 0; i < N.length && out.length < 50; i++)
    if (N[i].t.toLowerCase().includes(q)) out.push([i, 'L' + N[i].l + ': ' + snippet(N[i].t, 90)]);
  listInto(document.getElementById('results'), out);
  document.getElementById('nres').textContent = q ? out.length + (out.length === 50 ? '+' : '') + ' matches' : '';
};
const pick = document.getElementById('question');
D.retrievals.forEach((r, k) => { const o = document.createElement('option'); o.value = k; o.textContent = r.question; pick.append(o); });
pick.onchange = () => {
  const r = D.retrievals[+pick.value];
  hits = new Set(r ? r.nodes : []); above = new Set();
  for (const i of hits) for (const j of pathTo(i)) if (j !== i) above.add(j);
  for (const i of hits) reveal(i);
  mark();
  listInto(document.getElementById('retrieved'), r ? r.nodes.map((i, k) => [i, '#' + (k + 1) + ' (' + r.scores[k] + ') L' + N[i].l + ': ' + snippet(N[i].t, 90)]) : []);
};
"""


def view_data(
    store: HierarchyStore, retrievals: Sequence[dict[str, Any]], max_nodes: int
) -> dict[str, Any]:
    """The JSON the page renders: compact nodes (text, level, children, parents, units, neighbours)."""
    keep = len(store) if len(store) <= max_nodes else max_nodes
    nodes = [
        {
            "t": store.texts[v],
            "l": store.levels[v],
            "c": [c for c in store.children[v] if c < keep],
            "p": [p for p in store.parents[v] if p < keep and p != store.root],
            "u": len(store.source_units(v)),
            "e": len(store.edges[v]),
        }
        for v in range(keep)
    ]
    top = [v for v in store.entry_nodes() if v < keep]
    if store.root is None:  # nodes that no kept node points to must stay reachable
        top += [v for v in range(keep) if not nodes[v]["p"] and v not in top]
    hits = [
        {
            "question": r["question"],
            "nodes": [v for v in r["nodes"] if v < keep],
            "scores": r["scores"],
        }
        for r in retrievals
    ]
    return {"nodes": nodes, "top": top, "retrievals": hits, "truncated": len(store) - keep}


def render_html(
    store: HierarchyStore,
    title: str = "hierarchy",
    retrievals: Sequence[dict[str, Any]] = (),
    max_nodes: int = 5000,
) -> str:
    """The self-contained page (inline CSS, script and data)."""
    data = view_data(store, retrievals, max_nodes)
    note = (
        f" (only the first {max_nodes} nodes are shown; html_max_nodes)"
        if data["truncated"]
        else ""
    )
    body = (
        f"<h3>{html.escape(title)}{html.escape(note)}</h3>"
        "<div id='bar'><input id='search' placeholder='search node text'> <span id='nres' class='meta'></span>"
        " &nbsp; <select id='question'><option value=''>highlight what a question retrieved…</option></select></div>"
        "<div id='side'><div><b>Matches</b><ol id='results'></ol></div>"
        "<div><b>Retrieved</b><ol id='retrieved'></ol></div></div><div id='tree'></div>"
    )
    return html_page(title, _STYLE, body, data, _SCRIPT)
