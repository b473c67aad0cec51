/*
 * Leduc Hold'em renderer: draws one JSON state as SVG. Contract: environments/static/renderers.js.
 * state = {"seed", "hand", "cards": [c0, c1], "public": null|card, "betting": [[round 0], [round 1]],
 *          "pot": [in0, in1], "chips": [net0, net1], "history": [{"cards", "public", "betting", "net"}],
 *          "to_move", "winner", "done", "last_action"}
 * Cards are 0..5, rank = card >> 1 (J, Q, K), suit = card & 1. A redacted state (live play, running
 * replays) has null for the cards its viewer may not see: they are drawn face down.
 * options.seat (0|1, optional): the seat the viewer plays; the betting buttons show on its turn only.
 */
(function () {
  "use strict";
  var SVG_NS = "http://www.w3.org/2000/svg";
  var HANDS = 10;
  var RAISE = [2, 4];
  var W = 520;
  var H = 440;
  var CARD_W = 54;
  var CARD_H = 76;
  var COLORS = {
    felt: "#166534", card: "#ffffff", edge: "#0f172a", back: "#1e3a8a", red: "#dc2626", black: "#0f172a",
    text: "#f8fafc", last: "#fbbf24", win: "#fde047", button: "#f1f5f9",
  };
  var ACTION_NAMES = ["Fold", "Call", "Raise"];

  function el(tag, attrs, parent) {
    var node = document.createElementNS(SVG_NS, tag);
    for (var k in attrs) if (Object.prototype.hasOwnProperty.call(attrs, k)) node.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(node);
    return node;
  }

  function text(parent, x, y, value, attrs) {
    var base = { x: x, y: y, "text-anchor": "middle", "font-family": "sans-serif", "font-size": 15, fill: COLORS.text };
    for (var k in attrs || {}) if (Object.prototype.hasOwnProperty.call(attrs, k)) base[k] = attrs[k];
    el("text", base, parent).textContent = value;
  }

  function seatNames(options) {
    var players = (options && options.players) || [];
    if (players.length !== 2) return ["Seat 0", "Seat 1"];
    return options.first_player === "PLAYER_2" ? [players[1], players[0]] : [players[0], players[1]];
  }

  function cardName(c) { return "JQK".charAt(c >> 1) + (c & 1 ? "\u2660" : "\u2665"); }

  function drawCard(parent, x, y, c, cls) {
    var g = el("g", { "class": cls }, parent);
    var hidden = c === null || c === undefined;
    el("rect", { x: x, y: y, width: CARD_W, height: CARD_H, rx: 6, fill: hidden ? COLORS.back : COLORS.card, stroke: COLORS.edge, "stroke-width": 2 }, g);
    if (!hidden) text(g, x + CARD_W / 2, y + CARD_H / 2 + 9, cardName(c), { "font-size": 24, fill: c & 1 ? COLORS.black : COLORS.red });
    return g;
  }

  /* "check", "bet 2", "call", "raise to 9", "fold" for each action of one round, replaying the pot. */
  function roundWords(actions, pot, round, first) {
    var words = [];
    var mine = [pot[0], pot[1]];
    var seat = first;
    actions.forEach(function (a) {
      var facing = mine[seat] < mine[1 - seat];
      if (a === 0) words.push("fold");
      else if (a === 1) { words.push(facing ? "call" : "check"); mine[seat] = mine[1 - seat]; }
      else { mine[seat] = mine[1 - seat] + RAISE[round]; words.push(facing ? "raise to " + mine[seat] : "bet " + RAISE[round]); }
      seat = 1 - seat;
    });
    return { words: words, pot: mine };
  }

  function legal(state) {
    if (state.done) return [];
    var me = state.to_move;
    var round = state.public === null || state.public === undefined ? 0 : 1;
    var raises = state.betting[round].filter(function (a) { return a === 2; }).length;
    var out = [];
    if (state.pot[me] < state.pot[1 - me]) out.push(0);
    out.push(1);
    if (raises < 2) out.push(2);
    return out;
  }

  function handSummary(past, index, names) {
    var n = past.net[0];
    var who = n === 0 ? "split pot" : names[n > 0 ? 0 : 1] + " wins " + Math.abs(n);
    var folded = past.betting[0].indexOf(0) >= 0 || past.betting[1].indexOf(0) >= 0;
    var shown = past.cards.map(function (c) { return c === null || c === undefined ? "?" : cardName(c); });
    var how = folded
      ? "after a fold"
      : "at showdown: " + names[0] + " " + shown[0] + ", " + names[1] + " " + shown[1] + ", public " + cardName(past.public);
    return "Hand " + (index + 1) + ": " + who + " " + how;
  }

  function render(container, state, options) {
    options = options || {};
    var names = seatNames(options);
    var svg = el("svg", {
      viewBox: "0 0 " + W + " " + H, width: options.size || "100%", role: "img", "class": "rl-board rl-leduc-holdem",
      style: "max-width:" + (options.size || 520) + "px;display:block",
    });
    var first = state.hand % 2;
    var round0 = roundWords(state.betting[0], [1, 1], 0, first);
    var round1 = roundWords(state.betting[1], round0.pot, 1, first);
    var statusText;
    if (state.done) {
      statusText = state.winner === null || state.winner === undefined
        ? "Draw: equal chips after " + HANDS + " hands"
        : names[state.winner] + " wins the match by " + state.chips[state.winner] + " chips";
    } else {
      statusText = "Hand " + (state.hand + 1) + " of " + HANDS + ": " + names[state.to_move] + " to act";
    }
    el("title", {}, svg).textContent = "Leduc Hold'em: " + statusText;
    el("rect", { x: 0, y: 0, width: W, height: H, rx: 18, fill: COLORS.felt }, svg);

    [1, 0].forEach(function (seat) {
      var y = seat === 1 ? 16 : H - CARD_H - 40;
      drawCard(svg, 30, y, state.cards[seat], "rl-card rl-private");
      var attrs = { "text-anchor": "start", "font-size": 17 };
      if (state.done && state.winner === seat) { attrs["class"] = "rl-winning-line"; attrs.fill = COLORS.win; }
      text(svg, 100, y + 24, names[seat] + (seat === first ? " (acts first)" : ""), attrs);
      var chips = state.chips[seat];
      text(svg, 100, y + 48, "match: " + (chips > 0 ? "+" : "") + chips + " chips \u00b7 in pot: " + state.pot[seat], { "text-anchor": "start", "font-size": 14 });
    });

    var cy = 124;
    drawCard(svg, W / 2 - CARD_W / 2, cy, state.public, "rl-card rl-public");
    text(svg, W / 2, cy - 6, state.public === null || state.public === undefined ? "public card (after round 1)" : "public card", { "font-size": 12 });
    text(svg, W / 2 + CARD_W / 2 + 70, cy + 30, "pot " + (state.pot[0] + state.pot[1]), { "font-size": 17 });

    var hasLast = state.last_action !== null && state.last_action !== undefined;
    var lines = [];
    if (round0.words.length) lines.push("Round 1: " + round0.words.join(", "));
    if (round1.words.length) lines.push("Round 2: " + round1.words.join(", "));
    // The last action either continues the current hand or ended the previous one (or the match).
    var lastInHistory = hasLast && (state.done || lines.length === 0);
    var ty = cy + CARD_H + 22;
    lines.forEach(function (line, i) {
      var attrs = { "font-size": 14 };
      if (hasLast && !lastInHistory && i === lines.length - 1) { attrs["class"] = "rl-last-action"; attrs.fill = COLORS.last; }
      text(svg, W / 2, ty + i * 18, line, attrs);
    });
    if (state.history.length) {
      var hattrs = { "font-size": 13 };
      if (lastInHistory) { hattrs["class"] = "rl-last-action"; hattrs.fill = COLORS.last; }
      var past = state.history[state.history.length - 1];
      text(svg, W / 2, ty + 2 * 18, handSummary(past, state.history.length - 1, names), hattrs);
    }
    text(svg, W - 20, H - 12, statusText, { "text-anchor": "end", "font-size": 14, "class": "rl-status" });

    var seat = options.seat === 0 || options.seat === 1 ? options.seat : state.to_move;
    if (typeof options.onAction === "function" && !state.done && seat === state.to_move) {
      var round = state.public === null || state.public === undefined ? 0 : 1;
      var facing = state.pot[seat] < state.pot[1 - seat];
      legal(state).forEach(function (action, i) {
        var label = action === 1 ? (facing ? "Call" : "Check") : action === 2 ? (facing ? "Raise" : "Bet") + " " + RAISE[round] : ACTION_NAMES[action];
        var g = el("g", {
          "class": "rl-clickable rl-bet-button", tabindex: 0, role: "button", "data-action": action, style: "cursor:pointer",
        }, svg);
        el("rect", { x: W - 110, y: H - 150 + i * 34, width: 90, height: 28, rx: 6, fill: COLORS.button, stroke: COLORS.edge }, g);
        text(g, W - 65, H - 150 + i * 34 + 19, label, { fill: COLORS.black, "font-size": 14 });
        el("title", {}, g).textContent = label;
        g.addEventListener("click", function () { options.onAction(action); });
        g.addEventListener("keydown", function (ev) {
          if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); options.onAction(action); }
        });
      });
    }

    while (container.firstChild) container.removeChild(container.firstChild);
    container.appendChild(svg);
    return svg;
  }

  window.RLArenaRenderers = window.RLArenaRenderers || {};
  window.RLArenaRenderers["leduc-holdem"] = render;
})();
