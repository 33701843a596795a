// lineup --html renderer: reads the JSON view model (docs/html.md) from #lineup-data and draws
// it. Plain DOM, no libraries; data only ever reaches the page through textContent.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("lineup-data").textContent);
  var cls = data.cacheline_size;
  // Contention by default: HITM (for recordings, the simulated line transfers counted as HITM),
  // so that the members other CPUs load a written line from are the hot ones; writes when the
  // evidence has no HITM at all.
  var heat = "writes";
  var METRICS = { writes: "writes (stores + atomic RMW)", stores: "stores", loads: "loads",
    rmw: "atomic RMW", hitm: "HITM" };
  function metric(c, m) { return m === "writes" ? (c.stores || 0) + (c.rmw || 0) : (c[m] || 0); }
  // Viridis, sampled: colour-blind safe and monotonic in lightness.
  var RAMP = [[68, 1, 84], [72, 40, 120], [62, 74, 137], [49, 104, 142], [38, 130, 142],
    [31, 158, 137], [53, 183, 121], [109, 205, 89], [180, 222, 44], [253, 231, 37]];

  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    }
    if (text !== undefined && text !== null) { e.textContent = text; }
    return e;
  }
  function num(v) {
    if (v === null || v === undefined) { return "-"; }
    if (Math.abs(v) >= 100 || v === Math.round(v)) { return Math.round(v).toLocaleString("en-US"); }
    return v.toFixed(1);
  }
  function pct(v) {
    if (v === null || v === undefined) { return "-"; }
    return (v > 0 ? "+" : "") + v.toFixed(1) + "%";
  }
  function ramp(t) {
    t = Math.max(0, Math.min(1, t)) * (RAMP.length - 1);
    var i = Math.min(Math.floor(t), RAMP.length - 2), f = t - i;
    var a = RAMP[i], b = RAMP[i + 1];
    return [0, 1, 2].map(function (k) { return Math.round(a[k] + (b[k] - a[k]) * f); });
  }
  function rgb(c) { return "rgb(" + c[0] + "," + c[1] + "," + c[2] + ")"; }
  function textOn(c) {
    var l = (0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2]) / 255;
    return l > 0.45 ? "#000000" : "#ffffff";
  }
  function maxOf(which) {
    var m = 0;
    data.layouts.forEach(function (l) {
      l.cells.forEach(function (c) { m = Math.max(m, metric(c, which)); });
    });
    return m;
  }
  function kindName(c) { return c.kind === "field" ? c.name : c.kind; }
  function summary(c) {
    if (c.kind !== "field") {
      return c.kind + ", " + c.size + " bytes at offset " + c.offset;
    }
    return c.name + ": offset " + c.offset + ", " + c.size + " bytes, " + num(c.loads) +
      " loads, " + num(c.stores) + " stores, " + num(c.rmw) + " atomic RMW, " + num(c.hitm) +
      " HITM, " + c.cpus + " CPUs";
  }

  heat = maxOf("hitm") > 0 ? "hitm" : "writes";
  document.querySelectorAll('input[name="heat"]').forEach(function (r) { r.checked = r.value === heat; });

  // Where each member is in the first (current) layout, to mark the members another layout moves.
  var firstOffset = {};
  data.layouts[0].cells.forEach(function (c) { if (c.kind === "field") { firstOffset[c.name] = c.offset; } });
  function movedFrom(c, li) {
    if (li === 0 || c.kind !== "field" || !(c.name in firstOffset)) { return null; }
    return firstOffset[c.name] === c.offset ? null : firstOffset[c.name];
  }
  var ZERO_NOTE = "zero-size member (a flexible array or an empty struct): it takes no bytes, " +
    "the black bar marks its offset";
  // The full text of a cell, for its hover title and the table below the lines.
  function fullText(c, li) {
    var t = summary(c);
    if (c.size === 0) { t += " — " + ZERO_NOTE; }
    var from = movedFrom(c, li);
    if (from !== null) { t += " — moved: at offset " + from + " in " + data.layouts[0].name; }
    return t;
  }

  // Header notes.
  var notes = document.getElementById("notes");
  data.notes.forEach(function (n) { notes.appendChild(el("li", null, n)); });

  // Cost table (optimize, predict); a measured column when a replay filled one in.
  function drawCosts() {
    var box = document.getElementById("costs");
    var withCost = data.layouts.filter(function (l) { return l.cost; });
    if (withCost.length === 0) { return; }
    var measured = data.layouts.some(function (l) { return l.measured; });
    box.appendChild(el("h2", null, "Modeled cost" + (measured ? " and measured figures" : "")));
    var t = el("table", { id: "cost-table" });
    t.appendChild(el("caption", { class: "sr-only" }, "Cost of each layout"));
    var head = ["layout", "size", "lines", "false xfers", "true xfers", "false cycles",
      "true cycles", "locality", "total cycles", "vs current"];
    if (measured) { head = head.concat(["measured", "std", "runs", "measured vs current"]); }
    var tr = el("tr");
    head.forEach(function (h, i) { tr.appendChild(el("th", { scope: "col", class: i ? "" : "name" }, h)); });
    t.appendChild(tr);
    data.layouts.forEach(function (l) {
      var c = l.cost || {};
      var r = el("tr", { "data-cost-row": l.name });
      r.appendChild(el("th", { scope: "row", class: "name" }, l.name));
      [l.size, c.cachelines, c.false_transfers, c.true_transfers, c.false_cycles, c.true_cycles,
        c.locality_cycles, c.total_cycles].forEach(function (v) { r.appendChild(el("td", null, num(v))); });
      var ch = el("td", { class: c.change_pct < 0 ? "better" : (c.change_pct > 0 ? "worse" : "") }, pct(c.change_pct));
      r.appendChild(ch);
      if (measured) {
        var m = l.measured;
        if (m) {
          r.appendChild(el("td", null, num(m.mean) + " " + m.unit));
          r.appendChild(el("td", null, m.std_pct.toFixed(1) + "%"));
          r.appendChild(el("td", null, String(m.runs)));
          var good = m.change_pct === null ? 0 : (m.lower_is_better ? -m.change_pct : m.change_pct);
          r.appendChild(el("td", { class: good > 0 ? "better" : (good < 0 ? "worse" : "") }, pct(m.change_pct)));
        } else {
          for (var i = 0; i < 4; i++) { r.appendChild(el("td", null, "-")); }
        }
      }
      t.appendChild(r);
    });
    box.appendChild(t);
  }

  // The lines view: one panel per layout, one row per cache line, cells sized by bytes.
  var cellsByLayout = [];
  function drawLines() {
    var box = document.getElementById("lines-view");
    box.textContent = "";
    box.classList.toggle("single", data.layouts.length === 1);
    cellsByLayout = [];
    data.layouts.forEach(function (l, li) {
      var panel = el("section", { class: "layout", "data-layout": String(li), "aria-label": "layout " + l.name });
      panel.appendChild(el("h2", null, l.name + " (" + l.size + " bytes, " + l.lines.length + " cache lines)"));
      var list = [];
      l.lines.forEach(function (line) {
        var row = el("div", { class: "row", "data-line": String(line.index), role: "group" });
        row.appendChild(el("div", { class: "where" }, "line " + line.index + " bytes " + line.start + "\u2013" + line.end));
        var bytes = el("div", { class: "bytes" });
        var lineEnd = line.start + cls;
        var parts = [];
        l.cells.forEach(function (c) {
          var s = Math.max(c.offset, line.start), e = Math.min(c.offset + c.size, lineEnd);
          // Zero-size members (empty structs, flexible arrays) get a thin marker.
          var zero = c.size === 0 && c.offset >= line.start &&
            (c.offset < lineEnd || (c.offset === l.size && line.index === l.lines.length - 1));
          if (e <= s && !zero) { return; }
          if (zero) { e = s; }
          var d = el("div", {
            class: "cell " + c.kind + (s > c.offset ? " cont" : ""),
            "data-field": c.name, "data-kind": c.kind, "data-offset": String(c.offset),
            "data-size": String(c.size), "data-bytes": String(e - s), "data-start": String(s),
            "data-line": String(line.index), tabindex: "0", role: "button",
            "aria-label": summary(c) + (s > c.offset ? " (continued)" : ""),
            title: fullText(c, li)
          }, c.kind === "field" ? c.name : "");
          var from = movedFrom(c, li);
          if (from !== null) {
            d.classList.add("moved");
            d.setAttribute("data-moved-from", String(from));
          }
          d.style.flex = zero ? "0 0 4px" : (e - s) + " 0 0";
          if (zero) { d.classList.add("zero"); }
          d._cell = c;
          // A long member's later lines show heat only where the line itself is not cold.
          d._quiet = s > c.offset && (line.verdict === "cold" || line.verdict === "quiet");
          d._layout = li;
          bytes.appendChild(d);
          list.push(d);
          if (c.kind === "field") { parts.push(c.name + " (" + (e - s) + " bytes)"); }
        });
        var used = Math.min(lineEnd, l.size) - line.start;
        if (used < cls) {
          var pad = el("div", { class: "beyond", "aria-hidden": "true" });
          pad.style.flex = (cls - used) + " 0 0";
          bytes.appendChild(pad);
        }
        row.appendChild(bytes);
        var v = el("div", { class: "verdict " + line.verdict, "data-verdict": line.verdict,
          title: line.label + ": " + line.explanation });
        v.appendChild(el("b", null, line.label));
        v.appendChild(el("span", { class: "why" }, line.explanation));
        row.appendChild(v);
        row.appendChild(el("p", { class: "sr-only line-summary" }, "Line " + line.index + ", bytes " +
          line.start + " to " + line.end + ": " + line.label + ". " + line.explanation +
          ". Fields: " + (parts.length ? parts.join(", ") : "none") + "."));
        row.setAttribute("aria-label", "line " + line.index + ": " + line.label);
        panel.appendChild(row);
      });
      cellsByLayout.push(list);
      box.appendChild(panel);
    });
    paint();
  }

  function paint() {
    var max = maxOf(heat);
    cellsByLayout.forEach(function (list) {
      list.forEach(function (d) {
        var c = d._cell;
        if (c.kind !== "field") { return; }
        var v = metric(c, heat);
        if (v <= 0 || max <= 0 || d._quiet) {
          d.style.background = "var(--cold)";
          d.style.color = "var(--fg)";
        } else {
          var col = ramp(Math.log(1 + v) / Math.log(1 + max));
          d.style.background = rgb(col);
          d.style.color = textOn(col);
        }
      });
    });
    var lg = document.getElementById("legend");
    lg.textContent = "";
    lg.appendChild(el("span", null, METRICS[heat] + ": 0"));
    var r = el("span", { class: "ramp" });
    r.style.background = "linear-gradient(to right, " + RAMP.map(rgb).join(", ") + ")";
    lg.appendChild(r);
    lg.appendChild(el("span", null, num(max) + " (log scale)"));
    var s1 = el("span", { class: "swatch" });
    s1.style.background = "var(--cold)";
    lg.appendChild(s1);
    lg.appendChild(el("span", null, "none"));
    lg.appendChild(el("span", { class: "swatch cell hole" }));
    lg.appendChild(el("span", null, "hole"));
    lg.appendChild(el("span", { class: "swatch cell padding" }));
    lg.appendChild(el("span", null, "padding"));
    lg.appendChild(el("span", { class: "swatch zero-key", title: ZERO_NOTE }));
    lg.appendChild(el("span", { title: ZERO_NOTE }, "zero-size member"));
    if (data.layouts.length > 1) {
      lg.appendChild(el("span", { class: "swatch moved-key" }));
      lg.appendChild(el("span", null, "moved (vs " + data.layouts[0].name + ")"));
    }
  }

  // Every line of every layout in full: what the drawing may have to cut short.
  function drawLineTable() {
    var box = document.getElementById("line-table-view");
    box.appendChild(el("h2", null, "Every line in full"));
    var t = el("table", { id: "line-table" });
    t.appendChild(el("caption", { class: "sr-only" }, "Each cache line of each layout with its verdict and members"));
    var tr = el("tr");
    ["layout", "line", "bytes", "verdict", "explanation", "members"].forEach(function (h, i) {
      tr.appendChild(el("th", { scope: "col", class: i === 1 || i === 2 ? "" : "name" }, h));
    });
    t.appendChild(tr);
    data.layouts.forEach(function (l, li) {
      l.lines.forEach(function (line) {
        var r = el("tr", { "data-table-layout": String(li), "data-table-line": String(line.index) });
        r.appendChild(el("td", { class: "name" }, l.name));
        r.appendChild(el("td", null, String(line.index)));
        r.appendChild(el("td", null, line.start + "\u2013" + line.end));
        r.appendChild(el("td", { class: "name" }, line.label));
        r.appendChild(el("td", { class: "name why" }, line.explanation));
        var names = [];
        l.cells.forEach(function (c) {
          if (c.kind !== "field") { return; }
          var inLine = c.size === 0 ? Math.floor(c.offset / cls) === line.index :
            c.offset <= line.end && c.offset + c.size > line.start;
          if (!inLine) { return; }
          var from = movedFrom(c, li);
          names.push(c.name + (c.size === 0 ? " (zero-size)" : "") +
            (from !== null ? " (moved from " + from + ")" : ""));
        });
        r.appendChild(el("td", { class: "name" }, names.join(", ")));
        t.appendChild(r);
      });
    });
    box.appendChild(t);
  }

  // Tooltip and details.
  function detailsOf(c, layoutName, box) {
    box.textContent = "";
    box.appendChild(el("strong", null, (c.kind === "field" ? c.name : c.kind) + " \u2014 " + layoutName));
    var dl = el("dl");
    var rows = [["offset", c.offset], ["size", c.size + " bytes"],
      ["cache line", Math.floor(c.offset / cls) + (Math.floor((c.offset + c.size - 1) / cls) !== Math.floor(c.offset / cls) ? "\u2013" + Math.floor((c.offset + c.size - 1) / cls) : "")]];
    if (c.type_name) { rows.splice(0, 0, ["type", c.type_name]); }
    if (c.kind === "field") {
      rows = rows.concat([["loads", num(c.loads)], ["stores", num(c.stores)], ["rmw", num(c.rmw)],
        ["HITM", num(c.hitm)], ["CPUs", String(c.cpus)],
        ["functions", c.functions.length ? c.functions.join(", ") : "-"]]);
    }
    rows.forEach(function (kv) {
      dl.appendChild(el("dt", null, kv[0]));
      dl.appendChild(el("dd", { "data-key": kv[0] }, String(kv[1])));
    });
    box.appendChild(dl);
  }
  var tip = document.getElementById("tip");
  var cursor = null; // the cell the tooltip is about
  function showTip(d) {
    cursor = d;
    detailsOf(d._cell, data.layouts[d._layout].name, tip);
    tip.setAttribute("data-field", d._cell.name);
    tip.hidden = false;
    var r = d.getBoundingClientRect();
    var x = Math.min(r.left, window.innerWidth - 360), y = r.bottom + 6;
    if (y + 220 > window.innerHeight) { y = Math.max(0, r.top - 226); }
    tip.style.left = Math.max(0, x) + "px";
    tip.style.top = y + "px";
    d.setAttribute("aria-describedby", "tip");
  }
  function hideTip(d) {
    tip.hidden = true;
    if (d) { d.removeAttribute("aria-describedby"); }
  }
  function showDetails(d) {
    var box = document.getElementById("details");
    detailsOf(d._cell, data.layouts[d._layout].name, box);
    box.hidden = false;
  }

  // Keyboard: arrows move between cells, up/down keep the byte position.
  function move(d, key) {
    var list = cellsByLayout[d._layout];
    var i = list.indexOf(d);
    var target = null;
    if (key === "ArrowRight") { target = list[i + 1]; }
    if (key === "ArrowLeft") { target = list[i - 1]; }
    if (key === "Home") { target = list[0]; }
    if (key === "End") { target = list[list.length - 1]; }
    if (key === "ArrowDown" || key === "ArrowUp") {
      var line = Number(d.getAttribute("data-line")) + (key === "ArrowDown" ? 1 : -1);
      var at = Number(d.getAttribute("data-start")) - Number(d.getAttribute("data-line")) * cls + line * cls;
      list.forEach(function (x) {
        if (target || Number(x.getAttribute("data-line")) !== line) { return; }
        var s = Number(x.getAttribute("data-start")), e = s + Number(x.getAttribute("data-bytes"));
        if (at < e) { target = x; }
      });
    }
    if (target) {
      target.focus();
      showTip(target);
      return true;
    }
    return false;
  }
  var view = document.getElementById("lines-view");
  view.addEventListener("mouseover", function (ev) {
    var d = ev.target.closest(".cell");
    if (d && d._cell) { showTip(d); }
  });
  view.addEventListener("mouseout", function (ev) {
    var d = ev.target.closest(".cell");
    if (d) { hideTip(d); }
  });
  view.addEventListener("focusin", function (ev) {
    if (ev.target._cell) { showTip(ev.target); }
  });
  view.addEventListener("focusout", function (ev) { hideTip(ev.target); });
  view.addEventListener("keydown", function (ev) {
    var d = ev.target;
    if (!d._cell) { return; }
    if (ev.key === "Enter" || ev.key === " ") { showDetails(d); ev.preventDefault(); return; }
    if (ev.key === "Escape") { hideTip(d); document.getElementById("details").hidden = true; return; }
    if (move(d, ev.key)) { ev.preventDefault(); }
  });

  // The list view: every cell of one layout, sortable by any column.
  var sortKey = "offset", sortDir = 1, listLayout = 0;
  var COLS = [["name", "field"], ["kind", "kind"], ["offset", "offset"], ["size", "size"],
    ["line", "line"], ["loads", "loads"], ["stores", "stores"], ["rmw", "rmw"], ["hitm", "HITM"],
    ["cpus", "CPUs"], ["functions", "functions"]];
  function drawList() {
    var box = document.getElementById("list-view");
    box.textContent = "";
    var label = el("label", null, "Layout ");
    var sel = el("select", { id: "list-layout" });
    data.layouts.forEach(function (l, i) {
      var o = el("option", { value: String(i) }, l.name);
      if (i === listLayout) { o.selected = true; }
      sel.appendChild(o);
    });
    sel.addEventListener("change", function () { listLayout = Number(sel.value); drawList(); });
    label.appendChild(sel);
    box.appendChild(label);
    var layout = data.layouts[listLayout];
    var rows = layout.cells.map(function (c) {
      return { c: c, name: kindName(c), kind: c.kind, offset: c.offset, size: c.size,
        line: Math.floor(c.offset / cls), loads: c.loads, stores: c.stores, rmw: c.rmw,
        hitm: c.hitm, cpus: c.cpus, functions: c.functions.join(", ") };
    });
    rows.sort(function (a, b) {
      var x = a[sortKey], y = b[sortKey];
      var r = typeof x === "string" ? x.localeCompare(y) : x - y;
      return (r || a.offset - b.offset) * sortDir;
    });
    var t = el("table", { id: "field-table" });
    t.appendChild(el("caption", { class: "sr-only" }, "Fields of layout " + layout.name + ", sortable"));
    var tr = el("tr");
    COLS.forEach(function (col) {
      var th = el("th", { scope: "col", class: col[0] === "name" || col[0] === "functions" ? "name" : "",
        "aria-sort": sortKey === col[0] ? (sortDir > 0 ? "ascending" : "descending") : "none" });
      var b = el("button", { type: "button", "data-sort": col[0] },
        col[1] + (sortKey === col[0] ? (sortDir > 0 ? " \u25b2" : " \u25bc") : ""));
      b.addEventListener("click", function () {
        if (sortKey === col[0]) { sortDir = -sortDir; } else { sortKey = col[0]; sortDir = 1; }
        drawList();
        var again = document.querySelector('#field-table button[data-sort="' + col[0] + '"]');
        if (again) { again.focus(); }
      });
      th.appendChild(b);
      tr.appendChild(th);
    });
    t.appendChild(tr);
    rows.forEach(function (r) {
      var row = el("tr", { "data-list-field": r.c.name, "data-offset": String(r.offset), "data-kind": r.kind });
      COLS.forEach(function (col) {
        var v = r[col[0]];
        var text = typeof v === "number" && col[0] !== "offset" && col[0] !== "size" && col[0] !== "line" ? num(v) : String(v);
        row.appendChild(el(col[0] === "name" ? "th" : "td",
          col[0] === "name" ? { scope: "row", class: "name" } : (col[0] === "functions" ? { class: "name" } : null), text));
      });
      t.appendChild(row);
    });
    box.appendChild(t);
  }

  function setView(v) {
    document.getElementById("lines-view").hidden = v !== "lines";
    document.getElementById("line-table-view").hidden = v !== "lines";
    document.getElementById("list-view").hidden = v !== "list";
    document.querySelectorAll('input[name="view"]').forEach(function (r) { r.checked = r.value === v; });
  }
  function setHeat(h) {
    if (!METRICS[h]) { return; }
    heat = h;
    document.querySelectorAll('input[name="heat"]').forEach(function (r) { r.checked = r.value === h; });
    paint();
  }
  document.querySelectorAll('input[name="heat"]').forEach(function (r) {
    r.addEventListener("change", function () { setHeat(r.value); });
  });
  document.querySelectorAll('input[name="view"]').forEach(function (r) {
    r.addEventListener("change", function () { setView(r.value); });
  });

  drawCosts();
  drawLines();
  drawLineTable();
  drawList();

  // URL hash: #heat=hitm&view=list&sort=stores:desc&layout=1&hover=FIELD&keys=ArrowRight (the tests use it; handy for links).
  function applyHash() {
    var opts = {};
    location.hash.replace(/^#/, "").split("&").forEach(function (kv) {
      var i = kv.indexOf("=");
      if (i > 0) { opts[decodeURIComponent(kv.slice(0, i))] = decodeURIComponent(kv.slice(i + 1)); }
    });
    if (opts.heat) { setHeat(opts.heat); }
    if (opts.view) { setView(opts.view); }
    if (opts.sort) {
      // #sort=stores or #sort=stores:desc, as clicking the column's header does.
      var sk = opts.sort.split(":");
      if (COLS.some(function (c) { return c[0] === sk[0]; })) {
        sortKey = sk[0];
        sortDir = sk[1] === "desc" ? -1 : 1;
        drawList();
      }
    }
    if (opts.hover) {
      var li = Number(opts.layout || 0);
      var hit = (cellsByLayout[li] || []).filter(function (d) {
        return d._cell.name === opts.hover || d._cell.name.split("/").indexOf(opts.hover) >= 0;
      })[0];
      if (hit) {
        hit.focus();
        hit.classList.add("active");
        showTip(hit);
        // #keys=ArrowRight,Enter: key presses on the focused cell, as a user would type them.
        var at = hit;
        (opts.keys ? opts.keys.split(",") : []).forEach(function (k) {
          at.dispatchEvent(new KeyboardEvent("keydown", { key: k, bubbles: true }));
          at = cursor || at;
        });
      }
    }
  }
  applyHash();
  window.addEventListener("hashchange", applyHash);
  document.body.setAttribute("data-rendered", "yes");
}());
