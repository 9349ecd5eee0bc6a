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

  var st = { cost: 'peak', heap: 'all', tag: 'all', search: '', zoom: 0, snap: -1, width: 'b',
             view: 'top', range: null, rmode: 'alloc', fn: null };

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
  /* Per row, the chosen value (rows that pass the filters); side 0 is this
     run (or the snapshot, or the time window), side 1 the baseline. The
     tree's extra sparse columns (D.xcols): per window between snapshots its
     bytes and calls allocated, then per size class its calls and bytes. */
  var XS = T.xsparse || [], XC = D.xcols || { windows: 0, size_classes: 0 };
  var rowHeap = new Array(nrows), rowTag = new Array(nrows), rowNode = new Int32Array(nrows);
  for (var r0 = 0; r0 < nrows; r0++) {
    rowNode[r0] = T.rows[r0 * RW]; rowHeap[r0] = String(T.rows[r0 * RW + 1]); rowTag[r0] = String(T.rows[r0 * RW + 2]);
  }
  function rowOk(r) {
    return (st.heap === 'all' || rowHeap[r] === st.heap) && (st.tag === 'all' || rowTag[r] === st.tag);
  }
  function eachSparse(sp, f) { if (sp) for (var k = 0; k < sp.length; k += 2) if (rowOk(sp[k])) f(sp[k], sp[k + 1]); }
  function forRows(side, f) {
    var c = costOf(st.cost), r;
    if (st.range && side === 0) {
      var calls = st.rmode === 'alloc' && !c.bytes;
      for (var w = st.range[0]; w <= st.range[1]; w++) eachSparse(XS[2 * w + (calls ? 1 : 0)], f);
      /* live in the window: live at its start, and allocated in it */
      if (st.rmode === 'live' && st.range[0] > 0) eachSparse(T.sparse[st.range[0] - 1], f);
    } else if (st.snap >= 0 && side === 0) {
      eachSparse(T.sparse[st.snap], f);
    } else {
      var col = 3 + c.col + (B && side === 0 ? NM : 0);
      for (r = 0; r < nrows; r++) if (rowOk(r)) f(r, T.rows[r * RW + col]);
    }
  }
  function values(side) {
    var v = new Float64Array(G.N);
    if (G === TD) forRows(side, function (r, x) { v[rowNode[r]] += x; });
    else forRows(side, function (r, x) { var l = BU.leaf[rowNode[r]]; for (var i = 0; i < l.length; i++) v[l[i]] += x; });
    if (G === TD) for (var i = G.N - 1; i > 0; i--) v[G.parent[i]] += v[i];
    else v[0] = 0, forRows(side, function (r, x) { v[0] += x; });
    return v;
  }
  function isBytes() { return st.snap >= 0 || (st.range && (st.rmode === 'live' || costOf(st.cost).bytes)) || costOf(st.cost).bytes; }

  /* ---- the two trees: top-down (callers first), bottom-up (callees first) --- */
  var children = [];
  for (var i = 0; i < N; i++) children.push([]);
  for (i = 1; i < N; i++) children[T.parent[i]].push(i);
  var TD = { N: N, parent: T.parent, name: T.name, module: T.module, where: T.where, pruned: T.pruned,
             children: children }, BU = null, G = TD;
  /* The bottom-up tree, built once when first shown: a row's stack read
     from its innermost frame out; BU.leaf[n] lists the bottom-up nodes of
     the stack ending at top-down node n, innermost first. */
  function bottomUp() {
    if (BU) return BU;
    var g = { N: 1, parent: [0], name: [0], module: [0], where: [0], pruned: [0], children: [[]], leaf: {} };
    var kids = [new Map()];
    for (var r = 0; r < nrows; r++) {
      var n = rowNode[r];
      if (g.leaf[n]) continue;
      var list = [], at = 0;
      for (var a = n; a; a = T.parent[a]) {
        var key = T.name[a] * 1048576 + T.module[a] + (T.pruned[a] ? 0.5 : 0), k = kids[at].get(key);
        if (k === undefined) {
          k = g.N++; kids[at].set(key, k); kids.push(new Map());
          g.parent.push(at); g.name.push(T.name[a]); g.module.push(T.module[a]); g.where.push(T.where[a]);
          g.pruned.push(0); g.children.push([]); g.children[at].push(k);
        }
        g.pruned[k] += T.pruned[a];
        list.push(k); at = k;
      }
      g.leaf[n] = list;
    }
    return (BU = g);
  }

  /* ---- the flame graph ----------------------------------------------------------- */
  var ROWH = 18, cur = null, LC = null;
  function nodeName(n) { return n ? S[G.name[n]] : 'all'; }
  function nodeLabel(n) {
    if (G.pruned[n]) return '[' + G.pruned[n] + ' smaller stack' + (G.pruned[n] > 1 ? 's' : '') + ']';
    return nodeName(n);
  }
  function path(n) { var p = []; for (; n; n = G.parent[n]) p.unshift(n); return p; }
  function hue(s) { var h = 0; for (var i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) >>> 0; return h; }
  function color(n, va, vb) {
    if (B) {
      var a = vb[n], b = va[n], d = b - a, m = Math.max(a, b, 1), f = Math.min(1, Math.abs(d) / m);
      if (Math.abs(d) < 1e-9) return 'rgb(235,235,235)';
      var g = Math.round(235 - 150 * f);
      return d > 0 ? 'rgb(245,' + g + ',' + g + ')' : 'rgb(' + g + ',' + g + ',245)';
    }
    var mod = G.module[n] ? S[G.module[n]] : '';
    if (G.pruned[n]) return '#ddd';
    if (/^\[/.test(nodeName(n))) return '#ccc';
    var h = hue(mod), sys = /^(libc|ld-linux|libstdc\+\+|libgcc|libvheap|libjemalloc|libtcmalloc)/.test(mod);
    return sys ? 'hsl(' + (30 + h % 20) + ',45%,' + (68 + h % 10) + '%)'
               : 'hsl(' + (h % 40) + ',' + (70 + h % 20) + '%,' + (58 + h % 12) + '%)';
  }
  /* What the search matches, per node of the tree shown: each string is
     lowered and tested once, not once per node and ancestor (a keystroke
     took 0.6 s on 100,000 stacks). */
  function matchNodes(q) {
    if (!q) return null;
    if (!LC) LC = S.map(function (x) { return x ? x.toLowerCase() : ''; });
    var ms = new Uint8Array(S.length), m = new Uint8Array(G.N);
    for (var i = 1; i < S.length; i++) ms[i] = LC[i].indexOf(q) >= 0 ? 1 : 0;
    for (var n = 1; n < G.N; n++) m[n] = ms[G.name[n]] | ms[G.module[n]];
    return m;
  }
  /* The frames are painted on a canvas: a cost switch on 100,000 stacks
     spent most of a second laying out 2,000 divs. What was drawn stays in
     cur.boxes for the mouse, and in #fg's data-frames (node, label, value,
     ancestor?, x, depth, width) for scripts and tests. */
  function drawFlame() {
    var va = values(0), vb = B ? values(1) : null;
    var w = st.width === 'a' && B ? vb : va;
    var fg = $('fg'), W = fg.clientWidth || 1200;
    if (st.zoom >= G.N || (st.zoom && !w[st.zoom])) st.zoom = 0;
    var z = st.zoom, maxd = 0, boxes = [];
    var anc = path(z);
    /* the zoomed node and its ancestors, full width (those dimmed: a click
       on one zooms out to it), then what the zoomed node called */
    var box = function (n, depth, x, width, ancestor) {
      boxes.push({ n: n, d: depth, x: x, w: Math.max(width, 1), anc: ancestor, label: nodeLabel(n),
                   c: B ? color(n, va, vb) : colorOf(n) });
      if (depth > maxd) maxd = depth;
    };
    box(0, 0, 0, W, z !== 0);
    anc.forEach(function (n, d) { box(n, d + 1, 0, W, n !== z); });
    var lay = function (n, depth, x, width) {
      if (n !== z) box(n, depth, x, width, false);
      var kids = G.children[n].filter(function (k) { return w[k] > 0 && w[k] * width >= 0.5 * w[n]; });
      kids.sort(function (a, b) { return w[b] - w[a] || a - b; });
      var cx = x;
      for (var i = 0; i < kids.length; i++) {
        var kw = width * w[kids[i]] / w[n];
        lay(kids[i], depth + 1, cx, kw);
        cx += kw;
      }
    };
    if (w[z] > 0) lay(z, anc.length, 0, W);
    cur = { va: va, vb: vb, w: w, total: w[0], drawn: boxes.length, boxes: boxes, W: W, H: (maxd + 1) * ROWH + 4 };
    fg.setAttribute('data-frames', JSON.stringify(boxes.map(function (b) {
      return [b.n, b.label, Math.round(w[b.n]), b.anc ? 1 : 0, Math.round(b.x), b.d, Math.round(b.w)];
    })));
    drawFlameInfo();
    drawSearch();
  }
  /* A frame's colour by its module and name, once per tree (not per draw). */
  var colors = { td: [], bu: [] };
  function colorOf(n) {
    var c = colors[G === BU ? 'bu' : 'td'];
    return c[n] || (c[n] = color(n));
  }
  function paintFlame(m) {
    var fg = $('fg'), cv = $('fg-canvas'), dpr = window.devicePixelRatio || 1;
    if (!cv) { cv = el('canvas', { id: 'fg-canvas' }); fg.appendChild(cv); }
    cv.width = cur.W * dpr; cv.height = cur.H * dpr;
    cv.style.width = cur.W + 'px'; cv.style.height = cur.H + 'px';
    fg.style.height = cur.H + 'px';
    var ctx = cv.getContext('2d');
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, cur.W, cur.H);
    ctx.font = '11px ui-monospace, monospace';
    ctx.textBaseline = 'middle';
    cur.boxes.forEach(function (b) {
      var y = b.d * ROWH;
      ctx.globalAlpha = b.anc ? 0.6 : 1;
      ctx.fillStyle = m && m[b.n] ? '#d36bff' : b.c;
      ctx.fillRect(b.x, y, Math.max(b.w - 1, 0.5), ROWH - 1);
      if (b.w > 30) {                      /* as many characters as fit (6.6 px each) */
        var fit = Math.floor((b.w - 6) / 6.6);
        ctx.fillStyle = '#000';
        ctx.fillText(b.label.length > fit ? b.label.slice(0, fit - 1) + '…' : b.label, b.x + 3, y + ROWH / 2);
      }
    });
    ctx.globalAlpha = 1;
  }
  /* The frame under a point of the canvas, or -1. */
  function frameAt(e) {
    var cv = $('fg-canvas');
    if (!cv || !cur) return -1;
    var r = cv.getBoundingClientRect(), x = e.clientX - r.left, d = Math.floor((e.clientY - r.top) / ROWH);
    for (var i = cur.boxes.length - 1; i >= 0; i--) {
      var b = cur.boxes[i];
      if (b.d === d && x >= b.x && x < b.x + b.w) return b.n;
    }
    return -1;
  }
  /* The search alone marks the frames drawn and sums what it matched, not
     counting a match inside another (parents come before their children). */
  function drawSearch() {
    var q = st.search.toLowerCase(), m = matchNodes(q), w = cur.w, matched = 0;
    paintFlame(m);
    if (m) {
      var inner = new Uint8Array(G.N);
      for (var n = 1; n < G.N; n++) {
        inner[n] = inner[G.parent[n]] | m[G.parent[n]];
        if (m[n] && !inner[n]) matched += w[n];
      }
    }
    var old = $('fg-matched');
    if (old) old.parentNode.removeChild(old);
    if (q) $('fg-info').insertBefore(el('span', { id: 'fg-matched', 'data-value': Math.round(matched) },
      '; search "' + st.search + '" matches ' + fmt(matched, isBytes()) + ' (' + pct(matched, cur.total) + ')'), $('fg-pruned'));
  }
  function what() {
    var c = costOf(st.cost);
    if (st.range) return (st.rmode === 'live' ? 'bytes live' : c.bytes ? 'bytes allocated' : 'calls') +
                         ' in ' + rangeLabel();
    return st.snap >= 0 ? 'bytes live at ' + snapLabel(st.snap) : c.what;
  }
  function drawFlameInfo() {
    var bytes = isBytes(), total = cur.total, z = st.zoom, info = $('fg-info'), w = cur.w;
    info.textContent = '';
    info.appendChild(el('span', { id: 'fg-total', 'data-value': Math.round(total),
                                  'data-snap': st.snap >= 0 ? TL.snapshot_times[st.snap] : '' },
                        'Total: ' + fmt(total, bytes) + ' ' + what()));
    var more = ' — ' + (G === BU ? 'bottom-up (callees first)' : 'top-down') + ', heap: ' + ($('heap').selectedOptions[0] || {}).textContent +
               ', tag: ' + ($('tag').selectedOptions[0] || {}).textContent;
    if (z) more += '; zoomed into ' + nodeName(z) + ' (' + fmt(w[z], bytes) + ', ' + pct(w[z], total) + ')';
    if (B) more += '; widths: ' + (st.width === 'a' ? 'baseline' : 'this run') +
                   ', colour: change from the baseline (red grew, blue shrank); baseline total ' +
                   fmt(cur.vb[0], bytes) + ', change ' + fmt(cur.va[0] - cur.vb[0], bytes);
    info.appendChild(document.createTextNode(more));
    var ps = T.stats;
    info.appendChild(el('div', { id: 'fg-pruned' },
      'Call tree: ' + hn(ps.nodes) + ' nodes from ' + hn(ps.rows) + ' (heap, stack, tag) rows; ' +
      (ps.pruned_rows ? hn(ps.kept) + ' nodes kept (each holds at least ' + (ps.frac * 100).toPrecision(2) +
        '% of some measure), ' + hn(ps.pruned_rows) + ' rows merged into [smaller stacks] frames (--prune 0 keeps them all; a click zooms into any frame); '
        : 'nothing pruned; ') + cur.drawn + ' frames drawn (wider than half a pixel: click a frame to see what it holds).'));
    $('fg-title').textContent = 'Flame graph' + (B ? ' (differential)' : '') + (G === BU ? ', bottom-up' : '') + ' — ' + what();
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
    lines.push(nodeLabel(n) + (G.module[n] ? '  in ' + S[G.module[n]] : '') + (G.where[n] ? '  (' + S[G.where[n]] + ')' : ''));
    lines.push(fmt(cur.w[n], bytes) + ' (' + pct(cur.w[n], cur.total) + ')' +
               (B ? '   baseline ' + fmt(cur.vb[n], bytes) + ', this run ' + fmt(cur.va[n], bytes) +
                    ', change ' + fmt(cur.va[n] - cur.vb[n], bytes) : ''));
    if (G.pruned[n]) lines.push('call paths too small to keep on their own (--prune), merged here: ' +
                                'vheap-analyze report --prune 0 keeps every path, and this page stays quick with them');
    lines.push(G === BU ? 'callers, innermost first:' : 'stack, innermost first:');
    var order = G === BU ? p : p.slice().reverse();
    for (var i = 0; i < order.length; i++)
      lines.push('  ' + nodeLabel(order[i]) + (G.where[order[i]] ? ' (' + S[G.where[order[i]]] + ')' : '') +
                 (G.module[order[i]] ? ' in ' + S[G.module[order[i]]] : ''));
    $('fg-detail').textContent = lines.join('\n');
  }
  $('fg').addEventListener('mousemove', function (e) {
    var n = frameAt(e);
    if (n >= 0 && n !== cur.hover) { cur.hover = n; detail(n); }
  });
  $('fg').addEventListener('click', function (e) {
    var n = frameAt(e);
    if (n < 0) return;
    st.zoom = n;
    if (n && !G.pruned[n]) st.fn = fnKey(n);
    update('fch'); detail(n);
  });

  /* ---- controls and the URL's fragment --------------------------------------------- */
  function fillSelect(sel, choices, all) {
    sel.textContent = '';
    sel.appendChild(el('option', { value: 'all' }, all));
    choices.forEach(function (c) { sel.appendChild(el('option', { value: String(c[0]) }, c[1])); });
  }
  function costClick(c) {
    var had = st.snap >= 0;
    st.cost = c.key; st.snap = -1;
    /* a cost redraws what depends on it, not the timeline or tables it leaves as they are */
    update('fc' + (B || st.range ? 'p' : '') + (had ? 't' : ''));
  }
  function buildControls() {
    var cs = $('costs');
    COSTS.forEach(function (c) {
      var b = el('button', { 'class': 'cost', 'data-cost': c.key, title: c.what }, c.label);
      b.onclick = function () { costClick(c); };
      cs.appendChild(b);
    });
    if (TL.snapshots.length && !B) {
      var b = el('button', { 'class': 'cost', 'data-cost': 'live', id: 'livebtn',
                             title: 'what was live at the time picked on the timeline' }, 'live at …');
      b.onclick = function () { if (st.snap < 0) st.snap = TL.snapshots.length - 1; st.range = null; update(); };
      cs.appendChild(b);
    }
    [['top', 'top-down', 'callers first: each frame holds what the functions it called allocated'],
     ['bottom', 'bottom-up', 'callees first: the functions that allocated at the bottom, their callers above']].forEach(function (v) {
      var b = el('button', { 'class': 'view', 'data-view': v[0], title: v[2] }, v[1]);
      b.onclick = function () { st.view = v[0]; st.zoom = 0; update('fh'); };
      $('views').appendChild(b);
    });
    fillSelect($('heap'), heapChoices(), 'all heaps');
    fillSelect($('tag'), tagChoices(), 'all tags');
    $('heap').onchange = function () { st.heap = this.value; st.zoom = 0; update(); };
    $('tag').onchange = function () { st.tag = this.value; st.zoom = 0; update(); };
    $('search').oninput = function () { st.search = this.value; update('s'); };
    $('reset').onclick = function () { st.zoom = 0; update('fch'); };
    if (B) { $('widthby').hidden = false; $('diffwidth').onchange = function () { st.width = this.value; update(); }; }
  }
  /* A node of the shown tree named v, the one with the most of the value. */
  function nodeNamed(v) {
    var best = 0, bv = -1, va = values(0);
    for (var n = 1; n < G.N; n++) if (nodeName(n) === v && va[n] > bv) { bv = va[n]; best = n; }
    return best;
  }
  function readHash() {
    var h = location.hash.replace(/^#/, ''), from = null, to = null, zoom = null, fn = null;
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
      else if (k === 'zoom') zoom = v;
      else if (k === 'fn') fn = v;
      else if (k === 'view') st.view = v === 'bottom' ? 'bottom' : 'top';
      else if (k === 'from') from = parseFloat(v) * (TL.by_event ? 1 : 1e9);
      else if (k === 'to') to = parseFloat(v) * (TL.by_event ? 1 : 1e9);
      else if (k === 'rmode') st.rmode = v === 'live' ? 'live' : 'alloc';
      else if (k === 'width') st.width = v === 'a' ? 'a' : 'b';
    });
    if (from === null && to === null && D.range) { from = D.range[0]; to = D.range[1]; }
    if (from !== null || to !== null) setRange(from === null ? 0 : from, to === null ? Infinity : to);
    G = st.view === 'bottom' ? bottomUp() : TD;
    if (fn !== null) { var f = nodeNamed(fn); st.fn = f ? fnKey(f) : null; }
    if (zoom !== null) st.zoom = nodeNamed(zoom);
  }
  function writeHash() {
    var parts = ['cost=' + (st.snap >= 0 ? 'live' : st.cost)];
    if (st.heap !== 'all') parts.push('heap=' + encodeURIComponent(st.heap));
    if (st.tag !== 'all') parts.push('tag=' + encodeURIComponent(st.tag));
    if (st.search) parts.push('search=' + encodeURIComponent(st.search));
    if (st.snap >= 0) parts.push('t=' + (TL.by_event ? TL.snapshot_times[st.snap] : TL.snapshot_times[st.snap] / 1e9));
    if (st.range) {
      var u = TL.by_event ? 1 : 1e9;
      parts.push('from=' + winStart(st.range[0]) / u, 'to=' + winEnd(st.range[1]) / u);
      if (st.rmode === 'live') parts.push('rmode=live');
    }
    if (st.view === 'bottom') parts.push('view=bottom');
    if (st.zoom) parts.push('zoom=' + encodeURIComponent(nodeName(st.zoom)));
    if (st.fn) parts.push('fn=' + encodeURIComponent(S[+st.fn.split(':')[0]]));
    history.replaceState(null, '', '#' + parts.join('&'));
  }
  function syncControls() {
    G = st.view === 'bottom' ? bottomUp() : TD;
    Array.prototype.forEach.call(document.querySelectorAll('button.cost'), function (b) {
      var on = st.snap >= 0 ? b.getAttribute('data-cost') === 'live' : b.getAttribute('data-cost') === st.cost;
      b.className = 'cost' + (on ? ' on' : '');
    });
    Array.prototype.forEach.call(document.querySelectorAll('button.view'), function (b) {
      b.className = 'view' + (b.getAttribute('data-view') === st.view ? ' on' : '');
    });
    if ($('livebtn')) $('livebtn').textContent = st.snap >= 0 ? 'live at ' + snapLabel(st.snap) : 'live at …';
    $('heap').value = st.heap; $('tag').value = st.tag; $('search').value = st.search;
  }

  /* ---- the time window ---------------------------------------------------------- */
  /* A window is a run of the spans between snapshots (the ticks under the
     timeline): span w runs from snapshot w-1 (or the start) to snapshot w.
     What was allocated in it is counted per span; what was live in it is
     what was live at its start and what was allocated in it. */
  function winStart(w) { return w > 0 ? TL.snapshot_times[w - 1] : 0; }
  function winEnd(w) { return TL.snapshot_times[w]; }
  function rangeLabel() { return xLabel(winStart(st.range[0])) + ' – ' + xLabel(winEnd(st.range[1])); }
  /* The spans covering [a, b] (ns, or events); an empty or outside window
     leaves the selection alone and says why. */
  function setRange(a, b) {
    var K = XC.windows, span = TL.by_event ? TL.events : TL.runtime, u = TL.by_event ? 1 : 1e9;
    st.rangeError = '';
    if (B || !K) { st.rangeError = 'this page has no time windows (' + (B ? 'a differential report' : '--snapshots 0') + ')'; return; }
    if (!(a < b) || !(a >= 0)) { st.rangeError = 'the window ' + a / u + ' – ' + b / u + ' is empty'; return; }
    if (a >= span) { st.rangeError = 'the window starts at ' + xLabel(a) + ', after the run ended (' + xLabel(span) + ')'; return; }
    var w0 = 0, w1 = K - 1, w;
    for (w = 0; w < K; w++) if (winStart(w) <= a && winEnd(w) > winStart(w)) w0 = w;
    for (w = K - 1; w >= 0; w--) if (winEnd(w) >= b) w1 = w;
    st.range = [w0, Math.max(w0, w1)];
    st.snap = -1;
  }
  function drawRangeBar() {
    var bar = $('range-bar'); bar.textContent = '';
    if (st.rangeError) bar.appendChild(el('span', { id: 'range-error', 'class': 'grew' }, 'Time window not shown: ' + st.rangeError + '. '));
    if (!st.range) {
      if (XC.windows && !B) bar.appendChild(document.createTextNode('Drag across the timeline to select a time window.'));
      return;
    }
    bar.appendChild(el('span', { id: 'range-info', 'data-from': winStart(st.range[0]), 'data-to': winEnd(st.range[1]) },
                       'Time window ' + rangeLabel() + ': the flame graph and the tables show what was '));
    [['alloc', 'allocated in it'], ['live', 'live in it']].forEach(function (m) {
      var b = el('button', { 'class': 'rmode' + (st.rmode === m[0] ? ' on' : ''), 'data-rmode': m[0] }, m[1]);
      b.onclick = function () { st.rmode = m[0]; update('fpc'); };
      bar.appendChild(b);
    });
    var c = el('button', { id: 'range-clear' }, 'whole run');
    c.onclick = function () { st.range = null; update(); };
    bar.appendChild(c);
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
    if (st.range) {                               /* the time window chosen */
      var rx0 = L + (W - L - Rm) * winStart(st.range[0]) / (P * TL.width), rx1 = L + (W - L - Rm) * winEnd(st.range[1]) / (P * TL.width);
      mk('rect', { id: 'tl-range', x: rx0, y: Tp, width: Math.max(1, Math.min(W - Rm, rx1) - rx0), height: H - Bm - Tp,
                   fill: '#3a7bd5', 'fill-opacity': '0.15', stroke: '#3a7bd5' });
    }
    /* A click picks a snapshot; a drag selects a time window. Only the
       plot's span (the run) can be selected: a press outside it is ignored. */
    var svgX = function (e) { var r = svg.getBoundingClientRect(); return (e.clientX - r.left) * W / r.width; };
    var clampX = function (x) { return Math.max(L, Math.min(W - Rm, x)); };
    var toX = function (x) { return (x - L) / (W - L - Rm) * P * TL.width; };
    var drag = null;
    svg.addEventListener('mousedown', function (e) {
      var x = svgX(e);
      if (x < L || x > W - Rm) return;
      e.preventDefault();
      drag = { x0: x, rect: mk('rect', { x: x, y: Tp, width: 1, height: H - Bm - Tp, fill: '#3a7bd5', 'fill-opacity': '0.25' }) };
    });
    svg.addEventListener('mousemove', function (e) {
      if (!drag) return;
      var x = clampX(svgX(e));
      drag.rect.setAttribute('x', Math.min(x, drag.x0)); drag.rect.setAttribute('width', Math.max(1, Math.abs(x - drag.x0)));
    });
    svg.addEventListener('mouseup', function (e) {
      if (!drag) return;
      var x = clampX(svgX(e)), x0 = drag.x0;
      drag = null;
      if (Math.abs(x - x0) < 4) {
        var p = Math.max(0, Math.min(P - 1, Math.floor((x - L) / (W - L - Rm) * P)));
        st.range = null; st.rangeError = '';
        st.snap = snapAt((p + 1) * TL.width);
      } else {
        setRange(toX(Math.min(x, x0)), toX(Math.max(x, x0)));
      }
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
  /* rows: heap, stack, tag, calls, allocated, temporary, peak, leaked, max live, frees,
     frames (innermost first), the index of the frame that names it */
  var TOPCOLS = [
    { t: 'heap', l: true, f: function (r) { return heapName(r[0]); } },
    { t: 'tag', l: true, f: function (r) { return tagName(r[2]); } },
    { t: 'calls', i: 3 }, { t: 'allocated', i: 4, b: true }, { t: 'temporary', i: 5 },
    { t: 'at peak', i: 6, b: true }, { t: 'leaked', i: 7, b: true }, { t: 'max live', i: 8, b: true },
    { t: 'function', l: true, f: function (r) { return who(r); } }
  ];
  var topSort = 6, topOpen = {};
  function heapName(id) { for (var i = 0; i < R.heaps.length; i++) if (R.heaps[i][0] === id) return R.heaps[i][1]; return '?'; }
  function tagName(id) { if (!id) return ''; for (var i = 0; i < R.tags.length; i++) if (R.tags[i][0] === id) return R.tags[i][1]; return '#' + id; }
  /* The frame that names a row: the loader's rule (frame_rule.h), written
     with the row, so a custom heap's row says who called its hook. */
  function who(r) {
    var f = r[10][r[11]] || r[10][0];
    return f ? f[0] + (f[1] ? ' (' + f[1] + ')' : '') : '';
  }
  function drawTop() {
    if (B) { drawDiffTop(); return; }
    if (st.range) { drawRangeTop(); return; }
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
      tr.appendChild(el('td', { 'class': 'l mono' }, stackText(x[0])));
      t.appendChild(tr);
    });
    box.textContent = ''; box.appendChild(t);
    $('top-info').textContent = out.length + ' call stacks whose ' + c.what + ' changed, biggest change first (stacks matched by function names and modules).';
  }

  /* A top-down node's stack, innermost first, six frames (whichever tree is shown). */
  function stackText(n) {
    var p = [];
    for (; n && p.length < 6; n = T.parent[n]) p.push(T.pruned[n] ? '[' + T.pruned[n] + ' smaller stacks]' : S[T.name[n]]);
    return p.join(' <- ');
  }
  /* In a time window: the tree's rows by what they allocated (or held live) in it. */
  function drawRangeTop() {
    var v = new Float64Array(nrows), out = [], box = $('top'), bytes = isBytes();
    forRows(0, function (r, x) { v[r] += x; });
    for (var r = 0; r < nrows; r++) if (v[r] > 0) out.push(r);
    out.sort(function (a, b) { return v[b] - v[a] || a - b; });
    out = out.slice(0, 200);
    var t = el('table', { id: 'toptable' }), hr = el('tr');
    ['heap', 'tag', what(), 'stack (innermost first)'].forEach(function (h, j) { hr.appendChild(el('th', { 'class': j === 2 ? '' : 'l' }, h)); });
    t.appendChild(hr);
    out.forEach(function (r) {
      var tr = el('tr', { 'data-node': rowNode[r] });
      tr.appendChild(el('td', { 'class': 'l' }, heapName(+rowHeap[r])));
      tr.appendChild(el('td', { 'class': 'l' }, tagName(+rowTag[r])));
      tr.appendChild(el('td', { 'data-value': v[r] }, fmt(v[r], bytes)));
      tr.appendChild(el('td', { 'class': 'l mono' }, stackText(rowNode[r])));
      t.appendChild(tr);
    });
    box.textContent = ''; box.appendChild(t);
    $('top-info').textContent = out.length + ' call stacks by ' + what() + ', largest first.';
  }

  /* ---- callers and callees of a function ------------------------------------------ */
  function fnKey(n) { return G.name[n] + ':' + G.module[n]; }
  function keyName(k) {
    if (k === 'root') return '(none: the outermost frame)';
    var p = k.split(':');
    return S[+p[0]] + (+p[1] ? ' in ' + S[+p[1]] : '');
  }
  /* Over the rows of the (top-down) tree and the value shown: the function's
     total (once per stack however often it recurs in it), its self part (its
     frame innermost), and per caller and callee what the stacks through that
     call hold, each call counted once per stack. */
  function callersOf(key) {
    var f = key.split(':'), fname = +f[0], fmod = +f[1], res = { total: 0, self: 0, callers: {}, callees: {} };
    forRows(0, function (r, x) {
      if (!x) return;
      var seen = {}, hit = false, below = -1;
      for (var a = rowNode[r]; a; below = a, a = T.parent[a]) {
        if (T.name[a] !== fname || T.module[a] !== fmod || T.pruned[a]) continue;
        if (!hit) { hit = true; res.total += x; if (below < 0) res.self += x; }
        var p = T.parent[a], kc = 'c' + (p ? T.name[p] + ':' + T.module[p] : 'root');
        if (!seen[kc]) { seen[kc] = 1; res.callers[kc.slice(1)] = (res.callers[kc.slice(1)] || 0) + x; }
        if (below >= 0) {
          var ke = 'e' + (T.pruned[below] ? 'pruned' : T.name[below] + ':' + T.module[below]);
          if (!seen[ke]) { seen[ke] = 1; res.callees[ke.slice(1)] = (res.callees[ke.slice(1)] || 0) + x; }
        }
      }
    });
    return res;
  }
  function drawCallers() {
    var box = $('cc'), info = $('cc-info');
    box.textContent = '';
    if (!st.fn) { info.textContent = 'Click a frame of the flame graph: its function\'s callers and callees show here.'; return; }
    var res = callersOf(st.fn), bytes = isBytes(), t = el('table', { id: 'cctable' }), hr = el('tr');
    ['', 'function', what(), 'share'].forEach(function (h, j) { hr.appendChild(el('th', { 'class': j < 2 ? 'l' : '' }, h)); });
    t.appendChild(hr);
    var row = function (role, label, v) {
      var tr = el('tr', { 'data-role': role, 'data-name': label });
      tr.appendChild(el('td', { 'class': 'l' }, role));
      tr.appendChild(el('td', { 'class': 'l mono' }, label));
      tr.appendChild(el('td', { 'data-value': Math.round(v) }, fmt(v, bytes)));
      tr.appendChild(el('td', {}, pct(v, res.total)));
      t.appendChild(tr);
    };
    row('function', keyName(st.fn), res.total);
    row('self', keyName(st.fn) + ' itself', res.self);
    [['caller', res.callers], ['callee', res.callees]].forEach(function (g) {
      Object.keys(g[1]).sort(function (a, b) { return g[1][b] - g[1][a]; }).slice(0, 50).forEach(function (k) {
        row(g[0], k === 'pruned' ? '[smaller stacks]' : keyName(k), g[1][k]);
      });
    });
    box.appendChild(t);
    info.textContent = 'Callers and callees of ' + keyName(st.fn) + ' by ' + what() +
      ': a row holds the stacks through that call (each counted once, recursion included); the callees and self add up to the total.';
  }

  /* ---- allocation sizes ---------------------------------------------------------- */
  function classLabel(c) {
    if (!c) return '0 – 8 B';
    if (c === XC.size_classes - 1) return '> ' + hb(Math.pow(2, c + 2));
    return hb(Math.pow(2, c + 2) + 1) + ' – ' + hb(Math.pow(2, c + 3));
  }
  /* The rows under the zoomed frame (null: every row). */
  function zoomRows() {
    var z = st.zoom, inz = new Uint8Array(nrows);
    if (!z) return null;
    if (G === BU) { for (var r = 0; r < nrows; r++) inz[r] = BU.leaf[rowNode[r]].indexOf(z) >= 0 ? 1 : 0; return inz; }
    var sub = new Uint8Array(N); sub[z] = 1;
    for (var n = z + 1; n < N; n++) sub[n] = sub[T.parent[n]];
    for (r = 0; r < nrows; r++) inz[r] = sub[rowNode[r]];
    return inz;
  }
  function drawHist() {
    var K = XC.windows, C = XC.size_classes, cnt = new Float64Array(C), byt = new Float64Array(C), inz = zoomRows(), c;
    for (c = 0; c < C; c++) {
      eachSparse(XS[2 * K + 2 * c], function (r, x) { if (!inz || inz[r]) cnt[c] += x; });
      eachSparse(XS[2 * K + 2 * c + 1], function (r, x) { if (!inz || inz[r]) byt[c] += x; });
    }
    var t = el('table', { id: 'histtable' }), hr = el('tr'), maxb = 1, maxc = 1;
    for (c = 0; c < C; c++) { maxb = Math.max(maxb, byt[c]); maxc = Math.max(maxc, cnt[c]); }
    ['size', 'calls', '', 'bytes', ''].forEach(function (h, j) { hr.appendChild(el('th', { 'class': j ? '' : 'l' }, h)); });
    t.appendChild(hr);
    for (c = 0; c < C; c++) {
      if (!cnt[c]) continue;
      var tr = el('tr', { 'data-class': c });
      tr.appendChild(el('td', { 'class': 'l' }, classLabel(c)));
      tr.appendChild(el('td', { 'data-value': cnt[c] }, hn(cnt[c])));
      var b1 = el('td', { 'class': 'bar' }); b1.appendChild(el('div', { style: 'width:' + (100 * cnt[c] / maxc).toFixed(1) + '%' })); tr.appendChild(b1);
      tr.appendChild(el('td', { 'data-value': byt[c] }, hb(byt[c])));
      var b2 = el('td', { 'class': 'bar' }); b2.appendChild(el('div', { 'class': 'b', style: 'width:' + (100 * byt[c] / maxb).toFixed(1) + '%' })); tr.appendChild(b2);
      t.appendChild(tr);
    }
    var box = $('hist'); box.textContent = ''; box.appendChild(t);
    $('hist-info').textContent = '';
    $('hist-info').appendChild(el('span', { id: 'hist-scope', 'data-node': st.zoom ? nodeName(st.zoom) : '' },
      'Allocations by requested size (powers of two), ' + (st.zoom ? 'of the stacks under ' + nodeName(st.zoom) + ' (zoomed)' : 'over the whole run') +
      ', heap and tag as chosen above' + (p0().sampled ? '; estimates (sampled capture)' : '') + '. Zoom into a frame for its stacks alone.'));
  }
  function p0() { var p = R.process[0] || []; return { sampled: !!p[13] }; }

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

  /* ---- ownership: what the allocator's own walk said owns the blocks ------ */
  function drawOwners() {
    var O = D.owners;
    if (!O) return;
    $('ownsec').hidden = false;
    var snaps = O.snapshots, box = $('owners'), info = $('own-info');
    var sel = el('select', { id: 'own-snap' });
    snaps.forEach(function (s) {
      sel.appendChild(el('option', { value: String(s[0]) },
        '#' + s[0] + ' ' + s[1] + ' at ' + hs(s[2]) + (s[3] ? '' : ' (incomplete)')));
    });
    sel.value = String(snaps[snaps.length - 1][0]);
    var draw = function () {
      var id = +sel.value, s = snaps.filter(function (x) { return x[0] === id; })[0];
      var prev = {}, rows = O.rows.filter(function (r) { return r[0] === id; });
      O.rows.forEach(function (r) { if (r[0] === id - 1) prev[r[1]] = r[4]; });
      var t = el('table', { id: 'owntable' }), hr = el('tr');
      ['owner', 'walk counted', 'live bytes', 'blocks', 'share', id > 1 ? 'change since #' + (id - 1) : '']
        .forEach(function (h, i) { hr.appendChild(el('th', i ? {} : { 'class': 'l' }, h)); });
      t.appendChild(hr);
      rows.forEach(function (r) {
        var tr = el('tr', { 'data-owner': r[2], 'data-walk': String(r[4]) });
        var name = el('td', { 'class': 'l', title: r[2] }, r[2].split('/').pop());
        name.style.paddingLeft = (8 + 16 * (r[3] - 1)) + 'px';
        tr.appendChild(name);
        tr.appendChild(el('td', {}, hb(r[4])));
        tr.appendChild(el('td', {}, hb(r[5])));
        tr.appendChild(el('td', {}, hn(r[6])));
        var share = el('td', { 'class': 'l' }), bar = el('span', { 'class': 'ownbar' });
        bar.style.width = Math.max(1, Math.round(200 * r[4] / Math.max(1, s[4]))) + 'px';
        share.appendChild(bar);
        share.appendChild(document.createTextNode(' ' + pct(r[4], s[4])));
        tr.appendChild(share);
        var d = id > 1 ? r[4] - (prev[r[1]] || 0) : null;
        tr.appendChild(el('td', d ? { 'class': d > 0 ? 'grew' : 'shrank' } : {},
                          d === null ? '' : (d > 0 ? '+' : '') + hb(d)));
        t.appendChild(tr);
      });
      box.textContent = '';
      box.appendChild(t);
      info.textContent = 'Snapshot #' + s[0] + ' "' + s[1] + '": the walk counted ' + hb(s[4]) +
        ' (' + hb(s[5]) + ' live in ' + hn(s[6]) + ' blocks vheap recorded)' +
        (s[3] ? '' : '; incomplete: the program died in the walk') + '. ';
      if (snaps.length > 1) info.appendChild(sel);
    };
    sel.onchange = draw;
    draw();
  }

  /* What to redraw: f flame graph, t timeline, p top table, c callers, h
     sizes, s the search alone (a keystroke redraws no frame). */
  function update(flags) {
    flags = flags || 'ftpch';
    syncControls();
    if (flags === 's') { if (cur) drawSearch(); writeHash(); return; }
    clearDetail();
    if (flags.indexOf('f') >= 0) drawFlame();
    if (flags.indexOf('t') >= 0) drawTimeline();
    if (flags.indexOf('p') >= 0) drawTop();
    if (flags.indexOf('c') >= 0) drawCallers();
    if (flags.indexOf('h') >= 0) drawHist();
    drawRangeBar();
    writeHash();
  }
  drawHead();
  buildControls();
  readHash();
  update();
  drawHeaps();
  drawFrag();
  drawOwners();
  window.addEventListener('resize', function () { drawFlame(); });
  document.documentElement.setAttribute('data-ready', '1');
  /* how long the page took to draw, since navigation began (for bench/run.sh) */
  document.documentElement.setAttribute('data-render-ms', String(Math.round(performance.now())));
})();
