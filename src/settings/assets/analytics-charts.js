// Issue 28: draws the analytics pages' charts with uPlot (served from node_modules, no CDN).
// Each `.charts[data-series]` holds its series as JSON; each `[data-chart]` inside names the field it plots.
(() => {
  if (typeof uPlot === "undefined") return;
  for (const group of document.querySelectorAll(".charts[data-series]")) {
    let series;
    try {
      series = JSON.parse(group.dataset.series);
    } catch {
      continue;
    }
    const xs = series.map((p) => Date.parse(p.at) / 1000);
    for (const el of group.querySelectorAll("[data-chart]")) {
      const key = el.dataset.chart;
      const ys = series.map((p) => (p[key] === null || p[key] === undefined ? null : Number(p[key])));
      const width = Math.max(280, Math.min(720, el.parentElement.clientWidth || 640));
      new uPlot(
        { width, height: 180, series: [{}, { label: el.dataset.label, stroke: "#2563eb", fill: "rgba(37,99,235,0.1)", spanGaps: true }], axes: [{}, {}], legend: { show: false } },
        [xs, ys],
        el,
      );
    }
  }
})();
