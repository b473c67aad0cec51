/*
 * RL Arena replay viewer.
 *
 * Markup: <div class="replay" data-replay data-game="connect-four" data-replay-source="replay-data">
 * where #replay-data is a <script type="application/json"> holding {"states": [...], "actions": [...],
 * "moves": [{"player", "text"}...], "move_times": [...], "players": ["name 1", "name 2"], "seats": [...],
 * "first_player": "PLAYER_1", "result", "result_text"}. states[0] is the position before the first move;
 * states[i] follows actions[i - 1], which the caption of move i describes.
 * The game's renderer (window.RLArenaRenderers[slug]) draws one state; this file only drives it.
 * Keys: ←/→ step, Home/End jump, Space play/pause. The URL hash #move=N links to a move.
 */
(function () {
  "use strict";

  function el(tag, attrs, text) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function moveFromHash() {
    var m = /(?:^#|&)move=(\d+)/.exec(window.location.hash || "");
    return m ? parseInt(m[1], 10) : null;
  }

  function Replay(root) {
    var source = document.getElementById(root.getAttribute("data-replay-source"));
    this.data = JSON.parse(source.textContent);
    this.states = this.data.states || [];
    this.slug = root.getAttribute("data-game");
    this.root = root;
    this.index = 0;
    this.timer = null;
    this.build();
    var start = moveFromHash();
    this.show(start === null ? 0 : start, false);
    var self = this;
    window.addEventListener("hashchange", function () {
      var n = moveFromHash();
      if (n !== null && n !== self.index) self.show(n, false);
    });
  }

  Replay.prototype.build = function () {
    var self = this;
    var controls = el("div", { "class": "replay-controls", role: "toolbar", "aria-label": "Replay controls" });
    // A button's accessible name is its visible text (WCAG 2.5.3); the title adds the shortcut as a hint.
    function button(label, title, onClick, extra) {
      var b = el("button", Object.assign({ type: "button", "class": "small", title: title }, extra || {}), label);
      b.addEventListener("click", onClick);
      controls.appendChild(b);
      return b;
    }
    this.firstBtn = button("« First", "First move (Home)", function () { self.stop(); self.show(0, true); });
    this.prevBtn = button("‹ Back", "Previous move (←)", function () { self.stop(); self.step(-1); });
    this.playBtn = button("▶ Play", "Play or pause (Space)", function () { self.toggle(); }, { "aria-pressed": "false" });
    this.nextBtn = button("Next ›", "Next move (→)", function () { self.stop(); self.step(1); });
    this.lastBtn = button("Last »", "Last move (End)", function () { self.stop(); self.show(self.states.length - 1, true); });
    this.slider = el("input", {
      type: "range", min: "0", max: String(Math.max(0, this.states.length - 1)), value: "0",
      "aria-label": "Move", "data-testid": "replay-slider"
    });
    this.slider.addEventListener("input", function () { self.stop(); self.show(parseInt(self.slider.value, 10), true); });
    controls.appendChild(this.slider);
    this.counter = el("span", { "class": "counter", "aria-live": "polite", "data-testid": "replay-counter" });
    controls.appendChild(this.counter);
    this.speed = el("select", { "aria-label": "Playback speed" });
    [["1000", "0.5×"], ["500", "1×"], ["250", "2×"], ["100", "5×"]].forEach(function (o) {
      var opt = el("option", { value: o[0] }, o[1]);
      if (o[0] === "500") opt.selected = true;
      self.speed.appendChild(opt);
    });
    this.speed.addEventListener("change", function () { if (self.timer) { self.stop(); self.play(); } });
    controls.appendChild(this.speed);
    this.linkBtn = button("Copy link", "Copy a link to this move", function () { self.copyLink(); });

    this.stage = el("div", { "class": "replay-stage", "data-testid": "replay-stage" });
    this.caption = el("div", { "class": "replay-caption", "aria-live": "polite", "data-testid": "replay-caption" });
    this.root.appendChild(controls);
    this.root.appendChild(this.stage);
    this.root.appendChild(this.caption);

    this.root.setAttribute("tabindex", "0");
    this.root.addEventListener("keydown", function (e) { self.onKey(e); });
    document.addEventListener("keydown", function (e) {
      var t = e.target;
      if (t && (t.tagName === "INPUT" || t.tagName === "SELECT" || t.tagName === "TEXTAREA" || t.isContentEditable)) {
        if (t !== self.slider) return;
      }
      if (self.root.contains(t) && t !== document.body) return; // handled by the root listener
      self.onKey(e);
    });
  };

  Replay.prototype.onKey = function (e) {
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    var handled = true;
    switch (e.key) {
      case "ArrowLeft": this.stop(); this.step(-1); break;
      case "ArrowRight": this.stop(); this.step(1); break;
      case "Home": this.stop(); this.show(0, true); break;
      case "End": this.stop(); this.show(this.states.length - 1, true); break;
      case " ": if (e.target && e.target.tagName === "BUTTON") { handled = false; } else { this.toggle(); } break;
      default: handled = false;
    }
    if (handled) { e.preventDefault(); e.stopPropagation(); }
  };

  Replay.prototype.step = function (delta) { this.show(this.index + delta, true); };

  Replay.prototype.show = function (n, updateHash) {
    var last = this.states.length - 1;
    if (last < 0) { this.stage.textContent = "This match has no recorded states."; return; }
    n = Math.max(0, Math.min(last, n));
    this.index = n;
    this.slider.value = String(n);
    this.counter.textContent = "Move " + n + " / " + last;
    this.firstBtn.disabled = this.prevBtn.disabled = n === 0;
    this.nextBtn.disabled = this.lastBtn.disabled = n === last;
    this.render(this.states[n], n);
    this.caption.textContent = "";
    var parts = [];
    if (n === 0) {
      parts.push("Initial position");
      var seats = this.data.seats || [];
      if (seats[0]) parts.push(seats[0] + " moves first");
    } else {
      parts.push(this.describe(n - 1));
    }
    if (n === last && this.data.result) {
      parts.push("Result: " + (this.data.result_text || this.data.result.replace(/_/g, " ").toLowerCase()));
    }
    this.caption.textContent = parts.join(" · ");
    if (updateHash && window.history && window.history.replaceState) {
      window.history.replaceState(null, "", "#move=" + n);
    }
  };

  /* "Move 3: minimax played column 4 (action 3) · 0.012 s" for actions[i], the move leading to states[i + 1]. */
  Replay.prototype.describe = function (i) {
    var moves = Array.isArray(this.data.moves) ? this.data.moves : this.data.move_details || [];
    var actions = this.data.actions || [];
    var times = this.data.move_times || [];
    var move = moves[i] || {};
    var action = actions[i];
    var text = "Move " + (i + 1) + ": ";
    text += move.player ? move.player + " played " : "";
    if (move.text && move.text !== String(action)) {
      text += move.text + (action !== undefined && action !== null ? " (action " + action + ")" : "");
    } else if (action !== undefined && action !== null) {
      text += "action " + action;
    }
    if (times[i] !== undefined && times[i] !== null) text += " · thought " + Number(times[i]).toFixed(3) + " s";
    return text;
  };

  Replay.prototype.render = function (state, n) {
    var renderers = window.RLArenaRenderers || {};
    var draw = renderers[this.slug];
    this.stage.innerHTML = "";
    if (typeof draw === "function") {
      try {
        draw(this.stage, state, { move: n, players: this.data.players || [], first_player: this.data.first_player });
        return;
      } catch (err) {
        if (window.console) window.console.error("renderer failed", err);
      }
    }
    var pre = el("pre", { "class": "replay-fallback" }, JSON.stringify(state, null, 1));
    this.stage.appendChild(pre);
  };

  Replay.prototype.play = function () {
    var self = this;
    if (this.index >= this.states.length - 1) this.show(0, true);
    this.playBtn.textContent = "⏸ Pause";
    this.playBtn.setAttribute("aria-pressed", "true");
    this.timer = window.setInterval(function () {
      if (self.index >= self.states.length - 1) { self.stop(); return; }
      self.step(1);
    }, parseInt(this.speed.value, 10));
  };

  Replay.prototype.stop = function () {
    if (this.timer) window.clearInterval(this.timer);
    this.timer = null;
    this.playBtn.textContent = "▶ Play";
    this.playBtn.setAttribute("aria-pressed", "false");
  };

  Replay.prototype.toggle = function () { if (this.timer) this.stop(); else this.play(); };

  Replay.prototype.copyLink = function () {
    var url = window.location.href.split("#")[0] + "#move=" + this.index;
    var btn = this.linkBtn;
    function done() { btn.textContent = "Copied"; window.setTimeout(function () { btn.textContent = "Copy link"; }, 1500); }
    if (navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText(url).then(done, function () { window.prompt("Link to this move:", url); });
    } else {
      window.prompt("Link to this move:", url);
    }
  };

  function init() {
    var roots = document.querySelectorAll("[data-replay]");
    for (var i = 0; i < roots.length; i++) {
      roots[i].rlReplay = new Replay(roots[i]);
    }
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
  window.RLArenaReplay = Replay;
})();
