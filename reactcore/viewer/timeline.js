// The timeline of a reactcore run: ReactcoreTimeline.render(element, timeline) draws the
// JSON of reactcore.viewer.Timeline (Timeline.to_json()) into element, and can be called
// again with a newer timeline (a live page redraws this way). Plain DOM, no dependencies:
// one absolutely placed div per bar, left and width proportional to time.
"use strict";
var ReactcoreTimeline = (function () {
  var ROW = 18, LABEL = 190, AXIS = 24;
  var STATES = [
    ["tl-model", "model call (white line: streamed output)"],
    ["tl-seg tl-seg-queued", "queued for a slot"],
    ["tl-seg tl-seg-approval", "waiting for approval"],
    ["tl-bar tl-state-running", "running"],
    ["tl-bar tl-state-finished", "finished"],
    ["tl-bar tl-state-error", "error"],
    ["tl-bar tl-state-timed_out", "timed out"],
    ["tl-bar tl-state-cancelled", "cancelled"],
    ["tl-bar tl-state-unfinished", "unfinished"],
    ["tl-bar tl-state-not_run", "not run"],
    ["tl-retry", "model call retried"]
  ];

  function esc(text) {
    return String(text).replace(/[&<>"]/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c];
    });
  }

  function seconds(t, timed) {
    if (!timed) return "#" + Math.round(t);
    if (t === 0) return "0";
    if (Math.abs(t) < 1) return +(t * 1000).toPrecision(3) + " ms";
    if (t < 120) return +t.toPrecision(4) + " s";
    return Math.floor(t / 60) + " min " + Math.round(t % 60) + " s";
  }

  function tickStep(scale) {  // a round number of seconds about every 90 px
    var raw = 90 / scale, power = Math.pow(10, Math.floor(Math.log10(raw)));
    var steps = [1, 2, 5, 10];
    for (var i = 0; i < steps.length; i++) if (steps[i] * power >= raw) return steps[i] * power;
    return 10 * power;
  }

  function legend() {
    return STATES.map(function (s) {
      return '<span><i class="' + s[0] + '" style="position:relative;margin:0"></i>' + esc(s[1]) + "</span>";
    }).join("");
  }

  function summary(tl) {
    var o = tl.outcome, words = {
      finished: "finished", failed: "failed", cancelled: "cancelled",
      interrupted: "waiting for approval", running: "running (no end in the log yet)"
    };
    var calls = tl.tools.length, lanes = tl.lanes.filter(function (l) { return l.kind === "tools"; }).length, parts = [
      '<span class="tl-' + o.status + '">run ' + esc(words[o.status]) + "</span>",
      esc(seconds(tl.duration, tl.timed)), tl.models.length + " model calls",
      calls + " tool calls in " + lanes + " lanes", tl.events + " events"
    ];
    if (o.error) parts.push(esc(o.error));
    return parts.join(" · ");
  }

  function toolTip(s, timed) {
    var lines = [s.name + "  (" + s.call_id + ")" + (s.agent ? "  in " + s.agent : ""), "state: " + s.state.replace("_", " ")];
    s.segments.forEach(function (g) {
      lines.push(g.kind + ": " + seconds(g.start, timed) + " → " + seconds(g.end, timed) + "  (" + seconds(g.end - g.start, timed) + ")");
    });
    if (s.duration !== null) lines.push("measured by the run: " + seconds(s.duration, true));
    if (s.reason) lines.push(s.reason);
    if (s.arguments) lines.push("arguments: " + s.arguments);
    if (s.response && s.response !== s.reason) lines.push("answer: " + s.response);
    return lines.join("\n");
  }

  function modelTip(m, timed) {
    var lines = ["model call " + m.iteration + (m.purpose !== "agent" ? " (" + m.purpose + ")" : "") + (m.agent ? "  in " + m.agent : ""),
      "state: " + m.state, seconds(m.start, timed) + " → " + seconds(m.end, timed) + "  (" + seconds(m.end - m.start, timed) + ")",
      "streamed: " + m.deltas + " deltas, " + m.characters + " characters", "tool calls named: " + m.calls];
    if (m.tokens !== null) lines.push("tokens: " + m.tokens);
    m.retries.forEach(function (r) {
      lines.push("retry " + r.attempt + " at " + seconds(r.t, timed) + ": " + r.reason + (r.model ? " → " + r.model : ""));
    });
    if (m.text) lines.push("text: " + m.text);
    return lines.join("\n");
  }

  function sparkline(m) {
    var span = m.end - m.start, most = 0, points = [];
    m.progress.forEach(function (p) { most = Math.max(most, p[1]); });
    if (!most || !span || m.progress.length < 2) return "";
    m.progress.forEach(function (p) {
      points.push(((p[0] - m.start) / span * 100).toFixed(2) + "," + (11 - p[1] / most * 10).toFixed(2));
    });
    return '<svg viewBox="0 0 100 12" preserveAspectRatio="none"><polyline points="' + points.join(" ") + '"/></svg>';
  }

  function draw(root, tl, zoom) {
    var started = performance.now();
    var scroll = root.querySelector(".tl-scroll");
    var width = Math.max(200, (scroll.clientWidth || 900) - LABEL - 24) * zoom;
    var scale = width / tl.duration, tips = [], html = [];
    var x = function (t) { return (LABEL + t * scale).toFixed(2); };
    var w = function (a, b) { return Math.max(0, (b - a) * scale).toFixed(2); };
    var top = function (lane) { return (lane * ROW) + "px"; };
    var tip = function (text) { tips.push(text); return ' data-i="' + (tips.length - 1) + '"'; };
    var height = tl.lanes.length * ROW, step = tl.timed ? tickStep(scale) : Math.max(1, tickStep(scale)), ticks = [], grid = [];
    for (var t = 0; t <= tl.duration + 1e-9; t += step) {
      ticks.push('<div class="tl-tick" data-t="' + t + '" style="left:' + x(t) + 'px">' + esc(seconds(t, tl.timed)) + "</div>");
      grid.push('<div class="tl-grid" style="left:' + x(t) + 'px"></div>');
    }
    html.push('<div class="tl-canvas" style="width:' + (LABEL + width + 16) + 'px">');
    html.push('<div class="tl-axis"><div class="tl-label" style="height:24px">' + (tl.timed ? "time" : "event number") + "</div>" + ticks.join("") + "</div>");
    html.push('<div class="tl-body" style="position:relative;height:' + height + 'px">');
    html.push('<div class="tl-rows">');
    tl.lanes.forEach(function (lane, i) {
      html.push('<div class="tl-row" style="top:' + top(i) + '"></div>');
    });
    html.push("</div>" + grid.join(""));
    tl.waits.forEach(function (v) {
      html.push('<div class="tl-wait" style="left:' + x(v.start) + "px;width:" + w(v.start, v.end) + "px;top:" + top(v.lane) + '"' +
        tip("waiting for approval of " + v.calls.join(", ") + "\n" + seconds(v.start, tl.timed) + " → " + seconds(v.end, tl.timed) + (v.answered ? "" : " (not answered in the log)")) + "></div>");
    });
    tl.models.forEach(function (m) {
      html.push('<div class="tl-model tl-state-' + m.state + '" data-kind="model" data-key="' + esc(m.key) + '" style="left:' + x(m.start) + "px;width:" + w(m.start, m.end) +
        "px;top:" + top(m.lane) + '"' + tip(modelTip(m, tl.timed)) + ">" + sparkline(m) + "</div>");
      m.retries.forEach(function (r) {
        html.push('<div class="tl-retry" style="left:' + x(r.t) + "px;top:" + top(m.lane) + '"' + tip(modelTip(m, tl.timed)) + "></div>");
      });
    });
    tl.tools.forEach(function (s) {
      var text = tip(toolTip(s, tl.timed)), data = ' data-key="' + esc(s.key) + '" data-call="' + esc(s.call_id) + '" data-lane="' + s.lane + '" data-state="' + s.state + '"';
      s.segments.forEach(function (g) {
        var style = ' style="left:' + x(g.start) + "px;width:" + w(g.start, g.end) + "px;top:" + top(s.lane) + '"';
        if (g.kind === "running") {
          html.push('<div class="tl-bar tl-state-' + s.state + '" data-kind="tool"' + data + style + text + ">" + esc(s.name) + "</div>");
        } else {
          html.push('<div class="tl-seg tl-seg-' + g.kind + " tl-state-" + s.state + '" data-kind="' + g.kind + '"' + data + style + text + "></div>");
        }
      });
    });
    html.push('<div class="tl-end tl-' + tl.outcome.status + '" style="left:' + x(tl.outcome.t) + 'px"></div>');
    html.push('<div class="tl-labels" style="position:sticky;left:0;width:' + LABEL + 'px;z-index:2">');
    tl.lanes.forEach(function (lane) {
      html.push('<div class="tl-label' + (lane.kind === "model" ? " tl-model-lane" : "") + '" style="padding-left:' + (6 + 14 * lane.depth) + 'px" title="' + esc(lane.label) + '">' + esc(lane.label) + "</div>");
    });
    html.push("</div></div></div>");
    scroll.innerHTML = html.join("");
    root.tips = tips;
    root.dataset.pxPerSecond = scale;
    root.dataset.rendered = String(+root.dataset.rendered + 1 || 1);
    root.renderMs = performance.now() - started;
  }

  function render(root, tl, options) {
    var title = (options && options.title) || "reactcore run";
    root.timeline = tl;
    root.classList.add("tl-root");
    if (!root.querySelector(".tl-scroll")) {
      root.innerHTML = '<h1></h1><p class="tl-summary"></p><div class="tl-warnings"></div><div class="tl-legend">' + legend() +
        '</div><div class="tl-tools">zoom <button data-zoom="0.5">−</button><button data-zoom="0">fit</button><button data-zoom="2">+</button>' +
        ' <span>hover a bar for details</span></div><div class="tl-scroll"></div><div class="tl-tip"></div>';
      root.zoom = 1;
      root.querySelector(".tl-tools").addEventListener("click", function (e) {
        var z = e.target.getAttribute("data-zoom");
        if (z === null) return;
        root.zoom = +z ? Math.min(512, Math.max(1, root.zoom * +z)) : 1;
        draw(root, root.timeline, root.zoom);
      });
      var tipBox = root.querySelector(".tl-tip");
      root.querySelector(".tl-scroll").addEventListener("mousemove", function (e) {
        var i = e.target.getAttribute && e.target.closest("[data-i]");
        if (!i) { tipBox.style.display = "none"; return; }
        tipBox.textContent = root.tips[+i.getAttribute("data-i")];
        tipBox.style.display = "block";
        tipBox.style.left = Math.min(e.clientX + 14, window.innerWidth - tipBox.offsetWidth - 8) + "px";
        tipBox.style.top = Math.min(e.clientY + 14, window.innerHeight - tipBox.offsetHeight - 8) + "px";
      });
      root.querySelector(".tl-scroll").addEventListener("mouseleave", function () { tipBox.style.display = "none"; });
    }
    root.querySelector("h1").textContent = title;
    root.querySelector(".tl-summary").innerHTML = summary(tl);
    root.querySelector(".tl-warnings").innerHTML = tl.warnings.map(function (text) {
      return '<p class="tl-warning">' + esc(text) + "</p>";
    }).join("");
    draw(root, tl, root.zoom);
  }

  return { render: render };
})();
