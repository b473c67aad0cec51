/*
 * Goofspiel renderer: draws one JSON state as SVG. Contract: environments/static/renderers.js.
 * state = {"seed", "prizes": [values turned up, the last on the table], "bids": [[seat 0's], [seat 1's]],
 *          "pending": null|seat 0's bid this turn, "points": [p0, p1], "to_move", "winner", "done",
 *          "last_action"}
 * A redacted state (live play, running replays) has pending null while seat 0's bid is hidden.
 * options.seat (0|1, optional): the seat the viewer plays; its hand becomes clickable when it must bid.
 * The drawing (cards, names, points) is followed by a caption in HTML (the state in words, the last turn,
 * a legend), so its words keep the page's size however small the drawing; options.compact leaves it out.
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

  // crossed: a played card, struck through under its digit (which stays readable).
  function card(parent, x, y, value, attrs, crossed) {
    var g = el("g", attrs || {}, parent);
    var faceDown = value === null;
    el("rect", {
      x: x, y: y, width: CARD_W, height: CARD_H, rx: 4,
      fill: faceDown ? COLORS.back : (attrs && attrs.fill) || COLORS.card, stroke: COLORS.edge, "stroke-width": 1.5,
    }, g);
    if (crossed) el("line", { x1: x + 3, y1: y + CARD_H - 3, x2: x + CARD_W - 3, y2: y + 3, stroke: COLORS.edge, "stroke-width": 1.5 }, g);
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
      if (state.winner === null || state.winner === undefined) return "Draw, " + state.points[0] + " to " + state.points[1] + ".";
      return names[state.winner] + " wins, " + state.points[state.winner] + " to " + state.points[1 - state.winner] + ".";
    }
    if (state.to_move === 1) return names[0] + " has bid; " + names[1] + " to bid.";
    return "Both players bid for the prize " + state.prizes[state.prizes.length - 1] + ".";
  }

  // The words under the drawing: real text at the page's size (never scaled down with the picture).
  function caption(state, names, running, lastSettled) {
    var box = document.createElement("figcaption");
    box.setAttribute("class", "rl-goofspiel-caption");
    box.setAttribute("style", "font-size:1rem;line-height:1.45;margin:0.4rem 0 0");
    var line = document.createElement("p");
    line.setAttribute("class", "rl-status");
    line.setAttribute("style", "margin:0;font-weight:600");
    line.textContent = status(state, names);
    box.appendChild(line);
    var facts = [];
    var turns = state.bids[0].length;
    if (running) {
      var remaining = CARDS - state.prizes.length;
      facts.push("Turn " + (turns + 1) + " of 13; " + remaining + " prize card" + (remaining === 1 ? "" : "s") + " still to come.");
    }
    if (lastSettled) {
      var t = turns - 1;
      var b0 = state.bids[0][t];
      var b1 = state.bids[1][t];
      var taker = b0 === b1 ? "nobody (equal bids)" : names[b0 > b1 ? 0 : 1];
      facts.push("Last turn: " + names[0] + " bid " + b0 + ", " + names[1] + " bid " + b1 + "; the prize " + state.prizes[t] + " went to " + taker + ".");
    }
    if (facts.length) {
      var more = document.createElement("p");
      more.setAttribute("style", "margin:0.15rem 0 0");
      more.textContent = facts.join(" ");
      box.appendChild(more);
    }
    var legend = document.createElement("ul");
    legend.setAttribute("class", "rl-legend");
    legend.setAttribute("aria-label", "Legend");
    legend.setAttribute("style", "list-style:none;margin:0.3rem 0 0;padding:0;display:flex;flex-wrap:wrap;gap:0.2rem 1rem;font-size:0.95rem");
    [
      [COLORS.card, "", "In hand"],
      [COLORS.used, "played", "Already played (crossed out)"],
      [COLORS.prize, "", "Prize on the table"],
      ["none", "last", "Last turn's bids"],
      [COLORS.back, "", "A bid not shown yet"],
    ].forEach(function (item) {
      var li = document.createElement("li");
      var swatch = document.createElement("span");
      swatch.setAttribute("aria-hidden", "true");
      var border = item[1] === "last" ? "3px solid " + COLORS.last : "1px solid " + COLORS.edge;
      var strike = item[1] === "played" ? ";background-image:linear-gradient(to top right,transparent 45%," + COLORS.edge + " 45%," + COLORS.edge + " 55%,transparent 55%)" : "";
      swatch.setAttribute("style", "display:inline-block;width:0.8em;height:1.1em;vertical-align:-0.2em;margin-right:0.35em;border-radius:2px;border:" + border + ";background-color:" + (item[0] === "none" ? "transparent" : item[0]) + strike);
      var words = document.createElement("span");
      words.textContent = item[2];
      li.appendChild(swatch);
      li.appendChild(words);
      legend.appendChild(li);
    });
    box.appendChild(legend);
    return box;
  }

  function render(container, state, options) {
    options = options || {};
    var names = seatNames(options);
    var H = 340;
    var svg = el("svg", {
      viewBox: "0 0 " + W + " " + H, width: options.size || "100%", role: "img", "class": "rl-board rl-goofspiel",
      style: "max-width:" + (options.size || 560) + "px;display:block;height:auto",
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

    // Hands: seat 1 at the top, seat 0 at the bottom; played cards are grey and crossed out.
    [1, 0].forEach(function (seat) {
      var y = seat === 1 ? 38 : H - 92;
      var label = names[seat] + ": " + state.points[seat] + " point" + (state.points[seat] === 1 ? "" : "s");
      var labelAttrs = { "font-size": 20, "font-weight": "bold", fill: COLORS.seat[seat] };
      if (state.done && state.winner === seat) {
        labelAttrs["class"] = "rl-winning-line";
        labelAttrs.fill = COLORS.win;
      }
      text(svg, W / 2, seat === 1 ? 26 : H - 12, label, labelAttrs);
      var held = hand(state, seat);
      for (var v = 1; v <= CARDS; v++) {
        var x = 14 + (v - 1) * (CARD_W + 3);
        var g = card(svg, x, y, v, { fill: held[v - 1] ? COLORS.card : COLORS.used, "class": held[v - 1] ? "rl-card" : "rl-card rl-used" }, !held[v - 1]);
        if (canClick && seat === chooser && held[v - 1]) clickable(g, v - 1, options, "Bid " + v);
      }
    });

    // The table: the prize in the middle, this turn's hidden bid or the last turn's bids on the left.
    var cy = H / 2 - CARD_H / 2;
    if (running) {
      text(svg, W / 2, cy - 8, "Prize", { "font-size": 18 });
      card(svg, W / 2 - CARD_W / 2, cy, state.prizes[state.prizes.length - 1], { fill: COLORS.prize, "class": "rl-prize" });
    } else {
      text(svg, W / 2, cy + CARD_H / 2 + 7, "Final score " + state.points[0] + " : " + state.points[1], { "font-size": 20 });
    }
    if (state.to_move === 1 && running) {
      var pend = card(svg, 24, cy, state.pending === undefined ? null : state.pending, { "class": "rl-pending" });
      if (state.pending !== null && state.last_action !== null && state.last_action !== undefined) {
        pend.setAttribute("class", "rl-pending rl-last-action");
      }
      text(svg, 24 + CARD_W + 10, cy + CARD_H / 2 + 6, names[0] + " has bid", { "font-size": 18, "text-anchor": "start" });
    } else if (lastSettled) {
      var t = turns - 1;
      var g2 = el("g", { "class": "rl-last-action" }, svg);
      var top = H / 2 - CARD_H - 4;
      el("rect", { x: 18, y: top - 5, width: CARD_W + 12, height: 2 * CARD_H + 18, fill: "none", stroke: COLORS.last, "stroke-width": 3, rx: 6 }, g2);
      card(g2, 24, top, state.bids[1][t], { fill: COLORS.card });
      card(g2, 24, top + CARD_H + 8, state.bids[0][t], { fill: COLORS.card });
      text(g2, 24 + CARD_W + 12, H / 2 + 6, "Last turn", { "font-size": 18, "text-anchor": "start" });
    }

    var figure = document.createElement("figure");
    figure.setAttribute("class", "rl-goofspiel-figure");
    figure.setAttribute("style", "margin:0 auto;width:100%;max-width:" + (options.size || 560) + "px");
    figure.appendChild(svg);
    if (!options.compact) figure.appendChild(caption(state, names, running, lastSettled));
    while (container.firstChild) container.removeChild(container.firstChild);
    container.appendChild(figure);
    return svg;
  }

  window.RLArenaRenderers = window.RLArenaRenderers || {};
  window.RLArenaRenderers["goofspiel"] = render;
})();
