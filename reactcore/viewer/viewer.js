// The live run viewer of reactcore (reactcore.viewer.viewer_app): ReactcoreViewer.start(el, base)
// lists the served app's runs (GET base + "api/runs", every second), draws the selected one
// live with ReactcoreTimeline.render from the snapshots of GET api/runs/{key}/timeline
// (server-sent events), and steers it: cancel a running call, cancel the run, answer a pause
// for approval. Panels that hold a button or a field are redrawn only when what they list
// changes, so a click or an edit in progress is never lost to a redraw.
"use strict";
var ReactcoreViewer = (function () {
  function esc(text) {
    return String(text).replace(/[&<>"]/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c];
    });
  }

  function pretty(args) {
    try { return JSON.stringify(JSON.parse(args), null, 2); } catch (e) { return args; }
  }

  function start(root, base) {
    var current = null, source = null, snap = null, callsSeen = "", pendingSeen = "", decisions = {};
    root.classList.add("vw-root");
    root.innerHTML = '<aside class="vw-side"><h2>Runs</h2><table class="vw-runs"><thead><tr><th>status</th><th>principal</th>' +
      '<th>run</th><th>thread</th><th>started</th></tr></thead><tbody></tbody></table><p class="vw-empty">no runs yet</p></aside>' +
      '<main class="vw-main"><div class="vw-head"><button class="vw-cancel-run" disabled>cancel run</button>' +
      '<span class="vw-message" role="status"></span></div><section class="vw-approvals"></section>' +
      '<section class="vw-calls"></section><div class="vw-timeline"><p class="vw-hint">select a run</p></div></main>';
    var q = function (sel) { return root.querySelector(sel); };

    function say(text, bad) {
      var m = q(".vw-message");
      m.textContent = text;
      m.classList.toggle("vw-bad", !!bad);
    }

    function post(path, body) {
      return fetch(base + "api/runs/" + encodeURIComponent(current) + path, {
        method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body || {})
      }).then(function (r) {
        return r.json().then(function (j) {
          if (!r.ok) throw new Error((j.error && j.error.message) || ("HTTP " + r.status));
          return j;
        });
      }).catch(function (e) { say(e.message, true); throw e; });
    }

    function drawRuns(runs) {
      q(".vw-empty").style.display = runs.length ? "none" : "";
      q(".vw-runs tbody").innerHTML = runs.map(function (r) {
        return '<tr data-key="' + esc(r.key) + '" data-run-id="' + esc(r.runId) + '" data-status="' + esc(r.status) + '"' +
          (r.key === current ? ' class="vw-selected"' : "") + '><td><span class="vw-status vw-' + esc(r.status) + '">' + esc(r.status) +
          "</span></td><td>" + esc(r.principal) + '</td><td title="' + esc(r.runId) + '">' + esc(r.runId) + "</td><td>" +
          esc(r.threadId === null ? "—" : r.threadId) + "</td><td>" + esc(new Date(r.started * 1000).toLocaleTimeString()) + "</td></tr>";
      }).join("");
    }

    function refresh() {
      fetch(base + "api/runs").then(function (r) { return r.ok ? r.json() : { runs: [] }; })
        .then(function (j) { drawRuns(j.runs); }).catch(function () {});
    }

    function drawCalls(running) {
      var seen = running.map(function (s) { return s.call_id; }).join("\n");
      if (seen === callsSeen) return;
      callsSeen = seen;
      q(".vw-calls").innerHTML = running.length ? "<h3>Running calls</h3>" + running.map(function (s) {
        return '<div class="vw-call" data-call="' + esc(s.call_id) + '"><b>' + esc(s.name) + "</b> <code>" + esc(s.call_id) +
          '</code> <button data-cancel="' + esc(s.call_id) + '">cancel</button></div>';
      }).join("") : "";
    }

    function drawApprovals(pending) {
      var seen = pending.map(function (c) { return c.id; }).join("\n");
      if (seen === pendingSeen) return;
      pendingSeen = seen;
      decisions = {};
      q(".vw-approvals").innerHTML = pending.length ? "<h3>Waiting for approval</h3>" + pending.map(function (c) {
        var id = esc(c.id);
        return '<div class="vw-pending" data-call="' + id + '"><div><b>' + esc(c.name) + "</b> <code>" + id + "</code></div>" +
          '<textarea data-arguments="' + id + '" rows="3" spellcheck="false">' + esc(pretty(c.arguments)) + "</textarea>" +
          '<div><button data-decide="approve" data-for="' + id + '">approve</button> ' +
          '<button data-decide="edit" data-for="' + id + '">approve edited arguments</button> ' +
          '<input data-reason="' + id + '" placeholder="reason (optional)"> ' +
          '<button data-decide="reject" data-for="' + id + '">reject</button></div></div>';
      }).join("") : "";
    }

    function markBars(running) {
      running.forEach(function (s) {
        var bar = q('.vw-timeline .tl-bar[data-call="' + CSS.escape(s.call_id) + '"]');
        if (bar && !bar.querySelector("button")) {
          bar.insertAdjacentHTML("afterbegin", '<button class="vw-x" data-cancel="' + esc(s.call_id) + '" title="cancel this call">✕</button>');
        }
      });
    }

    function show(data) {
      snap = data;
      var tl = data.timeline, el = q(".vw-timeline");
      if (!el.classList.contains("tl-root")) el.innerHTML = "";
      ReactcoreTimeline.render(el, tl, { title: data.runId + " — " + data.principal + " · " + data.status });
      var running = data.live ? tl.tools.filter(function (s) { return s.state === "running" && s.parent === null; }) : [];
      drawCalls(running);
      markBars(running);
      drawApprovals(data.live ? data.pending : []);
      q(".vw-cancel-run").disabled = !data.live;
      root.dataset.status = data.status;
      root.dataset.snapshots = String(+root.dataset.snapshots + 1 || 1);
    }

    function select(key) {
      if (source) source.close();
      current = key;
      callsSeen = pendingSeen = "";
      q(".vw-calls").innerHTML = q(".vw-approvals").innerHTML = "";
      q(".vw-timeline").className = "vw-timeline";
      q(".vw-timeline").innerHTML = "";
      root.dataset.selected = key;
      root.dataset.snapshots = "0";
      say("");
      source = new EventSource(base + "api/runs/" + encodeURIComponent(key) + "/timeline");
      source.addEventListener("snapshot", function (e) { if (current === key) show(JSON.parse(e.data)); });
      source.addEventListener("end", function () { source.close(); root.dataset.ended = key; });
      refresh();
    }

    function decide(kind, id) {
      var decision = { type: kind };
      if (kind === "edit") {
        var text = q('textarea[data-arguments="' + CSS.escape(id) + '"]').value;
        try { JSON.parse(text); } catch (e) { say("the arguments are not JSON: " + e.message, true); return; }
        decision.arguments = text;
      }
      if (kind === "reject") {
        var reason = q('input[data-reason="' + CSS.escape(id) + '"]').value.trim();
        if (reason) decision.reason = reason;
      }
      decisions[id] = decision;
      var pending = snap ? snap.pending : [], left = pending.filter(function (c) { return !decisions[c.id]; });
      if (left.length) { say(kind + " " + id + "; " + left.length + " more to decide"); return; }
      post("/decisions", { decisions: decisions }).then(function () { say("decisions sent"); });
    }

    root.addEventListener("click", function (e) {
      var t = e.target.closest ? e.target.closest("button, tr[data-key]") : null;
      if (!t) return;
      if (t.matches("tr[data-key]")) { select(t.getAttribute("data-key")); return; }
      var call = t.getAttribute("data-cancel");
      if (call !== null) {
        e.stopPropagation();
        post("/calls/" + encodeURIComponent(call) + "/cancel", { reason: "an operator cancelled it in the run viewer" })
          .then(function (j) { say(j.cancelled ? "cancelled " + call : call + " had already ended"); });
        return;
      }
      if (t.matches(".vw-cancel-run")) {
        post("/cancel").then(function (j) { say(j.cancelled ? "run cancelled" : "the run had already ended"); });
        return;
      }
      var kind = t.getAttribute("data-decide");
      if (kind !== null) decide(kind, t.getAttribute("data-for"));
    });

    refresh();
    setInterval(refresh, 1000);
    return { select: select };
  }

  return { start: start };
})();
