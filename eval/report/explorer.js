// The results explorer (eval/report/explorer_data.py writes the data block it reads).
// Every text from a run goes through textContent: no run output can add markup.
const D = JSON.parse(document.getElementById('data').textContent);
const $ = id => document.getElementById(id);
const CHUNK = 100;  // matrix rows rendered at a time (the rest as the reader scrolls)
// the writer leaves out empty fields of a cell; put them back once
D.cells.forEach(row => row.forEach(c => { if (c) { c.v ??= {}; c.j ??= {}; c.r ??= []; c.gu ??= []; c.f ??= []; } }));
const byKey = Object.fromEntries(D.runs.map((r, i) => [r.key, i]));
const byQid = Object.fromEntries(D.questions.map((q, i) => [q.id, i]));

function el(tag, text, cls, parent){
  const e = document.createElement(tag);
  if (text != null) e.textContent = text;
  if (cls) e.className = cls;
  if (parent) parent.append(e);
  return e;
}
function num(x, d = 3){ return x == null ? '-' : (+x).toFixed(d); }
function safeHref(h){ return /^\s*(javascript|data):/i.test(h) ? '#' : h; }
function verdict(c){
  if (!c) return 'none';
  if (c.s !== 'scored') return 'fail';
  const v = c.v[D.metric];
  return v == null ? 'none' : (v >= 0.5 ? 'ok' : 'bad');
}
const MARK = {ok: '✓', bad: '✗', fail: '!', none: '·'};

// ---- routing: #board, #matrix, #q=<id>&a=<run>&b=<run>, #h2h&a=..&b=.., #diff&a=..&b=..
function params(){
  const out = {view: 'board'};
  location.hash.replace(/^#/, '').split('&').filter(Boolean).forEach(part => {
    const k = part.indexOf('=');
    if (k < 0) out.view = decodeURIComponent(part);
    else out[decodeURIComponent(part.slice(0, k))] = decodeURIComponent(part.slice(k + 1));
  });
  if (out.q != null) out.view = 'q';
  return out;
}
function link(view, extra){
  const parts = view === 'q' ? [] : [view];
  Object.entries(extra || {}).forEach(([k, v]) => { if (v != null && v !== '') parts.push(k + '=' + encodeURIComponent(v)); });
  return '#' + parts.join('&');
}
const VIEWS = {board: 'v-board', matrix: 'v-matrix', q: 'v-question', h2h: 'v-h2h', diff: 'v-diff'};
function route(){
  const p = params();
  const view = VIEWS[p.view] ? p.view : 'board';
  Object.entries(VIEWS).forEach(([v, id]) => { $(id).hidden = v !== view; });
  document.querySelectorAll('nav button').forEach(b => b.classList.toggle('on', b.dataset.view === view));
  ({board: renderBoard, matrix: renderMatrix, q: () => renderQuestion(p), h2h: () => renderH2H(p), diff: () => renderDiff(p)})[view]();
}

// ---- leaderboard
let sortKey = null, sortDir = -1;
const BOARD_COLS = [
  ['system', r => r.label], ['dataset', r => r.dataset], ['llm', r => r.llm], ['embedder', r => r.embedder],
  ['judge model', r => r.judge], ['n', r => r.n], ['failed', r => r.failed], ['injection', r => r.injection],
].concat(D.headline.map(m => [m, r => r.metrics[m] ? r.metrics[m].mean : null, m]))
 .concat([['judge accepts ref', r => r.judges.judge_accepts_reference], ['judge false accept', r => r.judges.judge_far_other],
   ['κ lenient', r => r.judges.judge_kappa_lenient], ['κ judge2', r => r.judges.judge_kappa_judge2],
   ['tokens/q', r => r.cost.tokens_per_question], ['LLM s', r => r.cost.method_llm_s], ['s/q', r => r.cost.s_per_question],
   ['method $', r => r.cost.method_usd], ['eval $', r => r.cost.eval_usd]]);
