package report

import (
	"fmt"
	"html/template"
	"io"
	"strings"
)

// Chart geometry, in SVG user units.
const (
	chartW, chartH = 960.0, 290.0
	padL, padB     = 64.0, 44.0
	padT, padR     = 22.0, 12.0
)

// chart is the timeline's precomputed SVG geometry.
type chart struct {
	W, H          float64
	Acked, Errors string // polyline points
	Faults        []faultRect
	XTicks        []tick
	YTicks        []tick
	Left, Bottom  float64
	Right, Top    float64
	PlotH         float64
	MidX, MidY    float64 // the axis titles' centres
}

type faultRect struct {
	X, W  float64
	Label string // F1, F2...: the same as the fault table's
	Title string
}

type tick struct {
	X, Y  float64
	Label string
}

func (r Report) chart() chart {
	c := chart{W: chartW, H: chartH, Left: padL, Bottom: chartH - padB, Right: chartW - padR, Top: padT,
		PlotH: chartH - padB - padT, MidX: (padL + chartW - padR) / 2, MidY: (chartH - padB + padT) / 2}
	secs := max(len(r.Timeline), 1)
	for _, f := range r.Faults {
		secs = max(secs, int(f.To)+1)
	}
	peak := 1
	for _, s := range r.Timeline {
		peak = max(peak, s.Acked, s.Errors)
	}
	x := func(sec float64) float64 { return padL + (chartW-padL-padR)*sec/float64(secs) }
	y := func(v int) float64 { return chartH - padB - (chartH-padB-padT)*float64(v)/float64(peak) }
	var acked, errs strings.Builder
	for _, s := range r.Timeline {
		fmt.Fprintf(&acked, "%.1f,%.1f ", x(float64(s.At)+0.5), y(s.Acked))
		fmt.Fprintf(&errs, "%.1f,%.1f ", x(float64(s.At)+0.5), y(s.Errors))
	}
	c.Acked, c.Errors = strings.TrimSpace(acked.String()), strings.TrimSpace(errs.String())
	for i, f := range r.Faults {
		c.Faults = append(c.Faults, faultRect{X: x(f.From), W: max(1, x(f.To)-x(f.From)), Label: faultLabel(i),
			Title: fmt.Sprintf("%s: %s, %.1fs to %.1fs", faultLabel(i), f.What, f.From, f.To)})
	}
	step := max(1, secs/10)
	for s := 0; s <= secs; s += step {
		c.XTicks = append(c.XTicks, tick{X: x(float64(s)), Y: chartH - padB + 16, Label: fmt.Sprintf("%ds", s)})
	}
	for _, v := range []int{0, peak / 2, peak} {
		c.YTicks = append(c.YTicks, tick{X: padL - 6, Y: y(v) + 4, Label: fmt.Sprint(v)})
	}
	return c
}

// WriteHTML writes the self-contained HTML report: inline CSS and SVG,
// no script, no external resource.
func (r Report) WriteHTML(w io.Writer) error {
	data := struct {
		Report
		Chart chart
	}{r, r.chart()}
	if err := page.Execute(w, data); err != nil {
		return fmt.Errorf("report: html: %w", err)
	}
	return nil
}

var page = template.Must(template.New("report").Funcs(template.FuncMap{"op": describeOp, "dur": round,
	"fault": faultLabel, "short": short, "definitions": func() string { return definitions }}).Parse(pageHTML))
