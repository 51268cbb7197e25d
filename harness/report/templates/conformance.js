// gemmconf conformance page: matrix, filters, detail panel and plots, all from the JSON blob.
(function () {
  "use strict";

  const DATA = JSON.parse(document.getElementById("gemmconf-data").textContent);
  const RUN = DATA.run;
  const S = DATA.strings;
  const FAILING = new Set(DATA.failing);
  const F = {};
  DATA.fields.forEach(function (name, i) { F[name] = i; });
  const ORDER = ["failed", "error", "xpassed", "passed", "xfailed", "skipped"];
  const SHORT = { passed: "pass", failed: "FAIL", error: "ERROR", xpassed: "XPASS",
                  xfailed: "xfail", skipped: "skip" };
  const PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
                   "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"];
  const ITEMS_SHOWN = 300;

  function esc(text) {
    return String(text).replace(/[&<>"']/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c];
    });
  }
  function num(value) {  // non-finite floats travel as strings
    if (typeof value === "string") return Number(value);
    return typeof value === "number" ? value : null;
  }
  function fmt(value) {
    const v = num(value);
    if (v === null || v === undefined) return "";
    if (!isFinite(v)) return String(v);
    if (v === 0) return "0";
    const a = Math.abs(v);
    return (a >= 1e4 || a < 1e-3) ? v.toExponential(2) : String(Number(v.toPrecision(4)));
  }
  function el(tag, attrs, children) {
    const node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === "text") node.textContent = attrs[k];
      else if (k === "class") node.className = attrs[k];
      else node.setAttribute(k, attrs[k]);
    });
    (children || []).forEach(function (c) { if (c) node.appendChild(c); });
    return node;
  }
  function countsOf(list) {
    const counts = {};
    list.forEach(function (r) { counts[r.outcome] = (counts[r.outcome] || 0) + 1; });
    return counts;
  }
  function worst(counts) {
    if (ORDER.slice(0, 3).some(function (o) { return counts[o]; })) return "failing";
    if (counts.xfailed) return "xfailed";
    if (counts.passed) return "passed";
    return "skipped";
  }

  // ---- records -------------------------------------------------------------------------
  function field(row, name) {
    const v = row[F[name]];
    return v === undefined ? null : v;
  }
  function str(i) { return i === null ? null : S[i]; }
  // gemmconf.attribution's words
  const COMPUTED = { backend: "the backend's own code", pytorch: "PyTorch's aten kernels",
                     mixed: "partly PyTorch's aten kernels, partly the backend",
                     none: "nothing: the call raised before any GEMM kernel ran" };
  const INHERITED = { eager: "from eager: eager fails this item here too, and PyTorch computed it for the backend",
                      "torch.compile": "from torch.compile: it failed before the backend got the graph" };
  const devices = new Set();
  DATA.rows.forEach(function (row) { devices.add(str(field(row, "device"))); });
  const MULTI_DEVICE = devices.size > 1;

  const records = DATA.rows.map(function (row, index) {
    const r = {
      index: index, id: str(field(row, "id")), backend: str(field(row, "backend")),
      device: str(field(row, "device")), suite: str(field(row, "suite")),
      scenario: str(field(row, "scenario")), op: str(field(row, "op")),
      dtype: str(field(row, "dtype")), shape: str(field(row, "shape")),
      dims: field(row, "dims") === null ? null : DATA.dims[field(row, "dims")],
      axes: field(row, "axes") === null ? {} : DATA.axes[field(row, "axes")],
      markers: field(row, "markers") === null ? [] : DATA.markers[field(row, "markers")],
      source: str(field(row, "source")), outcome: DATA.outcomes[field(row, "outcome")],
      reason: str(field(row, "reason")), details: str(field(row, "details")), kind: str(field(row, "kind")), metrics: field(row, "metrics") || {},
      duration: field(row, "duration_s"),
      excerpt: field(row, "excerpt") === null ? null : DATA.excerpts[field(row, "excerpt")],
      skipClass: str(field(row, "skip_class")), seed: field(row, "seed"),
      targetArch: str(field(row, "target_arch")), flaky: field(row, "flaky") === true,
      computedBy: str(field(row, "computed_by")), inherited: str(field(row, "inherited")),
    };
    // failing: an outcome that can fail a run, unless the record says it does not (the xpass
    // of a non-strict expectation)
    r.failing = FAILING.has(r.outcome) && field(row, "fails") !== false;
    const nodeid = str(field(row, "nodeid"));
    r.nodeid = nodeid || nodeIdOf(r);
    r.column = MULTI_DEVICE ? r.backend + " @ " + r.device : r.backend;
    r.K = kOf(r);
    r.flops = flopsOf(r);
    return r;
  });

  // gemmconf.ids.node_id: the backend inside the brackets, `mm[fp32-8x8x8@eager]`, `mm_dyn[@eager]`
  function nodeIdOf(r) {
    const name = (r.id || "").split("/").slice(1).join("/");
    const open = name.indexOf("[");
    const base = open < 0 ? name : name.slice(0, open);
    const params = open < 0 ? "" : name.slice(open + 1).replace(/\]$/, "");
    return (r.source || "").replace(/:\d+$/, "") + "::" + base + "[" + params + "@" + r.backend + "]";
  }

  function kOf(r) {
    if (r.dims && r.dims.K !== undefined) return num(r.dims.K);
    const parts = String(r.shape || "").split("x");  // "MxNxK"
    const k = Number(parts[parts.length - 1]);
    return parts.length >= 3 && isFinite(k) ? k : null;
  }
  function flopsOf(r) {
    const d = r.dims;
    if (!d || d.M === undefined || d.N === undefined || d.K === undefined) return null;
    return 2 * num(d.M) * num(d.N) * num(d.K) * (d.B === undefined ? 1 : num(d.B));
  }

  const specOrder = Object.keys(RUN.backend_specs || {});
  const COLUMNS = Array.from(new Set(records.map(function (r) { return r.column; }))).sort(
    function (a, b) {
      const ia = specOrder.indexOf(a.split(" @ ")[0]), ib = specOrder.indexOf(b.split(" @ ")[0]);
      return ia !== ib ? ia - ib : (a < b ? -1 : a > b ? 1 : 0);
    });
  const AXES = Array.from(new Set([].concat.apply([], records.map(function (r) {
    return Object.keys(r.axes);
  })))).sort();
  function uniq(key) {
    const seen = new Set();
    records.forEach(function (r) { [].concat(key(r)).forEach(function (v) { seen.add(v); }); });
    return Array.from(seen).filter(function (v) { return v !== null; }).sort();
  }
  const DTYPES = uniq(function (r) { return r.dtype; });

  // ---- filters -------------------------------------------------------------------------
  const GROUPINGS = [
    ["scenario", "suite \u203a scenario", function (r) { return [r.suite, r.scenario]; }],
    ["scenario-dtype", "suite \u203a scenario \u203a dtype",
     function (r) { return [r.suite, r.scenario, r.dtype]; }],
    ["suite-op", "suite \u203a op", function (r) { return [r.suite, r.op]; }],
    ["op-dtype", "op \u203a dtype", function (r) { return [r.op, r.dtype]; }],
    ["dtype", "dtype", function (r) { return [r.dtype]; }],
  ].concat(AXES.map(function (axis) {
    return ["axis:" + axis, "axis: " + axis, function (r) {
      return [axis + "=" + (r.axes[axis] === undefined ? "(none)" : JSON.stringify(r.axes[axis]))];
    }];
  }));
  const state = { backend: "", op: "", dtype: "", marker: "", outcome: "", text: "",
                  group: "scenario" };
  const DEFAULTS = Object.assign({}, state);

  function fillSelect(id, values, allLabel, extra) {
    const select = document.getElementById(id);
    select.innerHTML = "";
    select.appendChild(el("option", { value: "", text: allLabel }));
    (extra || []).forEach(function (e) { select.appendChild(el("option", { value: e[0], text: e[1] })); });
    values.forEach(function (v) { select.appendChild(el("option", { value: v, text: v })); });
    return select;
  }
  fillSelect("f-backend", COLUMNS, "all");
  fillSelect("f-op", uniq(function (r) { return r.op; }), "all");
  fillSelect("f-dtype", DTYPES, "all");
  fillSelect("f-marker", uniq(function (r) { return r.markers; }), "all");
  fillSelect("f-outcome", DATA.outcomes, "all",
             [["failing", "failing"], ["not-passed", "not passed"]]);
  const groupSelect = document.getElementById("f-group");
  GROUPINGS.forEach(function (g) { groupSelect.appendChild(el("option", { value: g[0], text: g[1] })); });

  const CONTROLS = { backend: "f-backend", op: "f-op", dtype: "f-dtype", marker: "f-marker",
                     outcome: "f-outcome", text: "f-text", group: "f-group" };
  function readHash() {
    const params = new URLSearchParams(location.hash.replace(/^#/, ""));
    Object.keys(CONTROLS).forEach(function (k) { if (params.has(k)) state[k] = params.get(k); });
    if (!GROUPINGS.some(function (g) { return g[0] === state.group; })) state.group = "scenario";
  }
  function writeHash() {
    const params = new URLSearchParams();
    Object.keys(CONTROLS).forEach(function (k) { if (state[k] !== DEFAULTS[k]) params.set(k, state[k]); });
    const text = params.toString();
    try { history.replaceState(null, "", text ? "#" + text : location.pathname + location.search); }
    catch (e) { /* some file:// contexts refuse; the filters still work */ }
  }
  function syncControls() {
    Object.keys(CONTROLS).forEach(function (k) { document.getElementById(CONTROLS[k]).value = state[k]; });
  }
  function matches(r) {
    if (state.backend && r.column !== state.backend) return false;
    if (state.op && r.op !== state.op) return false;
    if (state.dtype && r.dtype !== state.dtype) return false;
    if (state.marker && r.markers.indexOf(state.marker) < 0) return false;
    if (state.outcome === "failing") { if (!r.failing) return false; }
    else if (state.outcome === "not-passed") { if (r.outcome === "passed") return false; }
    else if (state.outcome && r.outcome !== state.outcome) return false;
    if (state.text && (r.id || "").toLowerCase().indexOf(state.text.toLowerCase()) < 0) return false;
    return true;
  }

  // ---- matrix --------------------------------------------------------------------------
  const matrix = document.getElementById("matrix");
  const open = new Set();
  let groups = [];

  // A pass PyTorch's aten kernels computed (gemmconf.attribution): not the backend's own
  function byPyTorch(r) { return r.outcome === "passed" && r.computedBy === "pytorch"; }

  function cellContent(td, list) {
    const counts = countsOf(list);
    const total = list.length;
    if (!total) { td.classList.add("empty"); td.textContent = "\u2013"; return; }
    td.classList.add("worst-" + worst(counts));
    const pytorch = list.filter(byPyTorch).length;
    const bar = el("div", { class: "bar" });
    const line = el("div", { class: "counts" });
    ORDER.forEach(function (o) {
      if (!counts[o]) return;
      const seg = el("span", { class: "o-" + o, title: counts[o] + " " + o });
      seg.style.width = (100 * counts[o] / total) + "%";
      bar.appendChild(seg);
      line.appendChild(el("span", { class: "c c-" + o, text: counts[o] + " " + SHORT[o] }));
      if (o === "passed" && pytorch) {
        line.appendChild(el("span", { class: "c c-pytorch", text: "(" + pytorch + " by PyTorch)" }));
      }
    });
    td.appendChild(bar);
    td.appendChild(line);
    td.title = ORDER.filter(function (o) { return counts[o]; })
      .map(function (o) {
        return counts[o] + " " + o + (o === "passed" && pytorch ? " (" + pytorch + " computed by PyTorch)" : "");
      }).join(", ");
  }

  function renderMatrix(visible) {
    const grouping = GROUPINGS.find(function (g) { return g[0] === state.group; });
    const byKey = new Map();
    visible.forEach(function (r) {
      const key = grouping[2](r).map(function (v) { return v === null ? "(none)" : v; }).join(" \u203a ");
      if (!byKey.has(key)) byKey.set(key, []);
      byKey.get(key).push(r);
    });
    groups = Array.from(byKey.keys()).sort().map(function (k) { return { key: k, records: byKey.get(k) }; });
    const columns = COLUMNS.filter(function (c) { return !state.backend || c === state.backend; });

    const thead = matrix.tHead;
    thead.innerHTML = "";
    const head = el("tr", {}, [el("th", { text: grouping[1] }), el("th", { text: "items", class: "n" })]);
    columns.forEach(function (c) { head.appendChild(el("th", { text: c, "data-column": c })); });
    thead.appendChild(head);

    const tbody = matrix.tBodies[0];
    tbody.innerHTML = "";
    groups.forEach(function (group) {
      const tr = el("tr", { class: "group-row", "data-key": group.key, tabindex: "0" });
      const ids = new Set(group.records.map(function (r) { return r.id; }));
      tr.appendChild(el("td", { class: "key", text: group.key }));
      tr.appendChild(el("td", { class: "n", text: String(ids.size) }));
      columns.forEach(function (c) {
        const td = el("td", { class: "cell", "data-column": c });
        cellContent(td, group.records.filter(function (r) { return r.column === c; }));
        tr.appendChild(td);
      });
      tr.addEventListener("click", function () { toggle(group.key); });
      tr.addEventListener("keydown", function (e) {
        if (e.key === "Enter" || e.key === " ") { e.preventDefault(); toggle(group.key); }
      });
      tbody.appendChild(tr);
      if (open.has(group.key)) {
        tr.classList.add("open");
        tbody.appendChild(itemsRow(group, columns));
      }
    });
    document.getElementById("matrix-empty").hidden = groups.length > 0;
  }

  function toggle(key) {
    if (open.has(key)) open.delete(key); else open.add(key);
    renderMatrix(visibleRecords());
  }

  function itemsRow(group, columns, limit) {
    limit = limit || ITEMS_SHOWN;
    const byId = new Map();
    group.records.forEach(function (r) {
      if (!byId.has(r.id)) byId.set(r.id, {});
      byId.get(r.id)[r.column] = r;
    });
    const ids = Array.from(byId.keys()).sort();
    const table = el("table", { class: "items" });
    const head = el("tr", {}, [el("th", { text: "item" }), el("th", { text: "shape" })]);
    columns.forEach(function (c) { head.appendChild(el("th", { text: c })); });
    table.appendChild(head);
    ids.slice(0, limit).forEach(function (id) {
      const cells = byId.get(id);
      const any = cells[Object.keys(cells)[0]];
      const tr = el("tr", { class: "item-row", "data-id": id },
                    [el("td", { class: "item-id", text: id }), el("td", { text: any.shape || "" })]);
      columns.forEach(function (c) {
        const r = cells[c];
        const td = el("td");
        if (r) {
          const ratio = num(r.metrics.err_ratio);
          const chip = el("button", { type: "button", class: "chip o-" + r.outcome,
                                      "data-index": String(r.index),
                                      title: r.outcome + (byPyTorch(r) ? " (computed by PyTorch)" : "") +
                                             (r.kind ? " (" + r.kind + ")" : "") +
                                             (r.flaky ? " (flaky)" : "") +
                                             (r.inherited ? " (inherited from " + r.inherited + ")" : "") +
                                             (r.reason ? ": " + r.reason : ""),
                                      text: SHORT[r.outcome] + (byPyTorch(r) ? " (PyTorch)" : "") +
                                            (r.flaky ? " flaky" : "") +
                                            (ratio !== null ? " " + fmt(ratio) : "") });
          chip.addEventListener("click", function (e) { e.stopPropagation(); openDetail(r); });
          td.appendChild(chip);
        }
        tr.appendChild(td);
      });
      table.appendChild(tr);
    });
    const note = el("div", { class: "muted", text: "per backend: outcome and err_ratio; click one for its details" });
    const td = el("td", { colspan: String(columns.length + 2) }, [note, table]);
    if (ids.length > limit) {
      const more = el("button", { type: "button", class: "more",
                                  text: "show all " + ids.length + " items" });
      more.addEventListener("click", function (e) {
        e.stopPropagation();
        const row = td.parentNode;
        row.parentNode.replaceChild(itemsRow(group, columns, ids.length), row);
      });
      td.appendChild(more);
    }
    return el("tr", { class: "items-row" }, [td]);
  }

  // ---- detail panel --------------------------------------------------------------------
  const detail = document.getElementById("detail");
  const detailBody = document.getElementById("detail-body");

  // Every value in a reproduce command comes from the results file, which anyone may have
  // written: each is one shell word (single quotes, which a shell expands nothing inside), and
  // none can pass for an option of pytest's (a leading "-" becomes "./-" or "--opt=-...").
  function shellQuote(text) {
    text = String(text);
    // bare only where no shell reads anything into it ("=cmd" at a word's start is a path in zsh)
    return /^[A-Za-z0-9_@%+:,.\/-][A-Za-z0-9_@%+=:,.\/-]*$/.test(text) ? text : alwaysQuoted(text);
  }
  function alwaysQuoted(text) { return "'" + String(text).replace(/'/g, "'\\''") + "'"; }
  function option(name, value) {
    value = String(value);
    return value.charAt(0) === "-" ? " " + name + "=" + shellQuote(value) : " " + name + " " + shellQuote(value);
  }
  function integer(value) {  // a seed: a number, or the digits of one too large for a number
    return Number.isSafeInteger(value) || /^-?[0-9]+$/.test(String(value)) && typeof value === "string"
      ? value : null;
  }
  function reproCommand(r) {
    const spec = (RUN.backend_specs || {})[r.backend] || r.backend;
    const seed = integer(r.seed) !== null ? r.seed : (integer(RUN.seed) !== null ? RUN.seed : 0);
    const target = r.targetArch || RUN.target_arch;
    const nodeid = String(r.nodeid);
    return "pytest " + alwaysQuoted(nodeid.charAt(0) === "-" ? "./" + nodeid : nodeid) +
      option("--backend", spec) + option("--seed", seed) + (target ? option("--target-arch", target) : "");
  }
  function kv(rows) {
    const table = el("table");
    rows.forEach(function (row) {
      if (row[1] === null || row[1] === undefined || row[1] === "") return;
      table.appendChild(el("tr", {}, [el("td", { text: row[0] }), el("td", { text: String(row[1]) })]));
    });
    return table;
  }

  function dimsText(dims) {
    const order = ["B", "M", "N", "K"];
    const names = order.filter(function (k) { return k in dims; })
      .concat(Object.keys(dims).filter(function (k) { return order.indexOf(k) < 0; }).sort());
    return names.map(function (k) { return k + "=" + dims[k]; }).join(" ");
  }

  function openDetail(r) {
    detailBody.innerHTML = "";
    detailBody.appendChild(el("h3", { text: r.id }));
    detailBody.appendChild(el("p", {}, [
      el("span", { class: "badge o-" + r.outcome, text: r.outcome }),
      r.flaky ? el("span", { class: "badge", text: "flaky",
                             title: "failed on some runs with the same seed, passed on others" }) : null,
      el("span", { class: "muted", text: " on " + r.backend + (r.device ? " (" + r.device + ")" : "") }),
    ]));
    if (r.kind) {
      detailBody.appendChild(el("h4", { text: "kind" }));
      detailBody.appendChild(el("p", { class: "kind", text: r.kind }));
    }
    if (r.inherited) {
      detailBody.appendChild(el("h4", { text: "inherited" }));
      detailBody.appendChild(el("p", { class: "inherited", text: INHERITED[r.inherited] || r.inherited }));
    }
    if (r.computedBy) {
      const kernels = Object.keys(r.metrics.aten_gemm_kernels || {});
      detailBody.appendChild(el("h4", { text: "computed by" }));
      detailBody.appendChild(el("p", { class: "computed-by",
                                       text: (COMPUTED[r.computedBy] || r.computedBy) +
                                             (kernels.length ? " (aten kernels: " + kernels.join(", ") + ")" : "") }));
    }
    if (r.reason) {
      detailBody.appendChild(el("h4", { text: "reason" }));
      detailBody.appendChild(el("pre", { class: "reason", text: r.reason }));
    }
    if (r.details) {
      detailBody.appendChild(el("h4", { text: "details" }));
      detailBody.appendChild(el("pre", { class: "reason", text: r.details }));
    }
    detailBody.appendChild(el("h4", { text: "reproduce" }));
    const command = reproCommand(r);
    const code = el("code", { class: "repro-command", text: command });
    const copy = el("button", { type: "button", text: "copy" });
    copy.addEventListener("click", function () {
      function selectIt() {
        const range = document.createRange();
        range.selectNodeContents(code);
        const sel = window.getSelection();
        sel.removeAllRanges();
        sel.addRange(range);
      }
      if (navigator.clipboard && navigator.clipboard.writeText) {
        navigator.clipboard.writeText(command).then(function () { copy.textContent = "copied"; }, selectIt);
      } else selectIt();
    });
    detailBody.appendChild(el("div", { class: "repro" }, [code, copy]));

    const metricNames = Object.keys(r.metrics);
    if (metricNames.length) {
      detailBody.appendChild(el("h4", { text: "metrics" }));
      const preferred = ["err_ratio", "max_abs_err", "max_rel_err", "recompiles", "compiles",
                         "code_checks", "tflops", "vs_cublas"];
      const names = preferred.filter(function (n) { return n in r.metrics; })
        .concat(metricNames.filter(function (n) { return preferred.indexOf(n) < 0; }).sort());
      detailBody.appendChild(kv(names.map(function (n) {
        const v = r.metrics[n];
        return [n, typeof v === "number" || typeof v === "string" && !isNaN(Number(v)) ? fmt(v) : JSON.stringify(v)];
      })));
    }
    detailBody.appendChild(el("h4", { text: "item" }));
    detailBody.appendChild(kv([
      ["suite", r.suite], ["scenario", r.scenario], ["op", r.op], ["dtype", r.dtype],
      ["shape", r.shape + (r.dims ? "  (" + dimsText(r.dims) + ")" : "")],
      ["axes", Object.keys(r.axes).map(function (k) { return k + "=" + JSON.stringify(r.axes[k]); }).join(", ")],
      ["markers", r.markers.join(", ")], ["source", r.source], ["nodeid", r.nodeid],
      ["duration", r.duration === null ? null : fmt(r.duration) + " s"],
      ["needs hardware", r.skipClass],
    ]));
    const siblings = records.filter(function (o) { return o.id === r.id && o !== r; });
    if (siblings.length) {
      detailBody.appendChild(el("h4", { text: "other backends" }));
      const box = el("div", { class: "siblings" });
      siblings.forEach(function (o) {
        const b = el("button", { type: "button", class: "chip o-" + o.outcome,
                                 text: o.column + ": " + o.outcome });
        b.addEventListener("click", function () { openDetail(o); });
        box.appendChild(b);
      });
      detailBody.appendChild(box);
    }
    if (r.excerpt) {
      detailBody.appendChild(el("h4", { text: "generated code (excerpt)" }));
      detailBody.appendChild(el("pre", { class: "excerpt", text: r.excerpt }));
    } else if (r.failing) {
      detailBody.appendChild(el("p", { class: "muted", text: "The backend exposed no generated code for this item." }));
    }
    detail.hidden = false;
    detail.scrollTop = 0;
    detail.setAttribute("data-index", String(r.index));
  }
  function closeDetail() { detail.hidden = true; }
  document.getElementById("detail-close").addEventListener("click", closeDetail);
  document.addEventListener("keydown", function (e) { if (e.key === "Escape") closeDetail(); });

  // ---- plots ---------------------------------------------------------------------------
  const W = 560, H = 300, PAD = { l: 56, r: 12, t: 10, b: 38 };

  function noData(id, text) {
    document.querySelector("#" + id + " .plot-body").innerHTML = '<div class="no-data">' + esc(text) + "</div>";
  }
  function logTicks(lo, hi, base) {
    const ticks = [];
    for (let e = Math.floor(lo); e <= Math.ceil(hi); e++) ticks.push(e);
    const step = Math.max(1, Math.ceil(ticks.length / 8));
    return ticks.filter(function (t, i) { return i % step === 0; }).map(function (t) {
      return { at: t, label: base === 2 ? String(Math.pow(2, t)) : (t >= -2 && t <= 3 ? String(Math.pow(10, t)) : "1e" + t) };
    });
  }
  function linTicks(lo, hi) {
    const span = hi - lo || 1;
    const step = Math.pow(10, Math.floor(Math.log10(span / 5)));
    const nice = [1, 2, 5, 10].map(function (m) { return m * step; }).find(function (s) { return span / s <= 6; });
    const ticks = [];
    for (let v = Math.ceil(lo / nice) * nice; v <= hi + 1e-9; v += nice) ticks.push({ at: v, label: fmt(v) });
    return ticks;
  }
  function axes(xTicks, yTicks, sx, sy, xLabel, yLabel) {
    let out = "";
    yTicks.forEach(function (t) {
      const y = sy(t.at);
      out += '<line class="grid" x1="' + PAD.l + '" x2="' + (W - PAD.r) + '" y1="' + y + '" y2="' + y + '"/>' +
        '<text x="' + (PAD.l - 4) + '" y="' + (y + 3) + '" text-anchor="end">' + esc(t.label) + "</text>";
    });
    xTicks.forEach(function (t) {
      const x = sx(t.at);
      out += '<line class="grid" y1="' + PAD.t + '" y2="' + (H - PAD.b) + '" x1="' + x + '" x2="' + x + '"/>' +
        '<text x="' + x + '" y="' + (H - PAD.b + 14) + '" text-anchor="middle">' + esc(t.label) + "</text>";
    });
    out += '<line class="axis" x1="' + PAD.l + '" x2="' + (W - PAD.r) + '" y1="' + (H - PAD.b) + '" y2="' + (H - PAD.b) + '"/>' +
      '<line class="axis" x1="' + PAD.l + '" x2="' + PAD.l + '" y1="' + PAD.t + '" y2="' + (H - PAD.b) + '"/>' +
      '<text x="' + ((PAD.l + W - PAD.r) / 2) + '" y="' + (H - 6) + '" text-anchor="middle">' + esc(xLabel) + "</text>" +
      '<text transform="translate(12,' + ((PAD.t + H - PAD.b) / 2) + ') rotate(-90)" text-anchor="middle">' + esc(yLabel) + "</text>";
    return out;
  }
  function svg(body, height) {
    return '<svg viewBox="0 0 ' + W + " " + (height || H) + '" role="img">' + body + "</svg>";
  }
  function legend(entries) {
    return '<div class="legend">' + entries.map(function (e) {
      return '<span class="sw" style="background:' + e[1] + '"></span>' + esc(e[0]);
    }).join("") + "</div>";
  }
  function wirePoints(id) {
    document.querySelectorAll("#" + id + " .pt").forEach(function (node) {
      node.addEventListener("click", function () { openDetail(records[Number(node.getAttribute("data-index"))]); });
    });
  }

  // err_ratio histogram per dtype: log10 bins from 1e-2 to 1e2, outer bins catch the rest
  function plotRatio(visible) {
    const LO = -2, HI = 2, STEP = 0.25, NB = (HI - LO) / STEP + 2;
    const rows = new Map();
    visible.forEach(function (r) {
      const v = num(r.metrics.err_ratio);
      if (v === null || isNaN(v)) return;
      let bin = v <= 0 ? 0 : Math.floor((Math.log10(v) - LO) / STEP) + 1;
      bin = Math.max(0, Math.min(NB - 1, bin));
      if (!rows.has(r.dtype)) rows.set(r.dtype, []);
      rows.get(r.dtype).push({ bin: bin, failing: r.failing, xfail: r.outcome === "xfailed" });
    });
    if (!rows.size) return noData("plot-ratio", "no err_ratio in the shown records");
    const dtypes = Array.from(rows.keys()).sort();
    const rowH = 34, top = 6, height = top + dtypes.length * rowH + 34;
    const x0 = 90, x1 = W - 12, bw = (x1 - x0) / NB;
    let body = "";
    dtypes.forEach(function (dtype, i) {
      const y0 = top + (i + 1) * rowH - 4;
      const bins = [];
      for (let b = 0; b < NB; b++) bins.push({ ok: 0, bad: 0, xf: 0 });
      rows.get(dtype).forEach(function (p) {
        const b = bins[p.bin];
        if (p.failing) b.bad++; else if (p.xfail) b.xf++; else b.ok++;
      });
      // bar height grows with the square root of its count, so that a few failures still show
      const peak = Math.sqrt(Math.max.apply(null, bins.map(function (b) { return b.ok + b.bad + b.xf; })));
      body += '<text x="' + (x0 - 6) + '" y="' + (y0 - 10) + '" text-anchor="end">' + esc(dtype) +
        " (" + rows.get(dtype).length + ")</text>";
      body += '<line class="grid" x1="' + x0 + '" x2="' + x1 + '" y1="' + y0 + '" y2="' + y0 + '"/>';
      bins.forEach(function (b, j) {
        let y = y0;
        const total = b.ok + b.bad + b.xf;
        const height = (rowH - 8) * Math.sqrt(total) / peak;
        [["ok", "var(--pass)"], ["xf", "var(--xfail)"], ["bad", "var(--fail)"]].forEach(function (part) {
          const n = b[part[0]];
          if (!n) return;
          const h = height * n / total;
          y -= h;
          body += '<rect x="' + (x0 + j * bw + 1) + '" y="' + y + '" width="' + (bw - 2) + '" height="' + h +
            '" fill="' + part[1] + '"><title>' + esc(dtype + ": " + n + (part[0] === "bad" ? " failing" : "")) + "</title></rect>";
        });
      });
    });
    const yAxis = top + dtypes.length * rowH;
    const one = x0 + (1 + (0 - LO) / STEP) * bw;
    body += '<line class="ref" x1="' + one + '" x2="' + one + '" y1="' + top + '" y2="' + yAxis + '"/>';
    [[0, "\u2264" + "0.01"], [1 + 1 / STEP * 1, "0.1"], [1 + 2 / STEP, "1"], [1 + 3 / STEP, "10"], [NB - 1, "\u2265100"]]
      .forEach(function (t) {
        body += '<text x="' + (x0 + t[0] * bw + (t[0] === 0 || t[0] === NB - 1 ? bw / 2 : 0)) + '" y="' + (yAxis + 14) +
          '" text-anchor="middle">' + esc(t[1]) + "</text>";
      });
    body += '<text x="' + ((x0 + x1) / 2) + '" y="' + (yAxis + 30) + '" text-anchor="middle">err_ratio (log scale; dashed: 1)</text>';
    document.querySelector("#plot-ratio .plot-body").innerHTML = svg(body, height) +
      legend([["passed", "var(--pass)"], ["xfailed", "var(--xfail)"], ["failing", "var(--fail)"]]);
  }

  // an error metric against K, log-log, one colour per dtype; failing items drawn as crosses
  function plotK(visible) {
    const metric = document.getElementById("k-metric").value;
    const pts = [];
    let zeros = 0, noK = 0;
    visible.forEach(function (r) {
      const v = num(r.metrics[metric]);
      if (v === null || isNaN(v) || !isFinite(v)) return;
      if (!(r.K > 0)) { noK++; return; }
      if (v <= 0) zeros++;
      pts.push({ r: r, x: Math.log2(r.K), v: v });
    });
    if (!pts.length) return noData("plot-k", "no " + metric + " with K > 0 in the shown records");
    const positive = pts.filter(function (p) { return p.v > 0; }).map(function (p) { return Math.log10(p.v); });
    let ylo = positive.length ? Math.floor(Math.min.apply(null, positive)) : -1;
    const yhi = positive.length ? Math.ceil(Math.max.apply(null, positive)) : 0;
    if (zeros) ylo -= 1;  // a band below the smallest error for exact results
    const xs = pts.map(function (p) { return p.x; });
    const xlo = Math.floor(Math.min.apply(null, xs)), xhi = Math.max(Math.ceil(Math.max.apply(null, xs)), xlo + 1);
    const sx = function (x) { return PAD.l + (x - xlo) / (xhi - xlo) * (W - PAD.l - PAD.r); };
    const sy = function (y) { return H - PAD.b - (y - ylo) / ((yhi - ylo) || 1) * (H - PAD.t - PAD.b); };
    const colour = {};
    DTYPES.forEach(function (d, i) { colour[d] = PALETTE[i % PALETTE.length]; });
    const yTicks = logTicks(zeros ? ylo + 1 : ylo, yhi, 10);
    if (zeros) yTicks.unshift({ at: ylo, label: "0" });
    let body = axes(logTicks(xlo, xhi, 2), yTicks, sx, sy, "K", metric);
    pts.forEach(function (p) {
      const x = sx(p.x) + ((p.r.index * 7919) % 9 - 4) * 0.6;  // a little jitter: many items share K
      const y = sy(p.v > 0 ? Math.log10(p.v) : ylo);
      const tip = '<title>' + esc(p.r.id + " @ " + p.r.column + "\nK=" + p.r.K + " " + metric + "=" + fmt(p.v) + " (" + p.r.outcome + ")") + "</title>";
      const c = colour[p.r.dtype];
      if (p.r.failing) {
        body += '<path class="pt" data-index="' + p.r.index + '" d="M' + (x - 4) + " " + (y - 4) + "l8 8m0 -8l-8 8" +
          '" stroke="' + c + '" stroke-width="2">' + tip + "</path>";
      } else {
        body += '<circle class="pt" data-index="' + p.r.index + '" cx="' + x + '" cy="' + y + '" r="2.6" fill="' + c +
          '" fill-opacity="0.6">' + tip + "</circle>";
      }
    });
    const shown = DTYPES.filter(function (d) { return pts.some(function (p) { return p.r.dtype === d; }); });
    document.querySelector("#plot-k .plot-body").innerHTML = svg(body) +
      legend(shown.map(function (d) { return [d, colour[d]]; })) +
      '<div class="legend">\u00d7 failing item' + (noK ? "; " + noK + " item(s) with K = 0 or no K not drawn" : "") + "</div>";
    wirePoints("plot-k");
  }

  // TFLOP/s against 2*B*M*N*K, one colour per backend, the cuBLAS baseline as grey diamonds
  function plotPerf(visible) {
    const pts = visible.filter(function (r) {
      const t = num(r.metrics.tflops);
      return t !== null && isFinite(t) && r.flops > 0;
    });
    if (!pts.length) {
      const any = records.some(function (r) { return num(r.metrics.tflops) !== null; });
      return noData("plot-perf", any ? "no benchmark data in the shown records"
                                     : "no benchmark data (these results carry no metrics.tflops)");
    }
    const base = [];
    pts.forEach(function (r) {  // the baseline as measured, else from the speed ratio
      const measured = num(r.metrics.cublas_tflops), ratio = num(r.metrics.vs_cublas);
      if (measured !== null && isFinite(measured)) base.push({ r: r, t: measured });
      else if (ratio && isFinite(ratio) && ratio > 0) base.push({ r: r, t: num(r.metrics.tflops) / ratio });
    });
    const xs = pts.map(function (r) { return Math.log10(r.flops); });
    const ys = pts.map(function (r) { return num(r.metrics.tflops); }).concat(base.map(function (b) { return b.t; }));
    const xlo = Math.floor(Math.min.apply(null, xs)), xhi = Math.max(Math.ceil(Math.max.apply(null, xs)), xlo + 1);
    const yhi = Math.max.apply(null, ys) * 1.08 || 1;
    const sx = function (x) { return PAD.l + (x - xlo) / (xhi - xlo) * (W - PAD.l - PAD.r); };
    const sy = function (y) { return H - PAD.b - y / yhi * (H - PAD.t - PAD.b); };
    let body = axes(logTicks(xlo, xhi, 10), linTicks(0, yhi), sx, sy, "FLOPs per call (2\u00b7B\u00b7M\u00b7N\u00b7K)", "TFLOP/s");
    base.forEach(function (b) {
      const x = sx(Math.log10(b.r.flops)), y = sy(b.t);
      body += '<path d="M' + x + " " + (y - 4) + "l4 4l-4 4l-4 -4z" + '" fill="#9aa3ad"><title>' +
        esc("cuBLAS " + fmt(b.t) + " TFLOP/s for " + b.r.shape) + "</title></path>";
    });
    const colour = {};
    COLUMNS.forEach(function (c, i) { colour[c] = PALETTE[i % PALETTE.length]; });
    pts.forEach(function (r) {
      body += '<circle class="pt" data-index="' + r.index + '" cx="' + sx(Math.log10(r.flops)) + '" cy="' +
        sy(num(r.metrics.tflops)) + '" r="3" fill="' + colour[r.column] + '" fill-opacity="0.75"><title>' +
        esc(r.id + " @ " + r.column + "\n" + fmt(r.metrics.tflops) + " TFLOP/s" +
            (r.metrics.vs_cublas !== undefined ? ", " + fmt(r.metrics.vs_cublas) + "x cuBLAS" : "")) +
        "</title></circle>";
    });
    const shown = COLUMNS.filter(function (c) { return pts.some(function (r) { return r.column === c; }); });
    document.querySelector("#plot-perf .plot-body").innerHTML = svg(body) +
      legend(shown.map(function (c) { return [c, colour[c]]; }).concat(base.length ? [["cuBLAS", "#9aa3ad"]] : []));
    wirePoints("plot-perf");
  }

  // ---- wiring --------------------------------------------------------------------------
  function visibleRecords() { return records.filter(matches); }
  function stickyOffset() {  // the matrix header sticks just below the filter bar
    const height = document.getElementById("filters").offsetHeight;
    document.documentElement.style.setProperty("--filters-h", height + "px");
  }
  window.addEventListener("resize", stickyOffset);

  function update() {
    const visible = visibleRecords();
    renderMatrix(visible);
    plotRatio(visible);
    plotK(visible);
    plotPerf(visible);
    document.getElementById("f-status").textContent =
      "showing " + visible.length + " of " + records.length + " records in " + groups.length + " rows";
    writeHash();
  }
  Object.keys(CONTROLS).forEach(function (k) {
    const control = document.getElementById(CONTROLS[k]);
    let timer = null;
    if (k === "text") {
      control.addEventListener("input", function () {
        clearTimeout(timer);
        timer = setTimeout(function () { state[k] = control.value; update(); }, 150);
      });
    } else {
      control.addEventListener("change", function () { state[k] = control.value; update(); });
    }
  });
  document.getElementById("k-metric").addEventListener("change", function () { plotK(visibleRecords()); });
  document.getElementById("f-reset").addEventListener("click", function () {
    Object.assign(state, DEFAULTS);
    open.clear();
    syncControls();
    update();
  });

  readHash();
  syncControls();
  update();
  stickyOffset();
  window.gemmconf = { records: records, state: state, update: update, openDetail: openDetail, ready: true };
  document.documentElement.setAttribute("data-ready", "true");
})();