function renderBoard(){
  const box = $('v-board'); box.innerHTML = '';
  const sets = [...new Set(D.runs.map(r => r.qset))];
  sets.forEach(qset => {
    const runs = D.runs.filter(r => r.qset === qset);
    el('div', 'Question set ' + qset + ' (' + runs[0].n + ' questions)', 'grp', box);
    const t = el('table', null, 'board', box), head = el('tr', null, null, el('thead', null, null, t));
    BOARD_COLS.forEach(([name], k) => {
      const th = el('th', name + (sortKey === k ? (sortDir < 0 ? ' ▼' : ' ▲') : ''), 'sort', head);
      th.onclick = () => { sortDir = sortKey === k ? -sortDir : -1; sortKey = k; renderBoard(); };
    });
    if (sortKey != null) {
      const get = BOARD_COLS[sortKey][1];
      runs.sort((a, b) => { const x = get(a), y = get(b);
        return x == null ? 1 : y == null ? -1 : (x < y ? -sortDir : x > y ? sortDir : 0); });
    }
    const body = el('tbody', null, null, t);
    runs.forEach(r => {
      const tr = el('tr', null, null, body); tr.dataset.key = r.key;
      BOARD_COLS.forEach(([, get, metric]) => {
        const m = metric && r.metrics[metric];
        if (m) { const td = el('td', num(m.mean), 'num', tr); el('div', '[' + num(m.ci_low, 2) + ', ' + num(m.ci_high, 2) + ']', 'meta', td); return; }
        const v = get(r);
        el('td', typeof v === 'number' ? (Number.isInteger(v) ? String(v) : num(v)) : (v || '-'), typeof v === 'number' ? 'num' : '', tr);
      });
      if (r.oracle) el('span', 'oracle', 'flag', tr.cells[0]);
      if (r.judge_flag) { const f = el('span', '⚑ judge', 'flag', tr.cells[0]); f.title = r.judge_flag; }
    });
  });
}

// ---- matrix
let matrixRows = [], shown = 0, matrixRuns = [];
function cellsOf(i){ return matrixRuns.map(k => D.cells[k][i]); }
function judgesDisagree(c){
  const vals = Object.values(c.j || {}).map(j => j[0]).filter(v => v != null).map(v => v >= 0.5);
  return vals.length > 1 && vals.some(v => v !== vals[0]);
}
function keep(i, f){
  const q = D.questions[i];
  if (f.dataset && q.dataset !== f.dataset) return false;
  if (f.cat && !q.cats.includes(f.cat)) return false;
  if (f.search && !q.text.toLowerCase().includes(f.search)) return false;
  const cs = cellsOf(i).filter(Boolean), vs = cs.map(verdict);
  if (!cs.length) return false;
  if (f.disagree && !(vs.includes('ok') && vs.includes('bad'))) return false;
  if (f.allwrong && !vs.every(v => v === 'bad')) return false;
  if (f.judges && !cs.some(judgesDisagree)) return false;
  if (f.failed && !vs.includes('fail')) return false;
  if (f.degraded && !cs.some(c => c.f.includes('degraded') || c.f.includes('partial'))) return false;
  if (f.injection && !cs.some(c => c.f.includes('injection'))) return false;
  return true;
}
function renderMatrix(){
  const f = {dataset: $('f-dataset').value, cat: $('f-cat').value, search: $('f-search').value.toLowerCase().trim()};
  ['disagree', 'allwrong', 'judges', 'failed', 'degraded', 'injection'].forEach(k => { f[k] = $('f-' + k).checked; });
  matrixRuns = D.runs.map((r, k) => k).filter(k => !f.dataset || D.runs[k].dataset === f.dataset);
  const head = $('m-head'); head.innerHTML = '';
  el('th', 'question', null, head);
  matrixRuns.forEach(k => { const th = el('th', D.runs[k].label, null, head); th.title = D.runs[k].key; });
  matrixRows = D.questions.map((q, i) => i).filter(i => keep(i, f));
  $('m-count').textContent = matrixRows.length + ' of ' + D.questions.length + ' questions';
  $('m-body').innerHTML = ''; shown = 0; moreRows();
}
function moreRows(){
  const body = $('m-body'), end = Math.min(matrixRows.length, shown + CHUNK);
  const frag = document.createDocumentFragment();
  for (; shown < end; shown++) {
    const i = matrixRows[shown], q = D.questions[i], tr = el('tr', null, 'q', frag);
    tr.dataset.q = q.id;
    const td = el('td', q.text, 'qt', tr); td.title = q.text;
    cellsOf(i).forEach((c, k) => {
      const v = verdict(c), cellTd = el('td', MARK[v], 'v v-' + v, tr);
      cellTd.dataset.run = D.runs[matrixRuns[k]].key;
      if (c) cellTd.title = (c.p ?? c.e ?? '-') + (c.v[D.metric] != null ? '\n' + D.metric + ' ' + num(c.v[D.metric], 2) : '');
    });
    tr.onclick = () => { location.hash = link('q', {q: q.id}); };
  }
  body.append(frag);
  $('m-more').hidden = shown >= matrixRows.length;
}

