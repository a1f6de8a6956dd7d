// The page's two drawings: a PAE heatmap on a canvas and a PCA scatter plot in SVG, with
// the PCA itself computed here from the pooled embedding vectors.

// PAE colours run from dark blue (confident, 0 Å) to near white (the top of the scale).
const PAE_STOPS = [[13, 59, 102], [58, 134, 200], [159, 208, 239], [244, 248, 251]];

export function paeColour(value, max) {
  const t = Math.min(Math.max(value / max, 0), 1) * (PAE_STOPS.length - 1);
  const i = Math.min(Math.floor(t), PAE_STOPS.length - 2), f = t - i;
  return PAE_STOPS[i].map((c, k) => Math.round(c + (PAE_STOPS[i + 1][k] - c) * f));
}

// drawPAE paints an n×n matrix (flat, row-major) pixel per cell; CSS scales it up.
export function drawPAE(canvas, { shape, data }, max = 30) {
  const [n, m] = shape;
  canvas.width = m; canvas.height = n;
  const ctx = canvas.getContext("2d");
  const img = ctx.createImageData(m, n);
  for (let i = 0; i < n * m; i++) {
    const [r, g, b] = paeColour(data[i], max);
    img.data.set([r, g, b, 255], i * 4);
  }
  ctx.putImageData(img, 0, 0);
}

// pca projects the rows of X (arrays of equal length) on their first two principal
// components. With few rows and long vectors the n×n Gram matrix of the centred rows is
// the cheap route: its eigenvectors scaled by √λ are the scores.
export function pca(X) {
  const n = X.length, d = X[0].length;
  const mean = new Float64Array(d);
  for (const x of X) for (let j = 0; j < d; j++) mean[j] += x[j] / n;
  const C = X.map(x => Float64Array.from(x, (v, j) => v - mean[j]));
  const G = C.map(a => C.map(b => { let s = 0; for (let j = 0; j < d; j++) s += a[j] * b[j]; return s; }));
  const total = G.reduce((s, row, i) => s + row[i], 0);
  const comps = [];
  for (let k = 0; k < Math.min(2, n); k++) {
    const { value, vector } = topEigen(G);
    comps.push({ value, vector });
    for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) G[i][j] -= value * vector[i] * vector[j];
  }
  while (comps.length < 2) comps.push({ value: 0, vector: new Float64Array(n) });
  return {
    points: X.map((_, i) => comps.map(c => c.vector[i] * Math.sqrt(Math.max(c.value, 0)))),
    explained: comps.map(c => total > 0 ? c.value / total : 0),
  };
}

function topEigen(G) {
  const n = G.length;
  let v = Float64Array.from({ length: n }, (_, i) => 1 + i / n), value = 0;
  for (let iter = 0; iter < 500; iter++) {
    const w = G.map(row => row.reduce((s, g, j) => s + g * v[j], 0));
    const norm = Math.hypot(...w);
    if (norm < 1e-12) return { value: 0, vector: new Float64Array(n) };
    const next = w.map(x => x / norm);
    const moved = next.reduce((s, x, i) => s + Math.abs(x - v[i]), 0);
    v = Float64Array.from(next); value = norm;
    if (moved < 1e-10) break;
  }
  return { value, vector: v };
}

const SVG = "http://www.w3.org/2000/svg";

function svgEl(name, attrs, text) {
  const e = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

// scatter draws labelled points with axes titled by the explained variance.
export function scatter(labels, { points, explained }) {
  const W = 560, H = 400, pad = 44;
  const xs = points.map(p => p[0]), ys = points.map(p => p[1]);
  // Each axis spans its points with a tenth of the range to spare on either side.
  const span = v => {
    const lo = Math.min(...v), hi = Math.max(...v), pad = hi - lo > 1e-12 ? (hi - lo) / 10 : 1;
    return [lo - pad, hi + pad];
  };
  const [x0, x1] = span(xs), [y0, y1] = span(ys);
  const sx = x => pad + (x - x0) / (x1 - x0) * (W - 2 * pad), sy = y => H - pad - (y - y0) / (y1 - y0) * (H - 2 * pad);
  const svg = svgEl("svg", { viewBox: `0 0 ${W} ${H}`, class: "pca", role: "img",
    "aria-label": `PCA of ${labels.length} pooled embeddings` });
  svg.append(svgEl("rect", { x: pad, y: pad / 2, width: W - 2 * pad, height: H - 1.5 * pad, fill: "#f8fafc", stroke: "#dde3ea" }));
  svg.append(svgEl("text", { x: W / 2, y: H - 10, "text-anchor": "middle" }, `PC1 (${(explained[0] * 100).toFixed(1)}% of variance)`));
  svg.append(svgEl("text", { x: 14, y: H / 2, "text-anchor": "middle", transform: `rotate(-90 14 ${H / 2})` }, `PC2 (${(explained[1] * 100).toFixed(1)}%)`));
  points.forEach((p, i) => {
    const g = svgEl("g", {});
    g.append(svgEl("title", {}, labels[i]));
    g.append(svgEl("circle", { cx: sx(p[0]), cy: sy(p[1]), r: 6, fill: "#1f6f8b", "fill-opacity": .8, stroke: "#fff" }));
    const right = sx(p[0]) > W / 2; // label on the inner side, so that it stays in the frame
    g.append(svgEl("text", { x: sx(p[0]) + (right ? -9 : 9), y: sy(p[1]) + 4, "text-anchor": right ? "end" : "start", style: "fill:#1c2430" }, labels[i]));
    svg.append(g);
  });
  return svg;
}
