// The HTML report's stylesheet and tooltip script: quiet greys for structure, colour only for data.
#include "headroom/report/report_page.h"

namespace headroom {

const char* const kReportStyle = R"CSS(
:root{--ink:#1f2937;--muted:#6b7280;--line:#e5e7eb;--bg:#f5f6f8;--card:#fff}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--ink);font:14px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
main{max-width:1200px;margin:0 auto;padding:28px 32px 40px}
header{display:flex;align-items:flex-start;justify-content:space-between;gap:24px;margin-bottom:18px}
.brand{font-size:12px;letter-spacing:.14em;text-transform:uppercase;color:var(--muted);font-weight:700}
h1{font-size:26px;margin:2px 0 4px;font-weight:650;letter-spacing:-.01em}
.sub{color:var(--muted);margin:0;font-size:13.5px}
.sub code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px;color:#374151}
.badge{display:inline-block;padding:5px 14px;border-radius:999px;font-weight:650;font-size:13px;white-space:nowrap}
.badge.succeeded{background:#e3f4ea;color:#1e7a46}.badge.failed{background:#fde8e8;color:#b42323}
.badge.interrupted,.badge.unknown{background:#eceff3;color:#4b5563}
.facts{display:grid;grid-template-columns:repeat(auto-fit,minmax(145px,1fr));gap:12px;margin-bottom:18px}
.fact{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:11px 14px}
.fact .label{color:var(--muted);font-size:11.5px;text-transform:uppercase;letter-spacing:.06em;font-weight:600}
.fact .value{font-size:22px;font-weight:650;font-variant-numeric:tabular-nums;margin-top:2px}
.fact .detail{color:var(--muted);font-size:12px}
section.card{background:var(--card);border:1px solid var(--line);border-radius:12px;padding:18px 20px;margin-bottom:18px}
h2{font-size:16.5px;margin:0 0 3px;font-weight:650}
.note{color:var(--muted);margin:0 0 8px;font-size:13px}
.legend{display:flex;flex-wrap:wrap;gap:5px 16px;margin:4px 0 10px;font-size:12.5px;color:#374151}
.key{display:inline-flex;align-items:center;gap:6px}
.key i{display:inline-block;width:14px;height:10px;border-radius:2px}
.key i.dot{width:10px;height:10px;border-radius:50%}
.key i.fill-key{background:linear-gradient(to top,#4f86c6 55%,rgba(79,134,198,.22) 55%)}
.key i.estimate-key{height:0;border-top:2px solid #111827;border-radius:0;margin-top:2px}
svg.chart{width:100%;height:auto;display:block;overflow:visible}
svg text{font-family:inherit}
.axis{font-size:11px;fill:#6b7280}.axis-title{font-size:12px;fill:#374151}
.grid{stroke:#eceef1;stroke-width:1}.baseline{stroke:#9ca3af}.rowline{stroke:#eceef1}
.layer{stroke:#fff;stroke-width:.6;stroke-opacity:.8}.layer:hover{filter:brightness(.93)}
.growth{fill:rgba(70,110,180,.07);stroke:#7d98c9;stroke-dasharray:3 3;stroke-width:1;pointer-events:none}
.used{fill:none;stroke:#1f2937;stroke-width:1.6;stroke-linejoin:round;pointer-events:none}
.budget{stroke:#c62828;stroke-width:1.6;stroke-dasharray:6 4}
.budget-label{font-size:11.5px;fill:#c62828;font-weight:650}
.reserve{fill:url(#hatch)}.hatch{stroke:rgba(198,40,40,.22);stroke-width:3}
.stripe{fill:#f8f9fb}
.job{fill-opacity:.2}.job:hover{fill-opacity:.42}
.peak{fill-opacity:.92;pointer-events:none}
.estimate{stroke:#111827;stroke-width:1.4;pointer-events:none}
.marker{stroke:#fff;stroke-width:1.2}.marker:hover,.point:hover{stroke:#111827}
.point{fill-opacity:.75;stroke:#fff;stroke-width:.8}
.band{fill:rgba(58,163,135,.1)}.diagonal{stroke:#3aa387;stroke-width:1.2;stroke-dasharray:4 3}
.cols{display:grid;grid-template-columns:1fr 1fr;gap:18px}
.cols section.card{margin-bottom:0}
.cols+section.card{margin-top:18px}
@media (max-width:900px){.cols,.scatter{grid-template-columns:1fr}}
table{width:100%;border-collapse:collapse;font-size:13px}
th{text-align:left;font-weight:600;color:var(--muted);font-size:11px;text-transform:uppercase;letter-spacing:.05em;border-bottom:1px solid var(--line);padding:6px 8px}
td{padding:6px 8px;border-bottom:1px solid #f0f1f3;vertical-align:top}
tr:last-child td{border-bottom:0}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.job{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px;word-break:break-all}
td.why{color:#4b5563}
.rule{display:block;color:var(--muted);font-family:system-ui,sans-serif;font-size:11px}
.pill{display:inline-block;padding:1px 8px;border-radius:999px;font-size:11.5px;color:#fff;white-space:nowrap}
.over{color:#b45309}.under{color:#b42323}.close{color:#1e7a46}
.scatter{display:grid;grid-template-columns:minmax(300px,430px) 1fr;gap:28px;align-items:start}
.stats{display:grid;grid-template-columns:repeat(3,1fr);gap:10px;margin-bottom:12px}
.stats .fact .value{font-size:19px}
.more{color:var(--muted);font-size:12.5px;margin:6px 0 0}
.empty{color:var(--muted);padding:22px;text-align:center;background:#fafbfc;border-radius:8px;margin:6px 0}
#tip{position:fixed;pointer-events:none;background:#111827;color:#f9fafb;padding:7px 10px;border-radius:6px;font-size:12px;line-height:1.45;white-space:pre-line;max-width:460px;box-shadow:0 4px 14px rgba(0,0,0,.2);display:none;z-index:10}
footer{color:var(--muted);font-size:12px;text-align:center;margin-top:22px}
)CSS";

// Shows an element's data-tip next to the pointer; SVG <title> would do without script, but slowly
// and unstyled.
const char* const kReportScript = R"JS(
(function () {
  var tip = document.getElementById('tip');
  document.addEventListener('mousemove', function (event) {
    var target = event.target.closest ? event.target.closest('[data-tip]') : null;
    if (!target) { tip.style.display = 'none'; return; }
    tip.textContent = target.getAttribute('data-tip');
    tip.style.display = 'block';
    var x = event.clientX + 14, y = event.clientY + 14;
    if (x + tip.offsetWidth > window.innerWidth - 8) x = event.clientX - tip.offsetWidth - 14;
    if (y + tip.offsetHeight > window.innerHeight - 8) y = event.clientY - tip.offsetHeight - 14;
    tip.style.left = x + 'px';
    tip.style.top = y + 'px';
  });
})();
)JS";

}  // namespace headroom
