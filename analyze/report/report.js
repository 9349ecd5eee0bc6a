/* report.js — draws `vheap-analyze report`'s page from the JSON embedded in
 * it (report/data.c writes it): the flame graph of the pruned call tree
 * (values summed up the tree per cost, heap and tag on every change), the
 * timeline (SVG) whose clicks pick a precomputed live-set snapshot, the
 * sortable top table, the heaps tree and fragmentation. The state lives in
 * the URL's fragment (#cost=leaked&search=x&heap=malloc&t=0.5), so a view
 * can be linked and tests can drive the page without a browser session. */
(function () {
  'use strict';
  var D = JSON.parse(document.getElementById('vheap-data').textContent);
  var T = D.tree, R = D.run, B = D.base || null, TL = D.timeline;
  var NM = 5;                                   /* measures per run in the tree rows */
  var COSTS = [                                 /* column in the tree rows, bytes? */
    { key: 'peak', col: 3, label: 'at peak', bytes: true, what: 'bytes live at the heap\'s peak' },
    { key: 'leaked', col: 4, label: 'leaked', bytes: true, what: 'bytes leaked (live at the end)' },
    { key: 'allocated', col: 1, label: 'allocated', bytes: true, what: 'bytes allocated in total' },
    { key: 'temporary', col: 2, label: 'temporary', bytes: false, what: 'temporary allocations' },
    { key: 'calls', col: 0, label: 'calls', bytes: false, what: 'calls to allocation functions' }
  ];
  var N = T.parent.length, S = T.strings, RW = 3 + (B ? 2 * NM : NM);
  var nrows = T.rows.length / RW;
  var children = [];
  for (var i = 0; i < N; i++) children.push([]);
  for (i = 1; i < N; i++) children[T.parent[i]].push(i);

  var st = { cost: 'peak', heap: 'all', tag: 'all', search: '', zoom: 0, snap: -1, width: 'b' };

  /* ---- formatting --------------------------------------------------------- */
  function hb(b) {                              /* like the CLI tables: 123B, 2.20K */
    var u = ['B', 'K', 'M', 'G', 'T'], k = 0, v = Math.abs(b);
    if (v < 1000) return (b < 0 ? '-' : '') + v + 'B';
    while (v >= 1000 && k < 4) { v /= 1000; k++; }
    return (b < 0 ? '-' : '') + v.toFixed(2) + u[k];
  }
  function hn(n) { return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ','); }
  function hs(ns) {
    if (ns >= 1e9) return (ns / 1e9).toFixed(3) + 's';
    if (ns >= 1e6) return (ns / 1e6).toFixed(3) + 'ms';
    if (ns >= 1e3) return (ns / 1e3).toFixed(1) + 'µs';
    return ns + 'ns';
  }
  function fmt(v, bytes) { return bytes ? hb(v) : hn(v); }
  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function $(id) { return document.getElementById(id); }
  function costOf(key) { for (var i = 0; i < COSTS.length; i++) if (COSTS[i].key === key) return COSTS[i]; return COSTS[0]; }

  /* ---- heaps and tags ------------------------------------------------------- */
  /* heap rows: id, name, parent, created, destroyed, calls, bytes, peak, peak time,
     live, leaked, leaked blocks, frees, temporary */
  var heapKey = {};                              /* the tree rows' heap key of a heap id */
  R.heaps.forEach(function (h) { heapKey[h[0]] = R.heap_keys ? R.heap_keys[h[0]] : h[0]; });
  function heapChoices() {
    var seen = {}, out = [];
    var add = function (hs, keys) {
      hs.forEach(function (h) {
        var k = keys ? keys[h[0]] : h[0];
        var label = keys ? h[1] : h[1] + ' (' + h[0] + ')';
        if (!seen[k]) { seen[k] = 1; out.push([k, label]); }
      });
    };
    add(R.heaps, R.heap_keys);
    if (B) add(B.heaps, B.heap_keys);
    return out;
  }
  function tagChoices() {
    var out = [['0', '(none)']], seen = {};
    (B ? R.tags.concat(B.tags) : R.tags).forEach(function (t) {
      /* a diff keys tags by label (D.keys), one run by id */
      var k = B ? String(D.keys.indexOf(t[1])) : String(t[0]);
      if (k !== '-1' && !seen[k]) { seen[k] = 1; out.push([k, t[1]]); }
    });
    return out;
  }

  /* ---- values of the tree -------------------------------------------------- */
  /* Per node, the chosen value summed over the rows that pass the filters and
     up the tree; side 0 is this run (or the snapshot), side 1 the baseline. */
  function rowOk(r) {
    var o = r * RW;
    if (st.heap !== 'all' && String(T.rows[o + 1]) !== st.heap) return false;
    if (st.tag !== 'all' && String(T.rows[o + 2]) !== st.tag) return false;
    return true;
  }
  function values(side) {
    var v = new Float64Array(N), c = costOf(st.cost), r;
    if (st.snap >= 0 && side === 0) {
      var sp = T.sparse[st.snap];
      for (var k = 0; k < sp.length; k += 2) if (rowOk(sp[k])) v[T.rows[sp[k] * RW]] += sp[k + 1];
    } else {
      var col = 3 + c.col + (B && side === 0 ? NM : 0);
      for (r = 0; r < nrows; r++) if (rowOk(r)) v[T.rows[r * RW]] += T.rows[r * RW + col];
    }
    for (var i = N - 1; i > 0; i--) v[T.parent[i]] += v[i];
    return v;
  }
  function isBytes() { return st.snap >= 0 || costOf(st.cost).bytes; }

  /* ---- the flame graph ----------------------------------------------------------- */
  var ROWH = 18, cur = null;
  function nodeName(n) { return n ? S[T.name[n]] : 'all'; }
  function nodeLabel(n) {
    if (T.pruned[n]) return '[' + T.pruned[n] + ' smaller stack' + (T.pruned[n] > 1 ? 's' : '') + ']';
    return nodeName(n);
  }
  function path(n) { var p = []; for (; n; n = T.parent[n]) p.unshift(n); return p; }
  function hue(s) { var h = 0; for (var i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) >>> 0; return h; }
  function color(n, va, vb) {
    if (B) {
      var a = vb[n], b = va[n], d = b - a, m = Math.max(a, b, 1), f = Math.min(1, Math.abs(d) / m);
      if (Math.abs(d) < 1e-9) return 'rgb(235,235,235)';
      var g = Math.round(235 - 150 * f);
      return d > 0 ? 'rgb(245,' + g + ',' + g + ')' : 'rgb(' + g + ',' + g + ',245)';
    }
    var mod = T.module[n] ? S[T.module[n]] : '';
    if (T.pruned[n]) return '#ddd';
    if (/^\[/.test(nodeName(n))) return '#ccc';
    var h = hue(mod), sys = /^(libc|ld-linux|libstdc\+\+|libgcc|libvheap|libjemalloc|libtcmalloc)/.test(mod);
    return sys ? 'hsl(' + (30 + h % 20) + ',45%,' + (68 + h % 10) + '%)'
               : 'hsl(' + (h % 40) + ',' + (70 + h % 20) + '%,' + (58 + h % 12) + '%)';
  }
  function matches(n, q) {
    if (!q || !n) return false;
    var s = nodeName(n).toLowerCase(), m = T.module[n] ? S[T.module[n]].toLowerCase() : '';
    return s.indexOf(q) >= 0 || m.indexOf(q) >= 0;
  }
  function drawFlame() {
    var va = values(0), vb = B ? values(1) : null;
    var w = st.width === 'a' && B ? vb : va;
    var fg = $('fg'), W = fg.clientWidth || 1200, c = costOf(st.cost), bytes = isBytes();
    fg.textContent = '';
    if (st.zoom >= N || (st.zoom && !w[st.zoom])) st.zoom = 0;
    var z = st.zoom, total = w[0], q = st.search.toLowerCase(), drawn = 0, maxd = 0;
    var anc = path(z);
    /* the zoomed node and its ancestors, full width (those dimmed: a click
       on one zooms out to it), then what the zoomed node called */
    var box = function (n, depth, x, width, ancestor) {
      var d = el('div', { 'class': 'fg' + (ancestor ? ' anc' : ''), 'data-node': n,
                          'data-name': nodeLabel(n), 'data-value': Math.round(w[n]) });
      d.style.left = x + 'px'; d.style.top = depth * ROWH + 'px'; d.style.width = Math.max(width, 1) + 'px';
      d.style.background = color(n, va, vb);
      if (matches(n, q)) d.className += ' match';
      d.textContent = width > 30 ? nodeLabel(n) : '';
      fg.appendChild(d);
      drawn++;
      if (depth > maxd) maxd = depth;
    };
    box(0, 0, 0, W, z !== 0);
    anc.forEach(function (n, d) { box(n, d + 1, 0, W, n !== z); });
    var lay = function (n, depth, x, width) {
      if (n !== z) box(n, depth, x, width, false);
      var kids = children[n].filter(function (k) { return w[k] > 0; });
      kids.sort(function (a, b) { return w[b] - w[a] || (nodeName(a) < nodeName(b) ? -1 : 1); });
      var cx = x;
      for (var i = 0; i < kids.length; i++) {
        var kw = w[n] ? width * w[kids[i]] / w[n] : 0;
        if (kw >= 0.5) lay(kids[i], depth + 1, cx, kw);
        cx += kw;
      }
    };
    if (w[z] > 0) lay(z, anc.length, 0, W);
    fg.style.height = (maxd + 1) * ROWH + 4 + 'px';
    /* what the search matched, not counting a match inside another */
    var matched = 0;
    if (q) for (var n = 1; n < N; n++) if (matches(n, q)) {
      var inner = false;
      for (var p = T.parent[n]; p; p = T.parent[p]) if (matches(p, q)) { inner = true; break; }
      if (!inner) matched += w[n];
    }
    var what = st.snap >= 0 ? 'bytes live at ' + snapLabel(st.snap) : c.what;
    var info = $('fg-info');
    info.textContent = '';
    var tot = el('span', { id: 'fg-total', 'data-value': Math.round(total),
                           'data-snap': st.snap >= 0 ? TL.snapshot_times[st.snap] : '' },
                 'Total: ' + fmt(total, bytes) + ' ' + what);
    info.appendChild(tot);
    var more = ' — heap: ' + ($('heap').selectedOptions[0] || {}).textContent +
               ', tag: ' + ($('tag').selectedOptions[0] || {}).textContent;
    if (z) more += '; zoomed into ' + nodeName(z) + ' (' + fmt(w[z], bytes) + ', ' + pct(w[z], total) + ')';
    if (B) more += '; widths: ' + (st.width === 'a' ? 'baseline' : 'this run') +
                   ', colour: change from the baseline (red grew, blue shrank); baseline total ' +
                   fmt(vb[0], bytes) + ', change ' + fmt(va[0] - vb[0], bytes);
    info.appendChild(document.createTextNode(more));
    if (q) info.appendChild(el('span', { id: 'fg-matched', 'data-value': Math.round(matched) },
                               '; search "' + st.search + '" matches ' + fmt(matched, bytes) + ' (' + pct(matched, total) + ')'));
    var ps = T.stats;
    info.appendChild(el('div', { id: 'fg-pruned' },
      'Call tree: ' + hn(ps.nodes) + ' nodes from ' + hn(ps.rows) + ' (heap, stack, tag) rows; ' +
      (ps.pruned_rows ? hn(ps.kept) + ' nodes kept (each holds at least ' + (ps.frac * 100).toPrecision(2) +
        '% of some measure), ' + hn(ps.pruned_rows) + ' rows merged into [smaller stacks] frames; '
        : 'nothing pruned; ') + drawn + ' frames drawn (wider than half a pixel).'));
    cur = { va: va, vb: vb, w: w, total: total };
    $('fg-title').textContent = 'Flame graph' + (B ? ' (differential)' : '') + ' — ' + what;
  }
  function pct(v, t) { return t ? (100 * v / t).toFixed(1) + '%' : '-'; }
  /* The box describes the frame under the mouse in the view drawn: any other
   * view (a cost, heap, tag, time or zoom) empties it until the next hover. */
  var detailHint = $('fg-detail').textContent;
  function clearDetail() { $('fg-detail').textContent = detailHint; }
  function detail(n) {
    if (!cur) return;
    var bytes = isBytes(), lines = [];
    var p = path(n);
    lines.push(nodeLabel(n) + (T.module[n] ? '  in ' + S[T.module[n]] : '') + (T.where[n] ? '  (' + S[T.where[n]] + ')' : ''));
    lines.push(fmt(cur.w[n], bytes) + ' (' + pct(cur.w[n], cur.total) + ')' +
               (B ? '   baseline ' + fmt(cur.vb[n], bytes) + ', this run ' + fmt(cur.va[n], bytes) +
                    ', change ' + fmt(cur.va[n] - cur.vb[n], bytes) : ''));
    if (T.pruned[n]) lines.push('call paths too small to draw on their own, merged here');
    lines.push('stack, innermost first:');
    for (var i = p.length - 1; i >= 0; i--)
      lines.push('  ' + nodeLabel(p[i]) + (T.where[p[i]] ? ' (' + S[T.where[p[i]]] + ')' : '') +
                 (T.module[p[i]] ? ' in ' + S[T.module[p[i]]] : ''));
    $('fg-detail').textContent = lines.join('\n');
  }
  $('fg').addEventListener('mouseover', function (e) {
    var n = e.target.getAttribute && e.target.getAttribute('data-node');
    if (n !== null && n !== undefined) detail(+n);
  });
  $('fg').addEventListener('click', function (e) {
    var n = e.target.getAttribute && e.target.getAttribute('data-node');
    if (n === null || n === undefined) return;
    st.zoom = +n; update(); detail(+n);
  });

  /* ---- controls and the URL's fragment --------------------------------------------- */
  function fillSelect(sel, choices, all) {
    sel.textContent = '';
    sel.appendChild(el('option', { value: 'all' }, all));
    choices.forEach(function (c) { sel.appendChild(el('option', { value: String(c[0]) }, c[1])); });
  }
  function buildControls() {
    var cs = $('costs');
    COSTS.forEach(function (c) {
      var b = el('button', { 'class': 'cost', 'data-cost': c.key, title: c.what }, c.label);
      b.onclick = function () { st.cost = c.key; st.snap = -1; update(); };
      cs.appendChild(b);
    });
    if (TL.snapshots.length && !B) {
      var b = el('button', { 'class': 'cost', 'data-cost': 'live', id: 'livebtn',
                             title: 'what was live at the time picked on the timeline' }, 'live at …');
      b.onclick = function () { if (st.snap < 0) st.snap = TL.snapshots.length - 1; update(); };
      cs.appendChild(b);
    }
    fillSelect($('heap'), heapChoices(), 'all heaps');
    fillSelect($('tag'), tagChoices(), 'all tags');
    $('heap').onchange = function () { st.heap = this.value; st.zoom = 0; update(); };
    $('tag').onchange = function () { st.tag = this.value; st.zoom = 0; update(); };
    $('search').oninput = function () { st.search = this.value; update(); };
    $('reset').onclick = function () { st.zoom = 0; update(); };
    if (B) { $('widthby').hidden = false; $('diffwidth').onchange = function () { st.width = this.value; update(); }; }
  }
  function readHash() {
    var h = location.hash.replace(/^#/, '');
    h.split('&').forEach(function (kv) {
      var i = kv.indexOf('='); if (i < 0) return;
      var k = decodeURIComponent(kv.slice(0, i)), v = decodeURIComponent(kv.slice(i + 1));
      if (k === 'cost') st.cost = costOf(v).key;
      else if (k === 'search') st.search = v;
      else if (k === 'heap') {                  /* a name or an id */
        var hit = heapChoices().filter(function (c) { return c[1] === v || c[1].split(' (')[0] === v || String(c[0]) === v; });
        if (hit.length) st.heap = String(hit[0][0]);
      } else if (k === 'tag') {
        var th = tagChoices().filter(function (c) { return c[1] === v || c[0] === v; });
        if (th.length) st.tag = String(th[0][0]);
      } else if (k === 't') st.snap = snapAt(v === 'end' ? Infinity : parseFloat(v) * (TL.by_event ? 1 : 1e9));
      else if (k === 'snap') st.snap = Math.min(TL.snapshots.length - 1, Math.max(-1, parseInt(v, 10) || 0));
      else if (k === 'zoom') {
        var best = 0, bv = -1, va = values(0);
        for (var n = 1; n < N; n++) if (nodeName(n) === v && va[n] > bv) { bv = va[n]; best = n; }
        st.zoom = best;
      } else if (k === 'width') st.width = v === 'a' ? 'a' : 'b';
    });
  }
  function writeHash() {
    var parts = ['cost=' + (st.snap >= 0 ? 'live' : st.cost)];
    if (st.heap !== 'all') parts.push('heap=' + encodeURIComponent(st.heap));
    if (st.tag !== 'all') parts.push('tag=' + encodeURIComponent(st.tag));
    if (st.search) parts.push('search=' + encodeURIComponent(st.search));
    if (st.snap >= 0) parts.push('t=' + (TL.by_event ? TL.snapshot_times[st.snap] : TL.snapshot_times[st.snap] / 1e9));
    if (st.zoom) parts.push('zoom=' + encodeURIComponent(nodeName(st.zoom)));
    history.replaceState(null, '', '#' + parts.join('&'));
  }
  function syncControls() {
    Array.prototype.forEach.call(document.querySelectorAll('button.cost'), function (b) {
      var on = st.snap >= 0 ? b.getAttribute('data-cost') === 'live' : b.getAttribute('data-cost') === st.cost;
      b.className = 'cost' + (on ? ' on' : '');
    });
    if ($('livebtn')) $('livebtn').textContent = st.snap >= 0 ? 'live at ' + snapLabel(st.snap) : 'live at …';
    $('heap').value = st.heap; $('tag').value = st.tag; $('search').value = st.search;
  }

  /* ---- the timeline ------------------------------------------------------------- */
  function xLabel(x) { return TL.by_event ? 'event ' + hn(Math.round(x)) : hs(x); }
  function snapLabel(s) { return xLabel(TL.snapshot_times[s]); }
  function snapAt(x) {                          /* nearest snapshot to time (or event) x */
    if (!TL.snapshots.length) return -1;
    if (!(x < Infinity)) return TL.snapshots.length - 1;
    var best = 0;
    for (var s = 0; s < TL.snapshot_times.length; s++)
      if (Math.abs(TL.snapshot_times[s] - x) < Math.abs(TL.snapshot_times[best] - x)) best = s;
    return best;
  }
  function series() {                           /* the chosen heap's, or every heap's */
    var all = TL.series[TL.series.length - 1], id = null;
    if (st.heap === 'all') return [all, 'all heaps'];
    R.heaps.forEach(function (h) { if (String(heapKey[h[0]]) === st.heap) id = h[0]; });
    for (var i = 0; i < TL.series.length; i++) if (TL.series[i].heap === id) return [TL.series[i], 'heap ' + ($('heap').selectedOptions[0] || {}).textContent];
    return [all, 'all heaps (this heap has no series of its own)'];
  }
  function drawTimeline() {
    var box = $('tl'); box.textContent = '';
    var P = TL.points, W = 1200, H = 260, L = 70, Rm = 10, Tp = 24, Bm = 30;
    var sv = series(), s = sv[0], ymax = 1, i;
    for (i = 0; i < P; i++) ymax = Math.max(ymax, s.max[i]);
    var rssMax = 0;
    for (i = 0; i < P; i++) rssMax = Math.max(rssMax, TL.rss[i]);
    var rssScaled = rssMax > 0 && rssMax <= 4 * ymax;
    if (rssScaled) ymax = Math.max(ymax, rssMax);
    var NS = 'http://www.w3.org/2000/svg';
    var svg = document.createElementNS(NS, 'svg');
    svg.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
    var mk = function (tag, a, txt) {
      var e = document.createElementNS(NS, tag);
      for (var k in a) e.setAttribute(k, a[k]);
      if (txt !== undefined) e.textContent = txt;
      svg.appendChild(e); return e;
    };
    var X = function (p) { return L + (W - L - Rm) * p / P; };
    var Y = function (v) { return H - Bm - (H - Bm - Tp) * Math.min(v, ymax) / ymax; };
    var d = 'M' + X(0) + ',' + Y(0), dl = '';
    for (i = 0; i < P; i++) d += 'L' + X(i) + ',' + Y(s.max[i]) + 'L' + X(i + 1) + ',' + Y(s.max[i]);
    d += 'L' + X(P) + ',' + Y(0) + 'Z';
    mk('path', { d: d, fill: '#f4a259', 'fill-opacity': '0.55', stroke: 'none' });
    for (i = 0; i < P; i++) dl += (i ? 'L' : 'M') + X(i + 1) + ',' + Y(s.live[i]);
    mk('path', { d: dl, fill: 'none', stroke: '#c0590a', 'stroke-width': '1.2' });
    if (rssMax > 0) {
      /* RSS far above the heap gets a scale of its own, on the right */
      var YR = rssScaled ? Y : function (v) { return H - Bm - (H - Bm - Tp) * v / rssMax; };
      var dr = '', on = false;
      for (i = 0; i < P; i++) {
        if (TL.rss[i] < 0) { on = false; continue; }
        dr += (on ? 'L' : 'M') + X(i + 1) + ',' + YR(TL.rss[i]); on = true;
      }
      mk('path', { d: dr, fill: 'none', stroke: '#000', 'stroke-width': '1.2', 'stroke-dasharray': '4 3' });
      if (!rssScaled)
        for (var kr = 1; kr <= 4; kr++)
          mk('text', { x: W - Rm - 2, y: YR(rssMax * kr / 4) + 12, 'text-anchor': 'end', 'font-size': '10', fill: '#555' },
             'RSS ' + hb(Math.round(rssMax * kr / 4)));
    }
    for (var k = 0; k <= 4; k++) {               /* y axis */
      var yv = ymax * k / 4;
      mk('line', { x1: L, x2: W - Rm, y1: Y(yv), y2: Y(yv), stroke: '#eee' });
      mk('text', { x: L - 4, y: Y(yv) + 4, 'text-anchor': 'end', 'font-size': '11' }, hb(Math.round(yv)));
    }
    var span = TL.by_event ? TL.events : TL.runtime;
    for (k = 0; k <= 6; k++)                      /* x axis */
      mk('text', { x: X(P * k / 6), y: H - 10, 'text-anchor': k ? (k < 6 ? 'middle' : 'end') : 'start', 'font-size': '11' },
         xLabel(span * k / 6));
    var lastLabel = -1e9;
    TL.marks.forEach(function (m) {
      var x = X(m[2] + 0.5);
      var line = mk('line', { x1: x, x2: x, y1: Tp, y2: H - Bm, stroke: '#4a4', 'stroke-dasharray': '2 2' });
      line.appendChild(document.createElementNS(NS, 'title')).textContent = m[1] + ' at ' + hs(m[0]);
      if (x - lastLabel > 70) { mk('text', { x: x + 2, y: Tp - 4, 'font-size': '10', fill: '#272' }, m[1]); lastLabel = x; }
    });
    TL.snapshots.forEach(function (p, j) {        /* the instants a click can show */
      mk('line', { x1: X(p + 1), x2: X(p + 1), y1: H - Bm, y2: H - Bm + 5, stroke: j === st.snap ? '#c00' : '#888' });
    });
    if (st.snap >= 0) {
      var sx = X(TL.snapshots[st.snap] + 1);
      mk('line', { x1: sx, x2: sx, y1: Tp, y2: H - Bm, stroke: '#c00', 'stroke-width': '2', id: 'tl-cursor' });
    }
    var peak = 0, peakAt = 0;
    for (i = 0; i < P; i++) if (s.max[i] > peak) { peak = s.max[i]; peakAt = i; }
    mk('text', { x: L + 4, y: 14, 'font-size': '12', 'font-weight': 'bold' },
       'live bytes, ' + sv[1] + (B ? ' (this run)' : '') + (rssMax > 0 ? (rssScaled ? '; RSS dashed' : '; RSS dashed, on its own scale (right, peak ' + hb(rssMax) + ')') : '; no RSS samples'));
    svg.addEventListener('click', function (e) {
      var r = svg.getBoundingClientRect(), x = (e.clientX - r.left) * W / r.width;
      var p = Math.max(0, Math.min(P - 1, Math.floor((x - L) / (W - L - Rm) * P)));
      st.snap = snapAt((p + 1) * TL.width);
      update();
    });
    box.appendChild(svg);
    var info = $('tl-info'); info.textContent = '';
    info.appendChild(el('span', { id: 'tl-peak', 'data-value': peak, 'data-axis': TL.by_event ? 'events' : 'time' }, 'Highest live: ' + hb(peak) + ' near ' + xLabel((peakAt + 1) * TL.width) + '. '));
    info.appendChild(document.createTextNode(
      (TL.by_event ? 'The x axis counts events: the run is only ' + hs(TL.runtime) +
        ' long and its times come from the coarse clock, whose ticks cannot place the events in time (VHEAP_CLOCK=precise gives exact times). '
        : '') +
      P + ' points of ' + (TL.by_event ? hn(TL.width) + (TL.width > 1 ? ' events' : ' event') : hs(TL.width)) +
      ' each: the band is the highest live bytes within a point, the line the live bytes at its end. ' +
      (TL.snapshots.length ? 'Click a time: the flame graph shows what was live then, at the nearest of ' +
        TL.snapshots.length + ' precomputed instants (the ticks under the axis).' : 'No snapshots were precomputed (--snapshots 0).') +
      (TL.marks.length ? ' Green lines are marks (vheap_mark).' : '')));
  }

  /* ---- the top table --------------------------------------------------------------- */
  /* rows: heap, stack, tag, calls, allocated, temporary, peak, leaked, max live, frees, frames */
  var TOPCOLS = [
    { t: 'heap', l: true, f: function (r) { return heapName(r[0]); } },
    { t: 'tag', l: true, f: function (r) { return tagName(r[2]); } },
    { t: 'calls', i: 3 }, { t: 'allocated', i: 4, b: true }, { t: 'temporary', i: 5 },
    { t: 'at peak', i: 6, b: true }, { t: 'leaked', i: 7, b: true }, { t: 'max live', i: 8, b: true },
    { t: 'function', l: true, f: function (r) { return who(r[10]); } }
  ];
  var topSort = 6, topOpen = {};
  function heapName(id) { for (var i = 0; i < R.heaps.length; i++) if (R.heaps[i][0] === id) return R.heaps[i][1]; return '?'; }
  function tagName(id) { if (!id) return ''; for (var i = 0; i < R.tags.length; i++) if (R.tags[i][0] === id) return R.tags[i][1]; return '#' + id; }
  function who(frames) {                        /* the innermost frame that is not the allocator's */
    for (var i = 0; i < frames.length; i++) {
      var m = frames[i][2] || '';
      if (!/^(libc|ld-linux|libstdc\+\+|libgcc|libvheap|libjemalloc|libtcmalloc)/.test(m) && !/^\[/.test(frames[i][0]))
        return frames[i][0] + (frames[i][1] ? ' (' + frames[i][1] + ')' : '');
    }
    return frames.length ? frames[0][0] : '';
  }
  function drawTop() {
    if (B) { drawDiffTop(); return; }
    var rows = D.top.slice(), box = $('top');
    rows = rows.filter(function (r) {
      return (st.heap === 'all' || String(heapKey[r[0]]) === st.heap) && (st.tag === 'all' || String(r[2]) === st.tag);
    });
    rows.sort(function (a, b) { return b[topSort] - a[topSort] || b[3] - a[3]; });
    var t = el('table', { id: 'toptable' }), hr = el('tr');
    TOPCOLS.forEach(function (c) {
      var th = el('th', { 'class': (c.l ? 'l' : '') + (c.i === topSort ? ' sorted' : '') }, c.t);
      if (c.i) th.onclick = function () { topSort = c.i; drawTop(); };
      hr.appendChild(th);
    });
    t.appendChild(hr);
    rows.forEach(function (r) {
      var tr = el('tr', { 'data-stack': r[1] });
      TOPCOLS.forEach(function (c) {
        var v = c.f ? c.f(r) : (c.b ? hb(r[c.i]) : hn(r[c.i]));
        tr.appendChild(el('td', c.i ? { 'data-value': r[c.i] } : { 'class': 'l' }, v));
      });
      tr.style.cursor = 'pointer';
      var key = r[0] + '/' + r[1] + '/' + r[2];
      tr.onclick = function () { topOpen[key] = !topOpen[key]; drawTop(); };
      t.appendChild(tr);
      if (topOpen[key]) {
        var sr = el('tr', { 'class': 'stackrow' }), td = el('td', { colspan: TOPCOLS.length });
        td.textContent = r[10].map(function (f) { return f[0] + (f[1] ? ' (' + f[1] + ')' : '') + (f[2] ? ' in ' + f[2] : ''); }).join('\n');
        sr.appendChild(td); t.appendChild(sr);
      }
    });
    box.textContent = ''; box.appendChild(t);
    $('top-info').textContent = rows.length + ' stacks: the largest by each measure (rows per (heap, stack, tag)); click a header to sort, a row for its whole stack.';
  }
  /* A diff's table: the rows of the (pruned) tree, by the change of the cost chosen. */
  function drawDiffTop() {
    var c = costOf(st.cost), out = [], box = $('top');
    for (var r = 0; r < nrows; r++) {
      if (!rowOk(r)) continue;
      var o = r * RW, a = T.rows[o + 3 + c.col], b = T.rows[o + 3 + NM + c.col];
      if (a !== b) out.push([T.rows[o], a, b, b - a]);
    }
    out.sort(function (x, y) { return Math.abs(y[3]) - Math.abs(x[3]); });
    out = out.slice(0, 200);
    var t = el('table', { id: 'toptable' }), hr = el('tr');
    ['baseline', 'this run', 'change', 'stack (innermost first)'].forEach(function (h, j) { hr.appendChild(el('th', { 'class': j === 3 ? 'l' : '' }, h)); });
    t.appendChild(hr);
    out.forEach(function (x) {
      var tr = el('tr');
      tr.appendChild(el('td', { 'data-value': x[1] }, fmt(x[1], c.bytes)));
      tr.appendChild(el('td', { 'data-value': x[2] }, fmt(x[2], c.bytes)));
      tr.appendChild(el('td', { 'data-value': x[3], 'class': x[3] > 0 ? 'grew' : 'shrank' }, (x[3] > 0 ? '+' : '') + fmt(x[3], c.bytes)));
      tr.appendChild(el('td', { 'class': 'l mono' }, path(x[0]).reverse().slice(0, 6).map(nodeLabel).join(' <- ')));
      t.appendChild(tr);
    });
    box.textContent = ''; box.appendChild(t);
    $('top-info').textContent = out.length + ' call stacks whose ' + c.what + ' changed, biggest change first (stacks matched by function names and modules).';
  }

  /* ---- heaps, fragmentation, the header ------------------------------------------ */
  function drawHeaps() {
    var hs0 = R.heaps, kids = {}, roots = [], t = el('table', { id: 'heaptable' }), hr = el('tr');
    ['heap', 'id', 'created', 'destroyed', 'calls', 'allocated', 'peak', 'peak at', 'leaked', 'leaked blocks'].forEach(function (h, j) {
      hr.appendChild(el('th', { 'class': j ? '' : 'l' }, h));
    });
    t.appendChild(hr);
    var ids = {};
    hs0.forEach(function (h) { ids[h[0]] = 1; });
    hs0.forEach(function (h) {
      if (h[2] !== null && ids[h[2]]) (kids[h[2]] = kids[h[2]] || []).push(h); else roots.push(h);
    });
    var n = 0, walk = function (h, depth) {
      if (n++ > 500) return;
      var tr = el('tr', { 'data-heap': h[0] });
      tr.appendChild(el('td', { 'class': 'l' }, '\u00a0\u00a0'.repeat(depth) + h[1]));
      [h[0], hs(h[3]), h[4] === null ? '-' : hs(h[4]), hn(h[5]), hb(h[6]), hb(h[7]), hs(h[8] || 0), hb(h[10]), hn(h[11])].forEach(function (v, j) {
        tr.appendChild(el('td', j === 3 ? { 'data-value': h[5] } : j === 5 ? { 'data-value': h[7] } : j === 7 ? { 'data-value': h[10] } : {}, String(v)));
      });
      t.appendChild(tr);
      (kids[h[0]] || []).forEach(function (k) { walk(k, depth + 1); });
    };
    roots.forEach(function (h) { walk(h, 0); });
    var box = $('heaptree'); box.textContent = '';
    box.appendChild(t);
    if (R.heaps_total > n || n > 500)
      box.appendChild(el('p', {}, 'Showing ' + Math.min(n, 500) + ' of ' + R.heaps_total + ' heaps (vheap-analyze heaps --limit 0 lists all).'));
  }
  function drawFrag() {
    var t = el('table', { id: 'fragtable' }), hr = el('tr');
    var F = D.frag;
    if (D.frag_refused) {
      $('frag').textContent = '';
      $('frag').appendChild(el('p', { 'data-note': 'frag-refused' }, 'Not shown: ' + D.frag_refused + '.'));
      return;
    }
    hr.appendChild(el('th', { 'class': 'l' }, ''));
    F.forEach(function (f) { hr.appendChild(el('th', {}, f.what === 'end' ? 'at the end (' + hs(f.time) + ')' : 'at the peak (' + hs(f.time) + ')')); });
    t.appendChild(hr);
    var rows = [
      ['live blocks', 'blocks', hn], ['requested bytes', 'requested', hb], ['usable bytes', 'usable', hb],
      ['slack (usable − requested)', function (f) { return f.usable - f.requested; }, hb],
      ['pages touched', 'pages', hn],
      ['page utilization', function (f) { return f.pages ? (100 * f.page_bytes_used / (f.pages * f.page_size)).toFixed(1) + '%' : '-'; }, String],
      ['sparse pages (pinned free bytes)', function (f) { return hn(f.sparse_pages) + ' (' + hb(f.pinned) + ')'; }, String],
      ['regions, footprint', function (f) { return hn(f.regions) + ', ' + hb(f.footprint); }, String],
      ['free in holes', 'free', hb], ['largest hole', 'largest_hole', hb],
      ['external fragmentation (1 − largest/free)', function (f) { return f.free ? (100 * (1 - f.largest_hole / f.free)).toFixed(1) + '%' : '0%'; }, String]
    ];
    rows.forEach(function (r) {
      var tr = el('tr'); tr.appendChild(el('td', { 'class': 'l' }, r[0]));
      F.forEach(function (f) {
        var v = typeof r[1] === 'function' ? r[1](f) : f[r[1]];
        tr.appendChild(el('td', typeof r[1] === 'string' ? { 'data-key': r[1], 'data-value': v } : {}, r[2](v)));
      });
      t.appendChild(tr);
    });
    var box = $('frag'); box.textContent = '';
    box.appendChild(t);
    box.appendChild(el('p', {}, 'Every heap together, system allocator included (docs/fragmentation.md defines each number; vheap-analyze frag has them per heap and region).'));
  }
  /* Leaks by reachability at exit, memcheck's classes, coloured from lost
   * (red) to still reachable (green); nothing without the scan. */
  function drawReach() {
    var names = ['still reachable', 'possibly lost', 'indirectly lost', 'definitely lost', 'not classified'];
    var keys = ['reachable', 'possible', 'indirect', 'lost', 'none'];
    if (!R.reach || !R.reach.length) return;
    var d = el('p', { 'class': 'reach', 'data-note': 'reach' }, 'Leaks by reachability at exit: ');
    R.reach.forEach(function (r) {
      d.appendChild(el('span', { 'class': 'reach-' + keys[r[0]], 'data-class': keys[r[0]] },
        names[r[0]] + ' ' + hb(r[2]) + ' in ' + hn(r[1]) + ' block' + (r[1] === 1 ? '' : 's')));
    });
    $('summary').appendChild(d);
  }
  /* The least headroom of a loom-like heap: its size less the most its
   * roads and it held at once (summary --heap NAME says the same). */
  function drawHeadroom() {
    (R.headroom || []).forEach(function (r) {
      $('summary').appendChild(el('p', { 'class': 'headroom', 'data-note': 'headroom' },
        'Least headroom of ' + r[0] + ': ' + hb(r[1] - r[2]) + ' of ' + hb(r[1]) + ' (' + hb(r[2]) +
        ' in use at once with its nested heaps) at ' + hs(r[3]) + ', in ' + (r[4] || '?') +
        (r[5] ? ', ' + r[5] : '') + '.'));
    });
  }
  function drawHead() {
    var p = R.process[0] || [], h = $('head'), exe = p[1] || '?';
    var argv = (p[2] || []).join(' ');
    h.appendChild(el('h1', {}, 'vheap report: ' + exe.split('/').pop() + (B ? ' against a baseline' : '')));
    h.appendChild(el('div', { 'class': 'sub' }, 'pid ' + p[0] + ' · ' + argv + ' · runtime ' + hs(p[3] || 0) +
      (p[4] ? '' : ' · did not exit cleanly') + ' · ' + R.db + (B ? ' · baseline: ' + B.db : '')));
    var cards = el('div', { 'class': 'cards' }), sum = function (k) { var s = 0; R.heaps.forEach(function (x) { s += x[k] || 0; }); return s; };
    var peakMax = 0; R.heaps.forEach(function (x) { peakMax = Math.max(peakMax, x[7]); });
    [['calls', hn(sum(5))], ['allocated', hb(sum(6))], ['temporary', hn(sum(13))], ['largest heap peak', hb(peakMax)],
     ['leaked', hb(sum(10))], ['peak RSS', p[5] === null ? '-' : hb(p[5])], ['heaps', hn(R.heaps_total)]].forEach(function (c) {
      var d = el('div', { 'class': 'card' }); d.appendChild(el('b', { 'data-card': c[0] }, c[1])); d.appendChild(el('span', {}, c[0]));
      cards.appendChild(d);
    });
    $('summary').appendChild(cards);
    drawReach();
    drawHeadroom();
    if (p[12]) $('summary').appendChild(el('p', { 'class': 'grew' }, 'The capture is damaged: ' + p[12]));
    if (p[13]) $('summary').appendChild(el('p', { 'class': 'grew', 'data-note': 'sampled' },
      'Sampled every ' + hb(p[13]) + ' allocated, on average: every number is an estimate.'));
    if (p[14] !== 1 || p[15] < p[3]) $('summary').appendChild(el('p', { 'class': 'grew', 'data-note': 'windows' },
      'Recorded in ' + p[14] + ' window' + (p[14] === 1 ? '' : 's') + ', ' + hs(p[15]) + ' of ' + hs(p[3] || 0) +
      ': the numbers cover those windows only.'));
  }

  function update() {
    syncControls();
    clearDetail();
    drawFlame();
    drawTimeline();
    drawTop();
    writeHash();
  }
  drawHead();
  buildControls();
  readHash();
  update();
  drawHeaps();
  drawFrag();
  window.addEventListener('resize', function () { drawFlame(); });
  document.documentElement.setAttribute('data-ready', '1');
  /* how long the page took to draw, since navigation began (for bench/run.sh) */
  document.documentElement.setAttribute('data-render-ms', String(Math.round(performance.now())));
})();
