"""The coverage report's palette, stylesheet and script (inlined by ``html.py``; pure data).

The palette is defined once here: the cells, the legend swatches and the count chips all take
their colour from the CSS rules built from it. Colours follow the Okabe-Ito idea (hue and
lightness differ, so states stay apart for most colour-blind readers); failed is a plain red.
"""

from __future__ import annotations

from gatekeeper.report.states import PeriodState

#: state -> (fill colour, what the state means), in the order the legend and the counts show.
PALETTE: dict[PeriodState, tuple[str, str]] = {
    PeriodState.SUCCEEDED: ("#1b9e77", "latest attempt succeeded"),
    PeriodState.FAILED: ("#d7191c", "latest attempt failed"),
    PeriodState.RUNNING: ("#0072b2", "running with a live lease"),
    PeriodState.ABANDONED: ("#8e44ad", "abandoned, or running with an expired lease"),
    PeriodState.BLOCKED: ("#b35806", "due, no attempt: an upstream failed, is missing or held"),
    PeriodState.MISSING: ("#f0a202", "due, no attempt recorded"),
    PeriodState.SKIPPED: ("#9aa0a6", "due, left out by the catch-up policy"),
    PeriodState.NOT_DUE: ("#e3e6ea", "not due yet (interval end + lateness is after now)"),
    PeriodState.NON_BUSINESS: ("#c4c8ce", "not a business day of the job's calendar"),
}

#: States an on-call engineer acts on, listed under each job: causes before their effects (a
#: failure before the periods it blocks), newest first within a state.
ATTENTION = (
    PeriodState.FAILED,
    PeriodState.ABANDONED,
    PeriodState.RUNNING,
    PeriodState.BLOCKED,
    PeriodState.MISSING,
)

#: Cell sizes (small; big for a short window) and gap in CSS pixels: fixed, so the layout
#: is predictable.
CELL, BIG, GAP = 12, 20, 2


def state_rules() -> str:
    """One CSS rule per state (fill), plus the legend-focus rules: the palette's only use."""
    fills = "".join(f'[data-state="{s.value}"]{{background:{c}}}' for s, (c, _) in PALETTE.items())
    focus = "".join(
        f'body[data-focus="{s.value}"] .cells [data-state]:not([data-state="{s.value}"])'
        "{opacity:.18}"
        for s in PALETTE
    )
    return fills + focus


