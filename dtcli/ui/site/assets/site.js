/* dt docs: draws the lineage graph of index.html, laid out left to right by dagre (shipped
   beside this file), and filters it by name or tag. Every text goes in as textContent. */
(function () {
  "use strict";
  var SVG = "http://www.w3.org/2000/svg";
  var LABEL_FONT = '600 13px system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif';
  var SUB_FONT = '11px system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif';
  var PAD = 12, HEIGHT = 44, BAND = 6;

  var holder = document.getElementById("graph");
  var data = JSON.parse(document.getElementById("graph-data").textContent);
  var measure = document.createElement("canvas").getContext("2d");
  var scale = 1, svg = null, size = null;

  function make(name, attrs, parent) {
    var el = document.createElementNS(SVG, name);
    Object.keys(attrs || {}).forEach(function (k) { el.setAttribute(k, attrs[k]); });
    if (parent) { parent.appendChild(el); }
    return el;
  }

  function textWidth(text, font) {
    measure.font = font;
    return measure.measureText(text).width;
  }

  function subText(node) {
    return (node.frozen ? "\u2744 " : "") + node.sub;
  }

  function layout() {
    var g = new dagre.graphlib.Graph();
    g.setGraph({ rankdir: "LR", nodesep: 16, ranksep: 64, edgesep: 10, marginx: 20, marginy: 20 });
    g.setDefaultEdgeLabel(function () { return {}; });
    data.nodes.forEach(function (n) {
      var inner = Math.max(textWidth(n.id, LABEL_FONT), textWidth(subText(n), SUB_FONT));
      g.setNode(n.id, { width: Math.ceil(inner) + 2 * PAD + (n.frozen ? BAND : 0), height: HEIGHT, node: n });
    });
    data.edges.forEach(function (e) {
      if (g.hasNode(e[0]) && g.hasNode(e[1])) { g.setEdge(e[0], e[1]); }
    });
    dagre.layout(g);
    return g;
  }

  // Edges leave a node on its right and reach the next on its left; inside a column of the
  // layout they run level (dagre keeps that slot free for them), and they bend only in the
  // gaps between columns, so no edge crosses a node.
  function columns(g) {
    var cols = {};
    g.nodes().forEach(function (id) {
      var b = g.node(id), key = Math.round(b.x), c = cols[key] || { half: 0 };
      c.half = Math.max(c.half, b.width / 2);
      cols[key] = c;
    });
    return function (x) {
      var c = cols[Math.round(x)];
      return c ? { left: x - c.half, right: x + c.half } : null;
    };
  }

  function edgePath(g, e, column) {
    var s = g.node(e.v), t = g.node(e.w), inner = g.edge(e).points.slice(1, -1);
    var p = [[s.x + s.width / 2, s.y], [column(s.x).right, s.y]];
    // a bend point in a column of nodes keeps the edge in the slot dagre left free; the ones
    // between columns (where dagre makes room for edge labels) only add wiggles: skipped
    inner.forEach(function (q) { var c = column(q.x); if (c) { p.push([c.left, q.y], [c.right, q.y]); } });
    p.push([column(t.x).left, t.y], [t.x - t.width / 2, t.y]);
    var d = "M" + p[0] + " L" + p[1];
    for (var i = 1; i + 1 < p.length; i += 2) {
      var a = p[i], b = p[i + 1], mid = (a[0] + b[0]) / 2;
      d += " C" + mid + "," + a[1] + " " + mid + "," + b[1] + " " + b[0] + "," + b[1];
      if (i + 2 < p.length) { d += " L" + p[i + 2]; }
    }
    return d;
  }

  function draw(g) {
    size = { width: Math.ceil(g.graph().width), height: Math.ceil(g.graph().height) };
    svg = make("svg", { "class": "graph", viewBox: "0 0 " + size.width + " " + size.height, role: "img",
                        "aria-label": "lineage graph of sources and dynamic tables" });
    var defs = make("defs", {}, svg);
    var marker = make("marker", { id: "arrow", viewBox: "0 0 10 10", refX: "9", refY: "5", markerWidth: "7",
                                  markerHeight: "7", orient: "auto-start-reverse" }, defs);
    make("path", { d: "M0,0 L10,5 L0,10 z", fill: "#8c959f" }, marker);
    var edges = make("g", { "class": "edges" }, svg), column = columns(g);
    g.edges().forEach(function (e) {
      make("path", { "class": "edge", d: edgePath(g, e, column), "marker-end": "url(#arrow)",
                     "data-from": e.v, "data-to": e.w }, edges);
    });
    var nodes = make("g", { "class": "nodes" }, svg);
    g.nodes().forEach(function (id) {
      var box = g.node(id), n = box.node;
      var link = make("a", { href: n.href, "class": "node state-" + n.state + " kind-" + n.kind,
                             "data-name": n.id, transform: "translate(" + (box.x - box.width / 2) + "," +
                             (box.y - box.height / 2) + ")" }, nodes);
      var title = make("title", {}, link);
      title.textContent = n.id + " (" + (n.kind === "dynamic_table" ? n.state.toLowerCase() : n.kind) + "): " +
        n.sub + (n.tags.length ? "; tags: " + n.tags.join(", ") : "");
      make("rect", { "class": "box", width: box.width, height: box.height, rx: n.kind === "dynamic_table" ? 6 : 14 }, link);
      var x = PAD;
      if (n.frozen) {
        make("rect", { "class": "frozen-band", width: BAND, height: box.height - 2, x: 1, y: 1, rx: 3 }, link);
        x += BAND;
      }
      var label = make("text", { "class": "label", x: x, y: 18 }, link);
      label.textContent = n.id;
      var sub = make("text", { "class": "sub", x: x, y: 34 }, link);
      sub.textContent = subText(n);
    });
    holder.appendChild(svg);
    // no taller than the graph needs, no taller than most of the window: it scrolls beyond
    holder.style.height = Math.max(160, Math.min(size.height + 24, window.innerHeight * 0.72)) + "px";
    setScale(1);
    // start where the lineage starts: the top node of the leftmost column in view (dagre
    // centres each column, so a big graph's top-left corner is often empty)
    var first = null;
    g.nodes().forEach(function (id) {
      var b = g.node(id);
      if (!first || b.x - b.width / 2 < first.x - first.width / 2 - 1 ||
          (Math.abs(b.x - b.width / 2 - (first.x - first.width / 2)) <= 1 && b.y < first.y)) { first = b; }
    });
    if (first) { holder.scrollTo(0, Math.max(0, first.y - 40)); }
    svg.setAttribute("data-ready", "1");
  }

  function setScale(value) {
    scale = Math.max(0.05, Math.min(3, value));
    svg.setAttribute("width", Math.round(size.width * scale));
    svg.setAttribute("height", Math.round(size.height * scale));
  }

  function fit() {
    setScale(Math.min((holder.clientWidth - 4) / size.width, (holder.clientHeight - 4) / size.height, 1));
  }

  function matches(node, query) {
    if (!query) { return true; }
    var tags = node.tags.map(function (t) { return String(t).toLowerCase(); });
    if (query.indexOf("tag:") === 0) {
      var tag = query.slice(4);
      return tags.some(function (t) { return t.indexOf(tag) !== -1; });
    }
    return node.id.toLowerCase().indexOf(query) !== -1 ||
      tags.some(function (t) { return t.indexOf(query) !== -1; });
  }

  // centre a node in the canvas, scrolling the canvas only (the search box stays in view)
  function reveal(el) {
    var box = el.getBoundingClientRect(), frame = holder.getBoundingClientRect();
    holder.scrollBy(box.left + box.width / 2 - (frame.left + frame.width / 2),
                    box.top + box.height / 2 - (frame.top + frame.height / 2));
  }

  function filter(text) {
    var query = text.trim().toLowerCase(), shown = {}, count = 0, first = null;
    data.nodes.forEach(function (n) { if (matches(n, query)) { shown[n.id] = true; count++; } });
    svg.querySelectorAll(".node").forEach(function (el) {
      var on = shown[el.getAttribute("data-name")] === true;
      el.classList.toggle("dim", !on);
      el.classList.toggle("match", on && query !== "");
      if (on && query && first === null) { first = el; }
    });
    svg.querySelectorAll(".edge").forEach(function (el) {
      el.classList.toggle("dim", !(shown[el.getAttribute("data-from")] && shown[el.getAttribute("data-to")]));
    });
    document.getElementById("search-count").textContent =
      query ? count + " of " + data.nodes.length + " match" : data.nodes.length + " nodes";
    if (first) { reveal(first); }
    return first;
  }

  draw(layout());
  var search = document.getElementById("search");
  search.addEventListener("input", function () { filter(search.value); });
  search.addEventListener("keydown", function (event) {
    if (event.key === "Enter") {
      var first = filter(search.value);
      if (first) { window.location.href = first.getAttribute("href"); }
    }
  });
  document.querySelectorAll("[data-zoom]").forEach(function (button) {
    button.addEventListener("click", function () {
      var how = button.getAttribute("data-zoom");
      if (how === "in") { setScale(scale * 1.25); }
      else if (how === "out") { setScale(scale / 1.25); }
      else if (how === "fit") { fit(); }
      else { setScale(1); }
    });
  });
  // drag the background to pan
  var drag = null;
  holder.addEventListener("pointerdown", function (event) {
    if (event.button !== 0 || event.target.closest(".node")) { return; }
    drag = { x: event.clientX, y: event.clientY, left: holder.scrollLeft, top: holder.scrollTop };
    holder.setPointerCapture(event.pointerId);
    holder.classList.add("panning");
  });
  holder.addEventListener("pointermove", function (event) {
    if (drag) { holder.scrollTo(drag.left - (event.clientX - drag.x), drag.top - (event.clientY - drag.y)); }
  });
  holder.addEventListener("pointerup", function () { drag = null; holder.classList.remove("panning"); });
  holder.addEventListener("wheel", function (event) {
    if (event.ctrlKey) { event.preventDefault(); setScale(scale * (event.deltaY < 0 ? 1.1 : 1 / 1.1)); }
  }, { passive: false });
  filter("");
})();
