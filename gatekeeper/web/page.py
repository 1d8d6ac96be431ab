"""The page ``/`` of ``gatekeeper serve``: one row per job, its strip of periods fetched when shown.

The HTML holds each job's summary (counts per state, contiguous-through, lag, freshness) and
no cell: its size grows with the jobs, not with the periods of the window. A row's strip is
asked of ``/api/jobs?cells=1&job=...`` when the row scrolls into view, and the rows shown are
refreshed every ``POLL_MS``; the filters (job name, state) work on the summaries, so a job
whose strip was never loaded is found too. Daily and hourly jobs each get their own axis: a
cell's column is its period's position from the earliest start of the jobs on that axis, so
the same period lines up down the page. Every cell carries ``data-job``, ``data-period`` and
``data-state`` and takes its colour from the report's palette (``report/assets.py``); a
stale period's cell has the class ``stale`` (``stale_periods`` of its job's strip).
Server-side text is escaped (``html.escape``); the script builds every element it adds with
``textContent`` and ``setAttribute``, never ``innerHTML``; nothing is fetched but this
server's JSON API (inline CSS and JS).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from html import escape

from gatekeeper.core.display import printable
from gatekeeper.core.periods import PERIODS, Period
from gatekeeper.core.periods.intervals import duration_text
from gatekeeper.report.assets import PALETTE, state_rules
from gatekeeper.web.views import JobView

WINDOWS = ("2d", "7d", "30d", "90d", "365d")
POLL_MS = 2000
#: the most jobs one request for strips names (``/api/jobs?cells=1&job=...``)
STRIPS_PER_REQUEST = 100

CSS = """
*{box-sizing:border-box}
body{margin:0;padding:12px 16px 40px;font:13px/1.4 system-ui,sans-serif;color:#1f2328}
h1{font-size:18px;margin:0}h2{font-size:14px;margin:14px 0 4px}
.meta,.counts,.facts{color:#57606a}
form{display:flex;gap:12px;align-items:center;margin:8px 0}
.legend{display:flex;flex-wrap:wrap;gap:4px 12px;list-style:none;padding:0;margin:6px 0}
.legend li{display:flex;gap:4px;align-items:center}
.sw{display:inline-block;width:10px;height:10px;border-radius:2px}
.axis{overflow-x:auto}
.row{display:grid;grid-template-columns:260px auto;gap:2px 10px;padding:4px 0;
border-top:1px solid #eaeef2}
.row[hidden]{display:none}
.name{font-weight:600;overflow-wrap:anywhere}
.cells{display:flex;gap:1px;align-items:center;min-height:14px}
.cells i{display:block;flex:none;width:7px;height:14px;border-radius:1px;cursor:pointer}
.cells i:hover{outline:2px solid #57606a}
.cells i.ct{outline:2px solid #1f2328;outline-offset:-1px}
.cells i.stale{background-image:linear-gradient(135deg,#bf8700 40%,transparent 41%)}
.pad{flex:none}
#panel{position:fixed;top:0;right:0;bottom:0;width:min(560px,100%);overflow:auto;
background:#f6f8fa;border-left:1px solid #d0d7de;padding:12px 16px;font-size:12px}
#panel[hidden]{display:none}
#panel table{border-collapse:collapse;width:100%}
#panel td,#panel th{border-bottom:1px solid #d0d7de;padding:2px 4px;text-align:left;
vertical-align:top;overflow-wrap:normal;word-break:normal}
#panel td span,#panel th{white-space:nowrap}
#panel .cause{font-weight:600}#panel .stale{font-weight:600;color:#9a6700}
.ticks{display:grid;grid-template-columns:260px auto;gap:0 10px}
.scale{position:relative;height:26px;font-size:10px;color:#57606a;white-space:nowrap}
.scale span{position:absolute;border-left:1px solid #afb8c1;padding-left:2px;line-height:12px}
.scale .major{top:0;font-weight:600}.scale .minor{top:13px}
#panel a{cursor:pointer;color:#0969da}
#live{margin-left:auto}
"""

SCRIPT = """
(function(){
var body=document.body,panel=document.getElementById('panel');
var win=body.getAttribute('data-window'),filter=document.getElementById('filter'),
 state=document.getElementById('state'),seen=new Set(),queued=new Set(),BATCH=BATCHSIZE;
function el(tag,text,cls){var e=document.createElement(tag);
 if(text!==undefined&&text!==null){e.textContent=String(text);}if(cls){e.className=cls;}return e;}
function api(path){return fetch(path,{credentials:'same-origin'}).then(function(r){
 if(!r.ok){throw new Error('HTTP '+r.status);}return r.json();});}
function enc(s){return encodeURIComponent(s);}
function rows(){var m={};document.querySelectorAll('.row').forEach(function(r){
 m[r.getAttribute('data-job')]=r;});return m;}
function applyFilter(){var f=filter.value.toLowerCase(),s=state.value;
 document.querySelectorAll('.row').forEach(function(r){
  r.hidden=(!!f&&r.getAttribute('data-job').toLowerCase().indexOf(f)<0)||
   (!!s&&(' '+r.getAttribute('data-states')+' ').indexOf(' '+s+' ')<0);});}
try{filter.value=sessionStorage.getItem('gk-filter')||'';
 state.value=sessionStorage.getItem('gk-state')||'';}catch(e){}
state.addEventListener('change',function(){applyFilter();
 try{sessionStorage.setItem('gk-state',state.value);}catch(e){}});
filter.addEventListener('input',function(){applyFilter();
 try{sessionStorage.setItem('gk-filter',filter.value);}catch(e){}});
document.querySelector('select[name=window]').addEventListener('change',function(e){
 e.target.form.submit();});
function words(td,text){String(text).split(' ').forEach(function(w,i){
 if(i){td.appendChild(document.createTextNode(' '));}td.appendChild(el('span',w));});return td;}
function table(head,lines){var t=el('table'),h=el('tr');
 head.forEach(function(x){h.appendChild(el('th',x));});t.appendChild(h);
 lines.forEach(function(line){var tr=el('tr');line.forEach(function(x){
  if(x instanceof Node){var td=el('td');td.appendChild(x);tr.appendChild(td);}
  else{tr.appendChild(words(el('td'),x===null||x===undefined?'':x));}});
  t.appendChild(tr);});return t;}
function anchor(job,period){return '#'+new URLSearchParams({job:job,period:period}).toString();}
function link(job,period){var a=el('a',job+' '+period);a.setAttribute('data-job',job);
 a.setAttribute('data-period',period);a.setAttribute('href',anchor(job,period));return a;}
function ago(s){s=Math.max(0,Math.round(s));var d=Math.floor(s/86400),h=Math.floor(s%86400/3600),
 m=Math.floor(s%3600/60);return d?d+'d '+h+'h':h?h+'h '+m+'m':m+'m '+(s%60)+'s';}
function show(job,period){
 api('/api/jobs/'+enc(job)+'/periods/'+enc(period)).then(function(d){
  panel.replaceChildren();panel.hidden=false;panel.setAttribute('data-job',d.job);
  panel.setAttribute('data-period',d.period);
  var close=el('button','close');close.addEventListener('click',function(){panel.hidden=true;
   history.replaceState(null,'',location.pathname+location.search);});
  panel.appendChild(close);panel.appendChild(el('h2',d.job+' '+d.period));
  if(d.state){panel.appendChild(el('p','state: '+d.state,'state'));}
  if(d.cause){panel.appendChild(el('p',d.cause,'cause'));}
  if(d.stale_reason){panel.appendChild(el('p',d.stale_reason,'stale'));}
  panel.appendChild(el('h3','attempts ('+d.attempts.length+')'));
  panel.appendChild(table(['#','state','run ID','start','finish','duration','lease','error',
   'reason'],
   d.attempts.map(function(a){return [a.attempt,a.state,a.run_id,a.started_at,
    a.finished_at||'',Math.round(a.duration_seconds)+' s',a.lease_expires_at||'',
    a.error||'',a.reason||''];})));
  panel.appendChild(el('h3','publications ('+d.publications.length+')'));
  d.publications.forEach(function(p){
   panel.appendChild(el('h4','revision '+p.revision+' at '+p.published_at));
   panel.appendChild(table(['reason','fingerprint','producer'],
    [[p.reason||'',p.fingerprint,p.producer.run_id?p.producer.run_id+' (attempt '+
     p.producer.attempt+')':'not recorded']]));
   panel.appendChild(table(['upstream','run ID','attempt'],p.evidence.map(function(e){
    return [link(e.job,e.period),e.run_id,e.attempt];})));});
 }).catch(function(err){panel.hidden=false;panel.replaceChildren(
  el('p','cannot load '+job+' '+period+': '+err.message));});}
document.addEventListener('click',function(e){
 var c=e.target.closest('[data-period][data-job]');
 if(c&&!c.classList.contains('row')){e.preventDefault();
  var want=anchor(c.getAttribute('data-job'),c.getAttribute('data-period'));
  if(location.hash===want){fromHash();}else{location.hash=want;}}});
function fromHash(){var h=new URLSearchParams(location.hash.slice(1));
 if(h.get('job')&&h.get('period')){show(h.get('job'),h.get('period'));}}
window.addEventListener('hashchange',fromHash);fromHash();
function strip(r,j){var box=r.querySelector('.cells'),pad=box.querySelector('.pad'),
 stale=new Set(j.stale_periods||[]);
 var cells=box.querySelectorAll('i');
 if(cells.length!==j.cells.length||(cells.length&&cells[0].getAttribute('data-period')!==
  j.cells[0][0])){box.replaceChildren();if(pad){box.appendChild(pad);}
  j.cells.forEach(function(c){var i=el('i');i.setAttribute('data-job',j.job);
   i.setAttribute('data-period',c[0]);box.appendChild(i);});
  cells=box.querySelectorAll('i');}
 j.cells.forEach(function(c,n){var i=cells[n];if(i.getAttribute('data-state')!==c[1]){
  i.setAttribute('data-state',c[1]);}
  i.setAttribute('title',j.job+' '+c[0]+': '+c[1].split('_').join(' ')+
   (stale.has(c[0])?', stale':''));
  i.classList.toggle('ct',c[0]===j.contiguous_through);
  i.classList.toggle('stale',stale.has(c[0]));});
 r.setAttribute('data-loaded','1');}
function strips(names){var found=rows(),out=Promise.resolve();
 for(var n=0;n<names.length;n+=BATCH){(function(part){out=out.then(function(){
  return api('/api/jobs?cells=1&window='+enc(win)+part.map(function(j){
   return '&job='+enc(j);}).join(''));}).then(function(d){d.jobs.forEach(function(j){
   if(found[j.job]){strip(found[j.job],j);}});});})(names.slice(n,n+BATCH));}
 return out;}
function flush(){var names=Array.from(queued);queued.clear();
 strips(names).then(function(){body.setAttribute('data-strips',String(
  document.querySelectorAll('.row[data-loaded]').length));}).catch(function(err){
  document.getElementById('live').textContent='cannot load the strips: '+err.message;});}
var watch=new IntersectionObserver(function(entries){var was=queued.size;
 entries.forEach(function(e){var job=e.target.getAttribute('data-job');
  if(e.isIntersecting){seen.add(job);if(!e.target.hasAttribute('data-loaded')){
   queued.add(job);}}else{seen.delete(job);}});
 if(queued.size&&!was){setTimeout(flush,30);}},{rootMargin:'400px 0px'});
document.querySelectorAll('.row').forEach(function(r){watch.observe(r);});
function update(data){
 var found=rows(),changed=false;
 data.jobs.forEach(function(j){var r=found[j.job];
  if(!r){changed=true;return;}
  var n=Object.keys(j.counts).reduce(function(t,s){return t+j.counts[s];},0);
  if(r.getAttribute('data-start')!==j.start||r.getAttribute('data-n')!==String(n)){
   changed=true;return;}
  r.setAttribute('data-states',Object.keys(j.counts).filter(function(s){
   return j.counts[s];}).join(' '));
  r.querySelector('.counts').textContent=Object.keys(j.counts).filter(function(s){
   return j.counts[s];}).map(function(s){return j.counts[s]+' '+s;}).join(', ');
  r.querySelector('.through').textContent=j.contiguous_through||'nothing';
  r.querySelector('.lag').textContent=ago(j.lag_seconds);
  r.querySelector('.running').textContent=j.running_attempts+' running, '+
   j.expired_leases+' expired';
  var f=r.querySelector('.freshness');if(f&&j.freshness){
   f.setAttribute('data-freshness',j.freshness.met?'met':'breached');
   f.textContent=j.freshness.summary;}});
 if(data.jobs.length!==Object.keys(found).length){changed=true;}
 if(changed){location.reload();return Promise.reject(new Error('reloading'));}
 applyFilter();
 return strips(Array.from(seen).filter(function(job){return found[job]&&
  found[job].hasAttribute('data-loaded');}));}
function poll(){api('/api/jobs?window='+enc(win)).then(update).then(function(){
 body.setAttribute('data-updated',new Date().toISOString());
 document.getElementById('live').textContent='live, updated '+
  new Date().toLocaleTimeString();}).catch(function(err){
 document.getElementById('live').textContent='not updating: '+err.message;}).then(function(){
 setTimeout(poll,POLL);});}
applyFilter();setTimeout(poll,POLL);
})();
""".replace("POLL", str(POLL_MS)).replace("BATCHSIZE", str(STRIPS_PER_REQUEST))


def render(
    views: Sequence[JobView], skipped: Sequence[dict[str, str]], window: dt.timedelta, ledger: str
) -> str:
    """The page: header, window switch and filter, legend, one axis per period kind."""
    chosen = duration_text(window)
    options = "".join(
        f'<option value="{w}"{" selected" if w == chosen else ""}>{w}</option>'
        for w in dict.fromkeys((*WINDOWS, chosen))
    )
    parts = [
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        '<link rel="icon" href="data:,">',
        f"<title>gatekeeper</title><style>{CSS}{state_rules()}</style></head>",
        f'<body data-window="{_text(chosen)}">',
        "<h1>gatekeeper</h1>",
        f'<p class="meta">ledger {_text(ledger)} &middot; {len(views)} jobs &middot; '
        f"window {_text(chosen)}</p>",
        '<form method="get" action="/"><label>window <select name="window">'
        f"{options}</select></label>"
        "<noscript><button>show</button></noscript>"
        '<label>filter <input id="filter" type="search" placeholder="job name"></label>'
        f'<label>state <select id="state">{_state_options()}</select></label>'
        '<span id="live" class="meta">live</span></form>',
        _legend(),
    ]
    for kind in PERIODS:  # a job on a business calendar shares its kind's axis
        mine = [v for v in views if v.plan.period.base is kind]
        if mine:
            parts.append(_axis(kind, mine))
    if skipped:
        items = "".join(f"<li>{_text(s['job'])}: {_text(s['error'])}</li>" for s in skipped)
        parts.append(f"<h2>not shown</h2><ul>{items}</ul>")
    parts += ['<aside id="panel" hidden></aside>', f"<script>{SCRIPT}</script></body></html>\n"]
    return "".join(parts)


def _state_options() -> str:
    """The state filter's options: any state, then each state of the palette."""
    return '<option value="">any</option>' + "".join(
        f'<option value="{s.value}">{s.value.replace("_", " ")}</option>' for s in PALETTE
    )


def _legend() -> str:
    items = "".join(
        f'<li title="{escape(meaning)}"><span class="sw" data-state="{s.value}"></span>'
        f"{s.value.replace('_', ' ')}</li>"
        for s, (_, meaning) in PALETTE.items()
    )
    return f'<ul class="legend">{items}</ul>'


def _axis(period: Period, views: Sequence[JobView]) -> str:
    """One axis: the rows of the jobs of one period kind, aligned on the earliest start (a
    job on a business calendar shows its other periods as ``non_business`` cells, so the same
    period lines up down the page whatever the jobs' calendars)."""
    kind = period.name
    first = min(period.ordinal(v.plan.start) for v in views)
    ends = [period.ordinal(v.last_period) for v in views if v.last_period is not None]
    span = f"{period.key(period.at(first))} .. {period.key(period.at(max(ends, default=first)))}"
    note = " (hours in UTC)" if kind == "hourly" else ""
    rows = "".join(_row(v, period.ordinal(v.plan.start) - first) for v in views)
    ticks = _ticks(period, first, max(ends, default=first))
    return (
        f'<section class="axis" data-kind="{kind}"><h2>{kind} <span class="meta">'
        f"{_text(span)}{note}</span></h2>{ticks}{rows}</section>"
    )


#: the pixels of one column of the grid (a cell and its gap: ``.cells i``)
COLUMN = 8
_MONTHS = "Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split()


def ticks(period: Period, first: int, last: int) -> list[tuple[int, str, str]]:
    """The axis labels of columns ``first`` .. ``last`` (ordinals of ``period``): ``(column,
    "major" or "minor", text)``. Daily: the month (``Nov 2026``) where one starts, days 1, 8,
    15 and 22; hourly (UTC): the day (``Dec 3``) at midnight, hours 00, 06, 12 and 18; other
    kinds: every sixth period's key. The first column carries a major label too (a daily
    one unless a month starts within ten columns)."""
    found = []
    for n in range(first, last + 1):
        at, column = period.at(n), n - first
        if period.name == "daily":
            if at.day == 1 or (n == first and at.day < 22):  # no label a few columns long
                found.append((column, "major", f"{_MONTHS[at.month - 1]} {at.year}"))
            if at.day in (1, 8, 15, 22):
                found.append((column, "minor", str(at.day)))
        elif period.name == "hourly" and isinstance(at, dt.datetime):
            if at.hour == 0 or n == first:
                found.append((column, "major", f"{_MONTHS[at.month - 1]} {at.day}"))
            if at.hour % 6 == 0:
                found.append((column, "minor", f"{at.hour:02d}"))
        elif (n - first) % 6 == 0:
            found.append((column, "major", period.key(at)))
    return found


def _ticks(period: Period, first: int, last: int) -> str:
    spans = "".join(
        f'<span class="{size}" style="left:{column * COLUMN}px">{_text(text)}</span>'
        for column, size, text in ticks(period, first, last)
    )
    return (
        f'<div class="ticks" aria-hidden="true"><div></div><div class="scale">{spans}</div></div>'
    )


def _row(view: JobView, offset: int) -> str:
    """A job's summary, and an empty strip the script fills when the row is shown: its
    ``data-start`` and ``data-n`` (first period, number of periods) tell the script when the
    row no longer fits the page (a reload), ``data-states`` what the state filter matches."""
    plan = view.plan
    through = None if plan.contiguous_through is None else plan.key(plan.contiguous_through)
    job = _text(view.job)
    found = view.counts
    shown = ", ".join(f"{n} {s.value}" for s, n in found.items() if n)
    states = " ".join(s.value for s, n in found.items() if n)
    pad = f'<span class="pad" style="width:{offset * COLUMN}px"></span>' if offset else ""
    return (
        f'<div class="row" data-job="{job}" data-start="{_text(plan.key(plan.start))}" '
        f'data-n="{view.cell_count}" data-states="{states}"><div><div class="name">{job}</div>'
        f'<div class="counts">{_text(shown)}</div><div class="facts">through '
        f'<b class="through">{_text(through or "nothing")}</b> &middot; lag '
        f'<span class="lag">{ago(view.lag_seconds)}</span> &middot; '
        f'<span class="running">{view.running} running, {view.expired} expired</span>'
        f'{_freshness(view)}</div></div><div class="cells">{pad}</div></div>'
    )


def _freshness(view: JobView) -> str:
    """`` · freshness 6h: met`` (or breached: how many, the oldest), for a job with one."""
    if view.freshness is None:
        return ""
    met = "met" if view.freshness.met else "breached"
    return (
        f' &middot; <span class="freshness" data-freshness="{met}">'
        f"{_text(view.freshness.describe())}</span>"
    )


def ago(seconds: float) -> str:
    """``4d 13h``, ``2h 5m``, ``3m 20s``: a lag as the page shows it (its script too)."""
    s = max(0, round(seconds))
    d, h, m = s // 86400, s % 86400 // 3600, s % 3600 // 60
    return f"{d}d {h}h" if d else f"{h}h {m}m" if h else f"{m}m {s % 60}s"


def _text(value: object) -> str:
    """Escaped for HTML text and attribute values; control and bidi characters shown."""
    return escape(printable(value), quote=True)