// ---- question, side by side
function runOptions(sel, runs, chosen, blank){
  sel.innerHTML = '';
  if (blank) el('option', blank, null, sel).value = '';
  runs.forEach(k => { const o = el('option', D.runs[k].label + ' · ' + D.runs[k].key, null, sel); o.value = D.runs[k].key; });
  sel.value = chosen && runs.includes(byKey[chosen]) ? chosen : (blank ? '' : (runs[0] != null ? D.runs[runs[0]].key : ''));
}
function renderQuestion(p){
  const i = byQid[p.q], box = $('q-out'); box.innerHTML = '';
  if (i == null) { el('p', 'No question with id ' + p.q, 'flag', box); return; }
  const q = D.questions[i];
  const answered = D.runs.map((r, k) => k).filter(k => D.cells[k][i]);
  runOptions($('q-a'), answered, p.a, 'every system'); runOptions($('q-b'), answered, p.b, 'every system');
  $('q-a').onchange = $('q-b').onchange = () => { location.hash = link('q', {q: q.id, a: $('q-a').value, b: $('q-b').value}); };
  const head = el('div', null, 'qhead', box);
  el('h4', q.text, null, head);
  el('div', 'id ' + q.id + ' · ' + q.dataset + ' · episode ' + q.episode + (q.date ? ' · asked ' + q.date : ''), 'meta', head);
  const refs = el('div', 'Reference: ', null, head); el('span', q.refs.join(' / '), 'ref', refs); refs.id = 'q-ref';
  if (q.options) q.options.forEach((o, k) => el('div', String.fromCharCode(65 + k) + ') ' + o + (k === q.gold ? '  ← gold' : ''), k === q.gold ? 'ref' : '', head));
  if (q.cats.length) el('div', 'Categories: ' + q.cats.join(', '), 'meta', head);
  if (q.evidence.length) el('div', 'Gold evidence: ' + q.evidence.join(', '), 'meta', head);
  const picked = [p.a, p.b].filter(k => k && byKey[k] != null && D.cells[byKey[k]][i]).map(k => byKey[k]);
  const cols = el('div', null, 'cols', box);
  (picked.length ? picked : answered).forEach(k => column(cols, k, q, D.cells[k][i]));
}
function column(parent, k, q, c){
  const r = D.runs[k], col = el('div', null, 'col', parent); col.dataset.run = r.key;
  const h = el('h4', r.label + ' ', null, col); el('span', MARK[verdict(c)], 'v-' + verdict(c), h);
  el('div', r.dataset + ' · ' + r.llm + ' · ' + r.embedder + ' · ' + r.key, 'meta', col);
  const view = r.views[q.episode];
  if (view) { const a = el('a', 'memory view of this episode', 'view', el('div', null, 'meta', col)); a.href = safeHref(view); }
  el('pre', c.p ?? '(no answer)', 'answer', col);
  if (c.s !== 'scored') el('div', c.s + (c.e ? ': ' + c.e : ''), 'flag', col);
  c.f.forEach(f => el('span', f, 'flag', col));
  if (c.by) el('div', 'answered by: ' + c.by, 'meta', col);
  const jt = el('table', null, 'judges', col);
  Object.entries(c.j).forEach(([m, [v, st, reply]]) => {
    const tr = el('tr', null, null, jt); el('td', m, null, tr); el('td', num(v, 2), 'num', tr);
    el('td', st || '', 'meta', tr); el('td', reply || '', null, tr);
  });
  el('div', Object.entries(c.v).map(([m, v]) => m + ' ' + num(v, 3)).join(' · '), 'meta', col);
  el('div', 'context tokens ' + (c.t ?? '-') + ' · per question, run average: ' +
    Object.entries(r.stages).map(([st, [tok, s]]) => st + ' ' + num(tok, 0) + ' tok ' + num(s, 2) + ' s').join(', '), 'meta stages', col);
  const gu = new Set(c.gu);
  el('b', 'Retrieved (' + c.r.length + ')', null, col);
  c.r.forEach(([ti, score, level, node, units, nUnits, gold], n) => {
    const it = el('div', null, 'item' + (gold ? ' gold' : ''), col);
    const line = el('div', '#' + (n + 1) + ' score ' + num(score) + ' · level ' + (level ?? '-') + ' · node ' + (node ?? '-') + ' ', 'meta', it);
    if (gold) el('span', 'gold evidence', 'badge', line);
    const u = el('div', 'units: ', 'meta', it);
    units.forEach((id, m) => { el('span', D.units[id], gu.has(id) ? 'gold-unit' : '', u); if (m < units.length - 1) u.append(', '); });
    if (nUnits > units.length) u.append(' … (' + nUnits + ' in all)');
    el('pre', D.texts[ti], null, it);
  });
  if (c.pr != null) {
    const d = el('details', null, null, col); el('summary', 'prompt', null, d);
    d.ontoggle = () => { if (d.open && d.children.length < 2) el('pre', c.pr.map(t => D.texts[t]).join(''), null, d); };
  }
}

