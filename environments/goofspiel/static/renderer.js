/*
 * Goofspiel renderer: draws one JSON state as SVG. Contract: environments/static/renderers.js.
 * state = {"seed", "prizes": [values turned up, the last on the table], "bids": [[seat 0's], [seat 1's]],
 *          "pending": null|seat 0's bid this turn, "points": [p0, p1], "to_move", "winner", "done",
 *          "last_action"}
 * A redacted state (live play, running replays) has pending null while seat 0's bid is hidden.
 * options.seat (0|1, optional): the seat the viewer plays; its hand becomes clickable when it must bid.
 */
(function () {
  "use strict";
  var SVG_NS = "http://www.w3.org/2000/svg";
  var CARDS = 13;
  var W = 560;
  var CARD_W = 38;
  var CARD_H = 54;
  var COLORS = {
    felt: "#f8fafc", card: "#ffffff", used: "#e2e8f0", edge: "#334155", back: "#475569", prize: "#fde68a",
    last: "#f59e0b", win: "#16a34a", text: "#0f172a", seat: ["#2563eb", "#dc2626"],
  };

  function el(tag, attrs, parent) {
    var node = document.createElementNS(SVG_NS, tag);
    for (var k in attrs) if (Object.prototype.hasOwnProperty.call(attrs, k)) node.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(node);
    return node;
  }

  function text(parent, x, y, value, attrs) {
    var base = { x: x, y: y, "text-anchor": "middle", "font-family": "sans-serif", "font-size": 16, fill: COLORS.text };
    for (var k in attrs || {}) if (Object.prototype.hasOwnProperty.call(attrs, k)) base[k] = attrs[k];
    el("text", base, parent).textContent = value;
  }

  function seatNames(options) {
    var players = (options && options.players) || [];
    if (players.length !== 2) return ["Seat 0", "Seat 1"];
    return options.first_player === "PLAYER_2" ? [players[1], players[0]] : [players[0], players[1]];
  }

  function hand(state, seat) {
    var used = {};
    state.bids[seat].forEach(function (v) { used[v] = true; });
    if (seat === 0 && state.pending !== null && state.pending !== undefined) used[state.pending] = true;
    var held = [];
    for (var v = 1; v <= CARDS; v++) held.push(!used[v]);
    return held;
  }

  function card(parent, x, y, value, attrs) {
    var g = el("g", attrs || {}, parent);
    var faceDown = value === null;
    el("rect", {
      x: x, y: y, width: CARD_W, height: CARD_H, rx: 4,
      fill: faceDown ? COLORS.back : (attrs && attrs.fill) || COLORS.card, stroke: COLORS.edge, "stroke-width": 1.5,
    }, g);
    if (!faceDown) text(g, x + CARD_W / 2, y + CARD_H / 2 + 6, String(value), { "font-size": 18 });
    return g;
  }

  function clickable(node, action, options, label) {
    node.setAttribute("class", (node.getAttribute("class") || "") + " rl-clickable");
    node.setAttribute("tabindex", 0);
    node.setAttribute("role", "button");
    node.setAttribute("data-action", action);
    node.setAttribute("style", "cursor:pointer");
    el("title", {}, node).textContent = label;
    node.addEventListener("click", function () { options.onAction(action); });
    node.addEventListener("keydown", function (ev) {
      if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); options.onAction(action); }
    });
  }

  function status(state, names) {
    if (state.done) {
      if (state.winner === null || state.winner === undefined) return "Draw, " + state.points[0] + " to " + state.points[1];
      return names[state.winner] + " wins, " + state.points[state.winner] + " to " + state.points[1 - state.winner];
    }
    if (state.to_move === 1) return names[0] + " has bid; " + names[1] + " to bid";
    return "Both players bid for the " + state.prizes[state.prizes.length - 1];
  }

  function render(container, state, options) {
    options = options || {};
    var names = seatNames(options);
    var H = 420;
    var svg = el("svg", {
      viewBox: "0 0 " + W + " " + H, width: options.size || "100%", role: "img", "class": "rl-board rl-goofspiel",
      style: "max-width:" + (options.size || 560) + "px;display:block",
    });
    el("title", {}, svg).textContent = "Goofspiel: " + status(state, names);
    el("rect", { x: 0, y: 0, width: W, height: H, fill: COLORS.felt }, svg);

    var turns = state.bids[0].length;
    var running = !state.done;
    var bidding = [];
    if (running) bidding = state.to_move === 1 ? [1] : [0, 1];
    var chooser = options.seat === 0 || options.seat === 1 ? options.seat : state.to_move;
    var canClick = typeof options.onAction === "function" && running && bidding.indexOf(chooser) >= 0;
    var lastSettled = state.last_action !== null && state.last_action !== undefined && state.to_move === 0 && turns > 0;

    // Hands: seat 1 at the top, seat 0 at the bottom.
    [1, 0].forEach(function (seat) {
      var y = seat === 1 ? 40 : H - 100;
      var label = names[seat] + ": " + state.points[seat] + " points";
      var labelAttrs = { "font-size": 17, fill: COLORS.seat[seat] };
      if (state.done && state.winner === seat) {
        labelAttrs["class"] = "rl-winning-line";
        labelAttrs["font-weight"] = "bold";
        labelAttrs.fill = COLORS.win;
      }
      text(svg, W / 2, seat === 1 ? 24 : H - 12, label, labelAttrs);
      var held = hand(state, seat);
      for (var v = 1; v <= CARDS; v++) {
        var x = 14 + (v - 1) * (CARD_W + 3);
        var g = card(svg, x, y, v, { fill: held[v - 1] ? COLORS.card : COLORS.used, "class": held[v - 1] ? "rl-card" : "rl-card rl-used" });
        if (canClick && seat === chooser && held[v - 1]) clickable(g, v - 1, options, "Bid " + v);
      }
    });

    // The table: prize on the table, this turn's bids (or the last turn's, once settled).
    var cy = H / 2 - CARD_H / 2;
    text(svg, W / 2, cy - 12, running ? "Prize (turn " + (turns + 1) + " of 13)" : "Final score", { "font-size": 14 });
    if (running) card(svg, W / 2 - CARD_W / 2, cy, state.prizes[state.prizes.length - 1], { fill: COLORS.prize, "class": "rl-prize" });
    var remaining = CARDS - state.prizes.length;
    text(svg, W / 2, cy + CARD_H + 22, remaining + " prize card" + (remaining === 1 ? "" : "s") + " still to come", { "font-size": 13 });
    if (state.to_move === 1 && running) {
      var pend = card(svg, 20, cy, state.pending === undefined ? null : state.pending, { "class": "rl-pending" });
      if (state.pending !== null && state.last_action !== null && state.last_action !== undefined) {
        pend.setAttribute("class", "rl-pending rl-last-action");
      }
      text(svg, 20 + CARD_W + 8, cy + CARD_H / 2 + 5, names[0] + " has bid", { "font-size": 13, "text-anchor": "start" });
    } else if (lastSettled) {
      var t = turns - 1;
      var b0 = state.bids[0][t];
      var b1 = state.bids[1][t];
      var prize = state.prizes[t];
      var taker = b0 === b1 ? "nobody" : names[b0 > b1 ? 0 : 1];
      var g = el("g", { "class": "rl-last-action" }, svg);
      card(g, 20, cy, b1, { fill: COLORS.card });
      card(g, 20, cy + CARD_H + 8, b0, { fill: COLORS.card });
      text(g, 20 + CARD_W + 8, cy + CARD_H + 4, "Last turn: " + b0 + " vs " + b1, { "font-size": 13, "text-anchor": "start" });
      text(g, 20 + CARD_W + 8, cy + CARD_H + 22, "prize " + prize + " to " + taker, { "font-size": 13, "text-anchor": "start" });
      el("rect", { x: 16, y: cy - 4, width: CARD_W + 8, height: 2 * CARD_H + 16, fill: "none", stroke: COLORS.last, "stroke-width": 3, rx: 6 }, g);
    }
    text(svg, W / 2, cy + CARD_H + 44, status(state, names), { "font-size": 15, "class": "rl-status" });

    while (container.firstChild) container.removeChild(container.firstChild);
    container.appendChild(svg);
    return svg;
  }

  window.RLArenaRenderers = window.RLArenaRenderers || {};
  window.RLArenaRenderers["goofspiel"] = render;
})();
