package report

// pageHTML is the report's template: one file, inline CSS and SVG.
const pageHTML = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>drill {{.Scenario}} seed {{.Seed}}</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1000px}
h1{font-size:20px} h2{font-size:16px;margin-top:28px} h3{font-size:14px;margin:18px 0 4px}
table.ledger{font-size:12px} table.ledger code{font-size:11px}
table{border-collapse:collapse;margin:8px 0} td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}
td.n{text-align:right;font-variant-numeric:tabular-nums}
.pass{color:#11772d;font-weight:600} .fail{color:#b00020;font-weight:600}
.verdict{padding:6px 10px;display:inline-block;border-radius:4px;background:#eee}
.note{color:#555;font-size:13px}
pre{font-size:12px;background:#f6f6f6;padding:6px;overflow-x:auto;margin:4px 0}
.legend span{margin-right:16px;white-space:nowrap} .legend svg{vertical-align:middle;margin-right:4px}
dl.meta{display:grid;grid-template-columns:max-content auto;gap:2px 12px;font-size:13px} dl.meta dt{color:#555} dl.meta dd{margin:0}
</style></head><body>
<h1>Drill <code>{{.Scenario}}</code>, seed {{.Seed}}</h1>
<p class="verdict" id="verdict">{{if not .Safe}}<span class="fail">VIOLATIONS</span>{{else if not .Green}}<span class="fail">safe, but not covered: {{range .Missing}}{{.}} {{end}}</span>{{else}}<span class="pass">GREEN</span>{{end}}</p>
<p class="note" id="green-requires">GREEN requires both: every invariant below holds (the run is <i>safe</i>), and every coverage counter is above zero (the run exercised the stale-epoch fence, a takeover, a 40001 retry, an ambiguous outcome resolved and a move under load).</p>
<p>{{.Requests}} requests, {{.Acked}} acknowledged ({{.Replayed}} replayed), {{.Mismatches}} answered 422, <b>{{.Duplicates}} duplicate{{if ne .Duplicates 1}}s{{end}}</b>.</p>
<dl class="meta" id="meta">
<dt>generated</dt><dd>{{.Meta.Generated.Format "2006-01-02 15:04:05 UTC"}}</dd>
<dt>replay with</dt><dd><code id="command">{{.Meta.Command}}</code></dd>
<dt>seed</dt><dd>{{.Seed}} (the same seed replays the same faults and workload)</dd>
<dt>commit</dt><dd id="commit">{{if .Meta.Commit}}<code>{{.Meta.Commit}}</code>{{else}}not recorded{{end}}</dd>
<dt>build</dt><dd>{{.Meta.Version}}</dd>
<dt>cluster</dt><dd id="cluster">{{.Meta.ClusterKind}}</dd>
<dt>clients</dt><dd>{{.Client}} (<code>direct</code>: each call to one region's address; <code>sdk</code>: the multi-region Go SDK; <code>entry</code>: through the HAProxy global entry)</dd>
<dt>run length</dt><dd>{{dur .Meta.Span}} from the first request to the last answer</dd>
</dl>

<h2>Timeline</h2>
<p class="legend"><span><svg width="14" height="4"><rect width="14" height="4" fill="#11772d"/></svg>acknowledged requests per second</span><span><svg width="14" height="4"><rect width="14" height="4" fill="#b00020"/></svg>failed attempts per second</span><span><svg width="14" height="12"><rect width="14" height="12" fill="#e0a000" fill-opacity="0.18" stroke="#e0a000" stroke-opacity="0.6"/></svg>fault window F<i>n</i>: from the fault's injection until it was healed (the table below lists each)</span></p>
<p class="note">The drill's own traffic; the re-send of every acknowledged answer after the drill (counted above) is not plotted.</p>
<svg id="timeline" xmlns="http://www.w3.org/2000/svg" width="{{.Chart.W}}" height="{{.Chart.H}}" viewBox="0 0 {{.Chart.W}} {{.Chart.H}}" role="img" aria-label="acknowledged and failed requests per second over the run, with fault windows">
{{range .Chart.Faults}}<rect class="fault" x="{{.X}}" y="{{$.Chart.Top}}" width="{{.W}}" height="{{$.Chart.PlotH}}" fill="#e0a000" fill-opacity="0.18" stroke="#e0a000" stroke-opacity="0.6"><title>{{.Title}}</title></rect>
<text class="fault-label" x="{{.X}}" y="{{$.Chart.Top}}" dy="-4" font-size="10" fill="#8a6200">{{.Label}}</text>
{{end}}<line x1="{{.Chart.Left}}" y1="{{.Chart.Bottom}}" x2="{{.Chart.Right}}" y2="{{.Chart.Bottom}}" stroke="#888"/>
<line x1="{{.Chart.Left}}" y1="{{.Chart.Top}}" x2="{{.Chart.Left}}" y2="{{.Chart.Bottom}}" stroke="#888"/>
{{range .Chart.XTicks}}<text x="{{.X}}" y="{{.Y}}" font-size="10" text-anchor="middle">{{.Label}}</text>
{{end}}{{range .Chart.YTicks}}<text x="{{.X}}" y="{{.Y}}" font-size="10" text-anchor="end">{{.Label}}</text>
{{end}}<text id="x-title" x="{{.Chart.MidX}}" y="{{.Chart.H}}" dy="-4" font-size="11" fill="#444" text-anchor="middle">time since the drill started (seconds)</text>
<text id="y-title" transform="translate(14 {{.Chart.MidY}}) rotate(-90)" font-size="11" fill="#444" text-anchor="middle">requests per second</text>
<polyline id="acked" fill="none" stroke="#11772d" stroke-width="1.5" points="{{.Chart.Acked}}"/>
<polyline id="errors" fill="none" stroke="#b00020" stroke-width="1.5" points="{{.Chart.Errors}}"/>
</svg>

<h2>Errors by class</h2>
<table id="errors-by-class"><tr><th>class</th><th>attempts</th></tr>
{{range .ErrorClasses}}<tr><td>{{.Class}}</td><td class="n">{{.N}}</td></tr>
{{else}}<tr><td colspan="2">no failed attempt</td></tr>{{end}}</table>
<p class="note">A class is the HTTP status of an answer that was not a success, or the client-side error (timeout, connection refused...) of an attempt that got none.</p>

<h2>Latency and failover</h2>
<table id="latency"><tr><th></th><th>n</th><th>p50</th><th>p90</th><th>p99</th><th>max</th></tr>
<tr><td>acknowledged requests (call to answer)</td><td class="n">{{.Latency.N}}</td><td class="n">{{dur .Latency.P50}}</td><td class="n">{{dur .Latency.P90}}</td><td class="n">{{dur .Latency.P99}}</td><td class="n">{{dur .Latency.Max}}</td></tr>
<tr><td>failover (region out to a moved actor's first success in its new owner)</td><td class="n">{{.Failover.N}}</td><td class="n">{{dur .Failover.P50}}</td><td class="n">{{dur .Failover.P90}}</td><td class="n">{{dur .Failover.P99}}</td><td class="n">{{dur .Failover.Max}}</td></tr>
<tr id="in-flight"><td>in-flight intents of the lost region (region out to their final answer; see below)</td><td class="n">{{.InFlight.N}}</td><td class="n">{{dur .InFlight.P50}}</td><td class="n">{{dur .InFlight.P90}}</td><td class="n">{{dur .InFlight.P99}}</td><td class="n">{{dur .InFlight.Max}}</td></tr>
</table>
<p class="note" id="in-flight-note">In-flight intents are the intents the lost region was running when it died: an affected actor's call that was open at that moment. Their figure is the time from the region's death to each one's final answer, which comes after the failover, once the new owner has taken the operation over (its lease lapsed) and replayed, resolved or re-run it.</p>
<table id="availability"><tr><th>availability inside region-loss windows</th><th>client calls</th><th>answered</th><th>share</th></tr>
<tr id="availability-unaffected"><td>actors the lost region did not own (<code>availability_unaffected</code>)</td><td class="n">{{.Unaffected.Calls}}</td><td class="n">{{.Unaffected.OK}}</td><td class="n">{{.Unaffected}}</td></tr>
<tr id="availability-affected"><td>actors the lost region owned (<code>availability_affected</code>)</td><td class="n">{{.Affected.Calls}}</td><td class="n">{{.Affected.OK}}</td><td class="n">{{.Affected}}</td></tr>
</table>
{{if eq .Client "direct"}}<p class="note" id="direct-mode"><b>Client mode <code>direct</code>:</b> each call goes to one region's address and is not retried elsewhere, so every call sent to the lost region's address while it is down counts as unavailable, whatever the other regions could have answered. That is the floor, not what a multi-region client sees: run with <code>--client sdk</code> (the Go SDK, which moves to another region) or <code>--client entry</code> (the HAProxy global entry) for that.</p>
{{end}}<p class="note">A client call is what the caller's code sees: one request in the direct and entry client modes, one SDK <code>Do</code> (with its own retries and region switches) in the sdk mode; it is available when it got a final answer: a success, or a 4xx that retrying cannot change (a changed body's 422). An actor's owner is the region that served its last success before the fault. A reject-policy 503 is not available: on a reject endpoint an affected actor counts as available only after its failover is accepted.</p>
<table id="false-failovers"><tr><th>region failovers</th><th>false failovers (a region no fault took out)</th></tr>
<tr><td class="n">{{.RegionFailovers}}</td><td class="n">{{len .FalseFailovers}}{{range .FalseFailovers}}; {{.Region}} at {{printf "%.1fs" .At}} ({{.Shards}} shards){{end}}</td></tr>
</table>
<p class="note">A false failover is a region failover (audited by the failover controller) of a region that no fault took out (killed, paused past its lease, cut from etcd or SQL, its etcd connections reset, crashed) within the fault's window plus 15 s: the region was only slow, cut from a peer, briefly paused, or nothing happened to it.</p>
<table id="faults"><tr><th>window</th><th>from</th><th>to</th><th>length</th><th>fault (as injected)</th><th>requests</th><th>acknowledged</th><th>503 (of which without Retry-After)</th><th>moved actors</th><th>unaffected / affected availability</th><th>incident ledger</th></tr>
{{range $i, $f := .Faults}}<tr><td>{{fault $i}}</td><td class="n">{{printf "%.1fs" .From}}</td><td class="n">{{printf "%.1fs" .To}}</td><td class="n">{{printf "%.1fs" (.Length)}}</td><td>{{.What}}</td><td class="n">{{.Requests}}</td><td class="n">{{.Acked}}</td><td class="n">{{.Rejected}} ({{.RejectedNoRetryAfter}})</td><td class="n">{{len .Failover}}</td><td class="n">{{.Unaffected}} / {{.Affected}}</td><td>{{with $.LedgerOf $i}}<a href="#{{.Anchor}}">{{.Total}} intents, {{.MustAct}} must act</a>{{else}}&ndash;{{end}}</td></tr>
{{else}}<tr><td colspan="11">no faults</td></tr>{{end}}</table>
<p class="note">A window (the shaded band of the same name in the chart) runs from the fault's injection until its heal completed: it includes the heal (restarting a killed region, waiting for it to register again), so it is longer than the duration the fault's description gives. Requests, acknowledged and 503 count the attempts whose answer came back inside the window.</p>

{{if .Ledgers}}<h2 id="ledgers">Incident ledger of each region-loss window</h2>
<p class="note">What finance and support reconcile after the failover each region-loss window caused: every business intent it touched and how it ended, as <code>idemctl incident report ID</code> prints it (docs/runbook.md, &ldquo;After an incident: reconcile with the ledger&rdquo;), read from the run's store when the drill ended. <b>must act</b> marks the intents a person has to settle (left in flight by the lost region, or an unknown outcome). Key hashes are SHA-256 (first 12 hex digits shown); the raw key is never stored.</p>
{{range .Ledgers}}<h3 id="{{.Anchor}}">{{.Title}}</h3>
{{if .Err}}<p class="fail">ledger not read: {{.Err}}</p>{{else}}<p><b>{{.Total}} intents, {{.MustAct}} for a person to act on:</b> {{.Counts}}.</p>
{{if .Entries}}<table class="ledger"><tr><th>class</th><th>operation</th><th>actor</th><th>endpoint</th><th>key hash</th><th>state when it began</th><th>what the coordinator did</th><th>final state</th><th>must act</th></tr>
{{range .Entries}}<tr><td>{{.Class}}</td><td><code>{{.OperationID}}</code></td><td>{{.Actor}}</td><td>{{.Endpoint}}</td><td><code>{{short .KeyHash}}</code></td><td>{{.StateAtStart}}</td><td>{{.Action}}</td><td>{{.FinalState}}</td><td>{{if .MustAct}}<span class="fail">yes</span>: {{.NextStep}}{{else}}no{{end}}</td></tr>
{{end}}</table>{{if .Omitted}}<p class="note">{{.Omitted}} more not shown (the must-act ones are shown first).</p>{{end}}{{end}}{{end}}
{{end}}{{end}}
<h2>Coverage</h2>
<table id="coverage"><tr><th>stale-epoch write rejected &dagger;</th><th>takeover</th><th>40001 retry &dagger;</th><th>ambiguous outcome resolved</th><th>move under load</th></tr>
<tr><td class="n">{{.Coverage.StaleEpochRejected}}</td><td class="n">{{.Coverage.Takeovers}}</td><td class="n">{{.Coverage.Retries40001}}</td><td class="n">{{.Coverage.AmbiguousResolved}}</td><td class="n">{{.Coverage.MovesUnderLoad}}</td></tr></table>
<p class="note" id="probe-note">&dagger; counted from the drill's own probes (writes at a retired epoch, and conflicting transactions, that the drill sends to the store itself), not from the client traffic. The others come from the traffic's records and the repair audit.</p>

<h2>Invariants</h2>
<table id="invariants"><tr><th>invariant</th><th>result</th><th>checked</th><th>statement</th></tr>
{{range .Table}}<tr class="invariant"><td><a href="#def-{{.Invariant}}">{{.Invariant}}</a></td><td>{{if .Pass}}<span class="pass">pass</span>{{else}}<span class="fail">FAIL ({{len .Violations}})</span>{{end}}</td><td class="n">{{.Checked}} {{.Unit}}</td><td>{{.Description}}</td></tr>
{{end}}</table>
<p class="note">Each invariant links to its definition below.</p>
<h2>Definitions</h2>
<dl id="definitions">
{{range .Table}}<dt id="def-{{.Invariant}}"><b>{{.Invariant}}</b></dt><dd>{{.Description}}. "Checked" counts the {{.Unit}} of the run it was checked on; a violation names the key (as a hash) or the shard and the shortest excerpt of the history that shows it.</dd>
{{end}}</dl>
<p class="note">The full statements, and why each holds, are in the repository's {{definitions}}.</p>
{{range .Table}}{{range .Violations}}<div class="violation"><p class="fail">{{.}}</p><pre>{{range .Excerpt}}{{op .}}
{{end}}</pre></div>
{{end}}{{end}}
</body></html>
`