// ---- head-to-head and run diff
function pairResult(i, j){
  if (i < j) return D.h2h[i + ',' + j];
  const r = D.h2h[j + ',' + i];
  if (!r) return r;
  const flip = t => ({...t, win: t.loss, loss: t.win});
  return {...flip(r), categories: Object.fromEntries(Object.entries(r.categories).map(([c, t]) => [c, flip(t)])), differ: r.differ};
}
function pickTwo(p, aSel, bSel, bRuns){
  const all = D.runs.map((r, k) => k);
  runOptions($(aSel), all, p.a);
  const a = byKey[$(aSel).value];
  const bs = bRuns(a);
  runOptions($(bSel), bs, p.b && p.b !== $(aSel).value ? p.b : null);
  if (!p.b && bs.length) $(bSel).value = D.runs[bs[0]].key;
  return [a, byKey[$(bSel).value]];
}
function tallyRow(t, name, name2){
  const tr = el('tr'); el('td', name, null, tr);
  [t.n, t.win, t.tie, t.loss].forEach(x => el('td', String(x), 'num', tr));
  el('td', t.p == null ? '-' : (+t.p).toPrecision(3), 'num', tr); el('td', t.test || '-', 'meta', tr);
  return tr;
}
function questionList(parent, ids, a, b){
  const ul = el('ul', null, 'qlist', parent);
  ids.forEach(i => {
    const q = D.questions[i], li = el('li', null, null, ul);
    const x = el('a', q.text, null, li); x.href = link('q', {q: q.id, a: D.runs[a].key, b: D.runs[b].key});
    li.append(' ');
    el('span', MARK[verdict(D.cells[a][i])], 'v-' + verdict(D.cells[a][i]), li);
    el('span', MARK[verdict(D.cells[b][i])], 'v-' + verdict(D.cells[b][i]), li);
  });
}
function renderH2H(p){
  const [a, b] = pickTwo(p, 'h-a', 'h-b', a => D.runs.map((r, k) => k).filter(k => k !== a && D.runs[k].dataset === D.runs[a].dataset));
  $('h-a').onchange = $('h-b').onchange = () => { location.hash = link('h2h', {a: $('h-a').value, b: $('h-b').value}); };
  const out = $('h-out'); out.innerHTML = '';
  const r = b == null ? null : pairResult(a, b);
  if (!r) { el('p', 'These two runs share no question scored on ' + D.metric + '.', null, out); return; }
  el('p', D.runs[a].label + ' (A) against ' + D.runs[b].label + ' (B) on ' + D.metric + ': A wins ' + r.win + ', ties ' + r.tie +
    ', loses ' + r.loss + ' of ' + r.n + ' questions; paired test (' + r.test + ') p = ' + (+r.p).toPrecision(3), null, out).id = 'h-summary';
  const t = el('table', null, null, out), hr = el('tr', null, null, t);
  ['', 'n', 'A wins', 'ties', 'B wins', 'p', 'test'].forEach(h => el('th', h, null, hr));
  t.append(tallyRow(r, 'all questions'));
  Object.entries(r.categories).forEach(([c, tl]) => t.append(tallyRow(tl, c)));
  el('b', 'Questions where they differ (' + r.differ.length + ')', null, out);
  questionList(out, r.differ, a, b);
}
function renderDiff(p){
  const [a, b] = pickTwo(p, 'd-a', 'd-b', a => D.runs.map((r, k) => k).filter(k => k !== a &&
    D.runs[k].memory === D.runs[a].memory && D.runs[k].dataset === D.runs[a].dataset));
  $('d-a').onchange = $('d-b').onchange = () => { location.hash = link('diff', {a: $('d-a').value, b: $('d-b').value}); };
  const out = $('d-out'); out.innerHTML = '';
  if (b == null) { el('p', 'No other run of ' + D.runs[a].memory + ' on ' + D.runs[a].dataset + ' to compare with.', null, out); return; }
  const fixed = [], broken = [];
  D.questions.forEach((q, i) => {
    const x = verdict(D.cells[a][i]), y = verdict(D.cells[b][i]);
    if (x === 'ok' && y !== 'ok' && y !== 'none') broken.push(i);
    if (x !== 'ok' && x !== 'none' && y === 'ok') fixed.push(i);
  });
  el('p', fixed.length + ' became right, ' + broken.length + ' became wrong (before ' + D.runs[a].key + ', after ' + D.runs[b].key + ')', null, out).id = 'd-summary';
  el('b', 'Now right', null, out); questionList(out, fixed, a, b);
  el('b', 'Now wrong', null, out); questionList(out, broken, a, b);
}

// ---- set-up
$('title').textContent = D.title;
document.querySelectorAll('nav button').forEach(b => { b.onclick = () => { location.hash = link(b.dataset.view, {}); }; });
[...new Set(D.questions.map(q => q.dataset))].forEach(d => { el('option', d, null, $('f-dataset')).value = d; });
[...new Set(D.questions.flatMap(q => q.cats))].sort().forEach(c => { el('option', c, null, $('f-cat')).value = c; });
['f-dataset', 'f-cat', 'f-disagree', 'f-allwrong', 'f-judges', 'f-failed', 'f-degraded', 'f-injection'].forEach(id => { $(id).onchange = renderMatrix; });
$('f-search').oninput = renderMatrix;
$('m-more').onclick = moreRows;
new IntersectionObserver(es => { if (es.some(e => e.isIntersecting) && !$('v-matrix').hidden) moreRows(); }).observe($('m-more'));
window.onhashchange = route;
route();
document.body.dataset.readyMs = String(performance.now());  // read by eval/bench/explorer.py
document.body.dataset.ready = '1';
