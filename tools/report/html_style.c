/* SPDX-License-Identifier: Apache-2.0 */
/*
 * html_style.c - the HTML page's CSS and JavaScript (html_style.h): one self-contained
 * page, so no stylesheet, script library or font is fetched; the whole style is about
 * 3 KB and the script half a KB.
 */
#include "html_style.h"

const char html_style[] =
    ":root{--fg:#1f2328;--mut:#656d76;--bd:#d0d7de;--soft:#f6f8fa}"
    "*{box-sizing:border-box}"
    "body{margin:0;font:14px/1.45 system-ui,-apple-system,\"Segoe UI\",Roboto,\"Helvetica Neue\",Arial,sans-serif;"
    "color:var(--fg);background:#fff}"
    "header.top{position:sticky;top:0;z-index:5;background:#fff;border-bottom:1px solid var(--bd);padding:10px 24px;"
    "display:flex;gap:24px;align-items:baseline;flex-wrap:wrap}"
    "header.top h1{font-size:18px;margin:0}header.top nav a{margin-right:14px}"
    "main{max-width:1280px;margin:0 auto;padding:8px 24px 48px}"
    "h2{font-size:17px;margin:28px 0 10px;padding-bottom:4px;border-bottom:1px solid var(--bd)}"
    "h3{font-size:14px;margin:18px 0 6px}"
    "a{color:#0969da;text-decoration:none}a:hover{text-decoration:underline}"
    ".mut{color:var(--mut);font-weight:400}.warn{color:#9a6700}.bad{color:#cf222e}.ok{color:#1a7f37}"
    ".empty{color:var(--mut);font-style:italic}"
    ".tiles{display:flex;flex-wrap:wrap;gap:10px;margin:8px 0 14px}"
    ".tiles div{background:var(--soft);border:1px solid var(--bd);border-radius:6px;padding:8px 14px;"
    "min-width:110px;color:var(--mut);font-size:12px}"
    ".tiles b{display:block;font-size:22px;color:var(--fg);font-variant-numeric:tabular-nums}"
    ".tiles .warn b{color:#9a6700}.tiles .bad b{color:#cf222e}"
    ".cols{display:flex;flex-wrap:wrap;gap:32px;align-items:flex-start}"
    "table{border-collapse:collapse;font-variant-numeric:tabular-nums}"
    "th,td{padding:3px 10px;text-align:left;vertical-align:top}"
    "table.kv th{color:var(--mut);font-weight:500;white-space:nowrap}table.kv th.sub{color:var(--fg);font-weight:600}"
    /* every grid header may wrap and numbers do not (an evidence cell may), nor a link's host
       names: with a link's (op, size) groups opened its table was 1,348 px wide, past a 1,280
       or 1,400 px window (report_views:views.widths measures the page at 1,280-1,920 px) */
    "table.grid{margin:4px 0 8px}table.grid th{border-bottom:2px solid var(--bd);font-weight:600;vertical-align:bottom}"
    "table.grid td{border-bottom:1px solid #eaeef2}table.grid tr:hover td{background:var(--soft)}"
    "table.wrap th{max-width:150px}"
    "th.n,td.n{text-align:right}table.grid td.n{white-space:nowrap}table.grid td.ev{white-space:normal}.nw{white-space:nowrap}"
    ".charts{display:flex;flex-wrap:wrap;gap:14px;align-items:flex-start}"
    "figure{margin:0 0 12px;border:1px solid var(--bd);border-radius:6px;padding:8px 10px;background:#fff}"
    "figcaption{font-weight:600;font-size:13px;margin-bottom:4px}"
    ".sm{display:grid;grid-template-columns:repeat(auto-fill,minmax(362px,1fr));gap:12px}"
    ".legend{display:flex;flex-wrap:wrap;gap:14px;margin:4px 0 8px;font-size:13px}"
    ".legend i{display:inline-block;width:12px;height:12px;border-radius:2px;margin-right:5px;vertical-align:-1px}"
    "svg.chart{display:block;overflow:visible}"
    "svg text{font-size:11px;fill:#57606a}svg text.al{fill:#24292f;font-size:11.5px}"
    "svg .gr{stroke:#eaeef2}svg .ax{stroke:#8c959f}svg .tk{stroke:#8c959f}"
    "svg .band{fill-opacity:.16;stroke:none}svg .line{fill:none;stroke-width:2}"
    "svg .pt{stroke:#fff;stroke-width:1}svg .pt.ring{fill:none;stroke-width:2}svg.heat rect{stroke:#fff;stroke-width:.5}svg.big rect{stroke-width:1}"
    "svg.heat rect.lg{stroke:#c8ced6;stroke-width:1}svg text.rk{font-size:9.5px;fill:#24292f;pointer-events:none}"
    "svg rect.strag{stroke:#111;stroke-width:1.5}"
    "svg .chg{stroke:#cf222e;stroke-width:1.5;stroke-dasharray:4 3}svg .chgl{fill:#cf222e;font-size:10px}"
    "[data-tip]:hover{opacity:.8}"
    "details summary{cursor:pointer;color:var(--mut);margin:4px 0}"
    "#tip{position:fixed;pointer-events:none;background:#24292f;color:#fff;padding:5px 8px;border-radius:4px;"
    "font-size:12px;max-width:460px;display:none;z-index:20}"
    "footer{color:var(--mut);font-size:12px;margin-top:32px}";

/* Hover tooltips from data-tip; the last statement marks the page as rendered (the tests read it). */
const char html_script[] =
    "(function(){var t=document.getElementById('tip');"
    "document.addEventListener('mousemove',function(e){"
    "var el=e.target&&e.target.closest?e.target.closest('[data-tip]'):null;"
    "if(!el){t.style.display='none';return;}"
    "t.textContent=el.getAttribute('data-tip');t.style.display='block';"
    "var x=e.clientX+14,y=e.clientY+14;"
    "if(x+t.offsetWidth>innerWidth-4)x=e.clientX-t.offsetWidth-10;"
    "if(y+t.offsetHeight>innerHeight-4)y=e.clientY-t.offsetHeight-10;"
    "t.style.left=x+'px';t.style.top=y+'px';});"
    "document.body.dataset.ok='1';})();";