CSS = (
    """
*{box-sizing:border-box}
body{margin:0;padding:16px 20px 80px;font:13px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,
sans-serif;color:#1f2328;background:#fff}
h1{font-size:18px;margin:0 0 2px}h2{font-size:15px;margin:0}
.meta{color:#57606a;margin:0 0 10px}
.legend{display:flex;flex-wrap:wrap;gap:6px 14px;margin:8px 0 14px;padding:0;list-style:none}
.legend li{display:flex;align-items:center;gap:5px}
.legend button{all:unset;cursor:pointer;display:flex;align-items:center;gap:5px;padding:2px 4px;
border-radius:4px}
.legend button:hover,.legend button[aria-pressed="true"]{background:#eef1f4}
.sw{display:inline-block;width:CELLpx;height:CELLpx;border-radius:2px}
.sw.ct{background:#fff;outline:2px solid #1f2328;outline-offset:-2px}
table.overview{border-collapse:collapse;margin:0 0 18px}
.overview th,.overview td{padding:3px 10px;border-bottom:1px solid #e5e7eb;text-align:right}
.overview th:first-child,.overview td:first-child{text-align:left}
.overview td.zero{color:#b0b7bf}.overview td.bad{color:#d7191c;font-weight:600}
section.job{--c:CELLpx;border-top:1px solid #d0d7de;padding:12px 0 6px;min-width:0}
section.big{--c:BIGpx}
body.compact main{display:grid;grid-template-columns:repeat(auto-fill,minmax(360px,1fr));
gap:0 32px}
.counts{display:flex;flex-wrap:wrap;gap:4px 12px;margin:4px 0;color:#57606a}
.counts span{display:flex;align-items:center;gap:4px}.counts .zero{opacity:.45}
.facts{margin:2px 0 6px;color:#57606a}.facts b{color:#1f2328}
.attention{margin:4px 0 8px;padding-left:18px}.attention li{margin:1px 0}
.attention code{font-size:12px}
.cells{display:flex;flex-wrap:wrap;gap:10px 14px;align-items:flex-start}
.year{display:flex;flex-wrap:wrap;gap:8px 12px;width:100%;align-items:flex-start}
.yl{width:38px;font-weight:600;color:#57606a;padding-top:14px}
.m h3{font-size:11px;font-weight:600;color:#57606a;margin:0 0 2px}
.g{display:grid;grid-template-columns:repeat(7,var(--c));gap:GAPpx}
.wd{font-size:9px;color:#8c959f;text-align:center;line-height:12px}
.hg{display:grid;grid-template-columns:22px repeat(24,var(--c));gap:GAPpx;font-size:9px;
color:#8c959f;line-height:var(--c)}
.cells i{display:block;width:var(--c);height:var(--c);border-radius:2px;cursor:pointer}
.cells i.ct,.cells .run.ct{outline:2px solid #1f2328;outline-offset:1px}
.cells i:hover,.cells .run:hover{outline:2px solid #57606a;outline-offset:0}
.cells i.stale,.sw.stale{background-image:linear-gradient(135deg,#bf8700 40%,transparent 41%)}
.cells .run{width:100%;padding:2px 8px;border-radius:3px;color:#fff;font-size:12px;
cursor:pointer}
#detail{position:fixed;left:0;right:0;bottom:0;margin:0;padding:8px 20px;background:#f6f8fa;
border-top:1px solid #d0d7de;white-space:pre-wrap;font:12px/1.4 ui-monospace,monospace;
min-height:34px;color:#1f2328}
""".replace("CELL", str(CELL))
    .replace("BIG", str(BIG))
    .replace("GAP", str(GAP))
)

#: Runs after the cells exist: the click-to-pin details panel (a cell or a run's bar), the
#: legend focus, and a self-check that the periods per state (a cell one, a run's bar its
#: ``data-count`` and ``data-non-business``) match the counts embedded in #gk-data (the result is
#: ``body[data-ready]``: ``ok`` or ``mismatch: ...``).
SCRIPT = """
(function(){
  var data=JSON.parse(document.getElementById('gk-data').textContent);
  var detail=document.getElementById('detail');
  document.addEventListener('click',function(e){
    var c=e.target.closest('.cells i, .cells .run');
    if(c){detail.textContent=c.getAttribute('data-job')+'  '+c.title;}
  });
  document.querySelectorAll('.legend button').forEach(function(b){
    b.addEventListener('click',function(){
      var s=b.getAttribute('data-state'),on=document.body.getAttribute('data-focus')===s;
      if(on){document.body.removeAttribute('data-focus');}
      else{document.body.setAttribute('data-focus',s);}
      document.querySelectorAll('.legend button').forEach(function(x){
        x.setAttribute('aria-pressed',String(!on&&x===b));});
    });
  });
  var problems=[];
  document.querySelectorAll('section.job').forEach(function(sec,i){
    var want=data.jobs[i].counts,got={};
    sec.querySelectorAll('.cells [data-state]').forEach(function(c){
      var s=c.getAttribute('data-state'),n=Number(c.getAttribute('data-count')||1),
        off=Number(c.getAttribute('data-non-business')||0);
      got[s]=(got[s]||0)+n;
      if(off){got.non_business=(got.non_business||0)+off;}});
    Object.keys(want).forEach(function(s){
      if((got[s]||0)!==want[s]){problems.push(data.jobs[i].job+' '+s);}});
  });
  document.body.setAttribute('data-cells',
    String(document.querySelectorAll('.cells i').length));
  document.body.setAttribute('data-ready',problems.length?'mismatch: '+problems.join(', '):'ok');
})();
"""
