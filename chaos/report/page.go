package report

// pageHTML is the report's template: one file, inline CSS and SVG.
const pageHTML = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>drill {{.Scenario}} seed {{.Seed}}</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222}
h1{font-size:20px} h2{font-size:16px;margin-top:28px}
table{border-collapse:collapse;margin:8px 0} td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}
.pass{color:#11772d;font-weight:600} .fail{color:#b00020;font-weight:600}
.verdict{padding:6px 10px;display:inline-block;border-radius:4px;background:#eee}
pre{font-size:12px;background:#f6f6f6;padding:6px;overflow-x:auto;margin:4px 0}
.legend span{margin-right:16px}
</style></head><body>
<h1>Drill <code>{{.Scenario}}</code>, seed {{.Seed}}</h1>
<p class="verdict" id="verdict">{{if not .Safe}}<span class="fail">VIOLATIONS</span>{{else if not .Green}}<span class="fail">safe, but not covered: {{range .Missing}}{{.}} {{end}}</span>{{else}}<span class="pass">GREEN</span>{{end}}</p>
<p>{{.Requests}} requests, {{.Acked}} acknowledged ({{.Replayed}} replayed), {{.Mismatches}} answered 422, <b>{{.Duplicates}} duplicates</b>.</p>

<h2>Timeline</h2>
<p class="legend"><span style="color:#11772d">&#9632; acknowledged/s</span><span style="color:#b00020">&#9632; errors/s</span><span style="color:#e0a000">&#9632; fault window</span></p>
<svg id="timeline" xmlns="http://www.w3.org/2000/svg" width="{{.Chart.W}}" height="{{.Chart.H}}" viewBox="0 0 {{.Chart.W}} {{.Chart.H}}" role="img" aria-label="throughput and errors per second">
{{range .Chart.Faults}}<rect class="fault" x="{{.X}}" y="{{$.Chart.Top}}" width="{{.W}}" height="{{$.Chart.PlotH}}" fill="#e0a000" fill-opacity="0.18"><title>{{.Title}}</title></rect>
{{end}}<line x1="{{.Chart.Left}}" y1="{{.Chart.Bottom}}" x2="{{.Chart.Right}}" y2="{{.Chart.Bottom}}" stroke="#888"/>
<line x1="{{.Chart.Left}}" y1="{{.Chart.Top}}" x2="{{.Chart.Left}}" y2="{{.Chart.Bottom}}" stroke="#888"/>
{{range .Chart.XTicks}}<text x="{{.X}}" y="{{.Y}}" font-size="10" text-anchor="middle">{{.Label}}</text>
{{end}}{{range .Chart.YTicks}}<text x="{{.X}}" y="{{.Y}}" font-size="10" text-anchor="end">{{.Label}}</text>
{{end}}<polyline id="acked" fill="none" stroke="#11772d" stroke-width="1.5" points="{{.Chart.Acked}}"/>
<polyline id="errors" fill="none" stroke="#b00020" stroke-width="1.5" points="{{.Chart.Errors}}"/>
</svg>

<h2>Latency and failover</h2>
<table id="latency"><tr><th></th><th>n</th><th>p50</th><th>p90</th><th>p99</th><th>max</th></tr>
<tr><td>acknowledged requests</td><td>{{.Latency.N}}</td><td>{{.Latency.P50}}</td><td>{{.Latency.P90}}</td><td>{{.Latency.P99}}</td><td>{{.Latency.Max}}</td></tr>
<tr><td>failover (fault start to a moved actor's first success in its new owner)</td><td>{{.Failover.N}}</td><td>{{.Failover.P50}}</td><td>{{.Failover.P90}}</td><td>{{.Failover.P99}}</td><td>{{.Failover.Max}}</td></tr>
</table>
<table id="faults"><tr><th>from</th><th>to</th><th>fault</th><th>requests</th><th>acknowledged</th><th>503 (no Retry-After)</th><th>moved actors</th></tr>
{{range .Faults}}<tr><td>{{printf "%.1fs" .From}}</td><td>{{printf "%.1fs" .To}}</td><td>{{.What}}</td><td>{{.Requests}}</td><td>{{.Acked}}</td><td>{{.Rejected}} ({{.RejectedNoRetryAfter}})</td><td>{{len .Failover}}</td></tr>
{{else}}<tr><td colspan="7">no faults</td></tr>{{end}}</table>

<h2>Coverage</h2>
<table id="coverage"><tr><th>stale-epoch write rejected</th><th>takeover</th><th>40001 retry</th><th>ambiguous outcome resolved</th><th>move under load</th></tr>
<tr><td>{{.Coverage.StaleEpochRejected}}</td><td>{{.Coverage.Takeovers}}</td><td>{{.Coverage.Retries40001}}</td><td>{{.Coverage.AmbiguousResolved}}</td><td>{{.Coverage.MovesUnderLoad}}</td></tr></table>

<h2>Invariants</h2>
<table id="invariants"><tr><th>invariant</th><th>result</th><th>checked</th><th>statement</th></tr>
{{range .Table}}<tr class="invariant"><td>{{.Invariant}}</td><td>{{if .Pass}}<span class="pass">pass</span>{{else}}<span class="fail">FAIL ({{len .Violations}})</span>{{end}}</td><td>{{.Checked}}</td><td>{{.Description}}</td></tr>
{{end}}</table>
{{range .Table}}{{range .Violations}}<div class="violation"><p class="fail">{{.}}</p><pre>{{range .Excerpt}}{{op .}}
{{end}}</pre></div>
{{end}}{{end}}
</body></html>
`
