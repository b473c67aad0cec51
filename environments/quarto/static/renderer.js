/*
 * Quarto renderer: draws one JSON state as SVG. Contract: environments/static/renderers.js.
 * state = {"board": [16 ints: piece id or -1, cell = row*4 + col, row 0 at the top], "in_hand": -1|piece,
 *          "available": [unused pieces], "to_move", "winner", "done", "last_action": 17*cell + piece}
 * Piece bits: 1 tall (else short), 2 dark (else light), 4 square (else round), 8 hollow (else solid).
 * Drawing: tall pieces are big, short ones small; dark/light fill; square/round outline; hollow pieces
 * have a hole in the middle.
 */
(function () {
  "use strict";
  var SVG_NS = "http://www.w3.org/2000/svg";
  var CELL = 84;
  var PAD = 28;
  var BOARD = 4 * CELL + 2 * PAD;
  var TRAY_CELL = BOARD / 8;
  var COLORS = {
    board: "#334155", cell: "#475569", dark: "#5b3716", darkRim: "#2b1a09", light: "#f5deb3", lightRim: "#a1784a",
    last: "#facc15", win: "#22c55e", text: "#0f172a", label: "#cbd5e1", hole: "#1e293b", select: "#38bdf8",
  };
  var ATTRS = [["short", "tall"], ["light", "dark"], ["round", "square"], ["solid", "hollow"]];
  var LINES = [
    [0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11], [12, 13, 14, 15],
    [0, 4, 8, 12], [1, 5, 9, 13], [2, 6, 10, 14], [3, 7, 11, 15],
    [0, 5, 10, 15], [3, 6, 9, 12],
  ];

  function el(tag, attrs, parent) {
    var node = document.createElementNS(SVG_NS, tag);
    for (var k in attrs) if (Object.prototype.hasOwnProperty.call(attrs, k)) node.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(node);
    return node;
  }

  function pieceName(p) {
    var parts = [];
    for (var b = 0; b < 4; b++) parts.push(ATTRS[b][(p >> b) & 1]);
    return "piece " + p + " (" + parts.join(", ") + ")";
  }

  function cellName(cell) {
    return "abcd".charAt(cell % 4) + (Math.floor(cell / 4) + 1);
  }

  /* Draw piece p centred on (cx, cy); `unit` is the radius of a tall piece. */
  function drawPiece(parent, p, cx, cy, unit) {
    var tall = p & 1, dark = p & 2, square = p & 4, hollow = p & 8;
    var r = tall ? unit : unit * 0.64;
    var g = el("g", { "class": "rl-piece", "data-piece": p }, parent);
    el("title", {}, g).textContent = pieceName(p);
    var style = {
      fill: dark ? COLORS.dark : COLORS.light,
      stroke: dark ? COLORS.darkRim : COLORS.lightRim,
      "stroke-width": Math.max(1.5, unit * 0.09),
    };
    var body;
    if (square) {
      body = el("rect", { x: cx - r, y: cy - r, width: 2 * r, height: 2 * r, rx: r * 0.12 }, g);
    } else {
      body = el("circle", { cx: cx, cy: cy, r: r }, g);
    }
    for (var k in style) body.setAttribute(k, style[k]);
    if (hollow) {
      el("circle", { cx: cx, cy: cy, r: r * 0.42, fill: COLORS.hole, stroke: style.stroke, "stroke-width": style["stroke-width"] }, g);
    }
    return g;
  }

  function sharesAttribute(pieces) {
    var and = 15, nor = 15;
    for (var i = 0; i < pieces.length; i++) { and &= pieces[i]; nor &= ~pieces[i]; }
    return (and | (nor & 15)) !== 0;
  }

  function winningLines(board) {
    var lines = [];
    for (var i = 0; i < LINES.length; i++) {
      var pieces = LINES[i].map(function (c) { return board[c]; });
      if (pieces.every(function (p) { return p >= 0; }) && sharesAttribute(pieces)) lines.push(LINES[i]);
    }
    return lines;
  }

  function seatNames(options) {
    var players = (options && options.players) || [];
    if (players.length !== 2) return ["First player", "Second player"];
    return options.first_player === "PLAYER_2" ? [players[1], players[0]] : [players[0], players[1]];
  }

  function status(state, names) {
    if (state.done) return state.winner === null || state.winner === undefined ? "Draw" : names[state.winner] + " wins";
    if (state.in_hand < 0) return names[state.to_move] + " chooses the first piece";
    return names[state.to_move] + " places piece " + state.in_hand + ", then gives one";
  }

  function cellCenter(cell) {
    return [PAD + (cell % 4) * CELL + CELL / 2, PAD + Math.floor(cell / 4) * CELL + CELL / 2];
  }

  function makeButton(node, label, onActivate) {
    node.setAttribute("class", (node.getAttribute("class") || "") + " rl-clickable");
    node.setAttribute("tabindex", 0);
    node.setAttribute("role", "button");
    node.setAttribute("style", "cursor:pointer");
    el("title", {}, node).textContent = label;
    node.addEventListener("click", onActivate);
    node.addEventListener("keydown", function (ev) {
      if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); onActivate(); }
    });
  }

  function render(container, state, options) {
    options = options || {};
    var board = state.board;
    var names = seatNames(options);
    var trayTop = BOARD + 84;
    var height = trayTop + 2 * TRAY_CELL + 30;
    var svg = el("svg", {
      viewBox: "0 0 " + BOARD + " " + height,
      width: options.size || "100%",
      role: "img",
      "class": "rl-board rl-quarto",
      style: "max-width:" + (options.size || 420) + "px;display:block",
    });
    el("title", {}, svg).textContent = "Quarto: " + status(state, names);
    el("rect", { x: 0, y: 0, width: BOARD, height: BOARD, rx: 18, fill: COLORS.board }, svg);
    var labels = el("g", { "font-family": "sans-serif", "font-size": 14, fill: COLORS.label, "text-anchor": "middle" }, svg);
    for (var i = 0; i < 4; i++) {
      el("text", { x: PAD + i * CELL + CELL / 2, y: PAD - 9 }, labels).textContent = "abcd".charAt(i);
      el("text", { x: PAD / 2, y: PAD + i * CELL + CELL / 2 + 5 }, labels).textContent = String(i + 1);
    }

    var last = state.last_action;
    var lastCell = last === null || last === undefined ? -1 : Math.floor(last / 17);
    var clickable = typeof options.onAction === "function" && !state.done;
    var selected = -1;
    var cellNodes = [];
    for (var cell = 0; cell < 16; cell++) {
      var c = cellCenter(cell);
      var slot = el("circle", {
        cx: c[0], cy: c[1], r: CELL * 0.46, fill: COLORS.cell,
        stroke: cell === lastCell ? COLORS.last : "none", "stroke-width": cell === lastCell ? 5 : 0,
        "class": cell === lastCell ? "rl-cell rl-last-action" : "rl-cell", "data-cell": cell,
      }, svg);
      cellNodes.push(slot);
      if (board[cell] >= 0) drawPiece(svg, board[cell], c[0], c[1], CELL * 0.34);
      else if (clickable && state.in_hand >= 0) {
        (function (target, node) {
          makeButton(node, "Place on " + cellName(target), function () {
            if (state.available.length === 0) { options.onAction(17 * target + 16); return; }
            if (selected >= 0) cellNodes[selected].setAttribute("stroke", "none");
            selected = target;
            node.setAttribute("stroke", COLORS.select);
            node.setAttribute("stroke-width", 5);
          });
        })(cell, slot);
      }
    }
    var lines = winningLines(board);
    for (var w = 0; w < lines.length; w++) {
      var a = cellCenter(lines[w][0]);
      var b = cellCenter(lines[w][3]);
      el("line", { x1: a[0], y1: a[1], x2: b[0], y2: b[1], stroke: COLORS.win, "stroke-width": 10, "stroke-linecap": "round", opacity: 0.75, "class": "rl-winning-line" }, svg);
    }

    // The piece in hand and the status line.
    var handBox = el("g", { "class": "rl-in-hand" }, svg);
    el("rect", { x: 8, y: BOARD + 10, width: 64, height: 64, rx: 10, fill: "#e2e8f0", stroke: "#94a3b8" }, handBox);
    if (state.in_hand >= 0) drawPiece(handBox, state.in_hand, 40, BOARD + 42, 24);
    var info = el("text", { x: 84, y: BOARD + 36, "font-family": "sans-serif", "font-size": 17, fill: COLORS.text, "class": "rl-status" }, svg);
    info.textContent = status(state, names);
    var sub = el("text", { x: 84, y: BOARD + 60, "font-family": "sans-serif", "font-size": 13, fill: "#475569" }, svg);
    sub.textContent = state.in_hand >= 0 ? "in hand: " + pieceName(state.in_hand) : "";

    // The tray: all 16 pieces in id order; used ones are faded out.
    var available = {};
    for (var k = 0; k < state.available.length; k++) available[state.available[k]] = true;
    for (var p = 0; p < 16; p++) {
      var x = (p % 8) * TRAY_CELL + TRAY_CELL / 2;
      var y = trayTop + Math.floor(p / 8) * TRAY_CELL + TRAY_CELL / 2;
      var spot = el("g", { "class": available[p] ? "rl-available" : "rl-used", opacity: available[p] ? 1 : 0.15 }, svg);
      el("rect", { x: x - TRAY_CELL / 2 + 2, y: y - TRAY_CELL / 2 + 2, width: TRAY_CELL - 4, height: TRAY_CELL - 4, rx: 6, fill: "#f1f5f9" }, spot);
      drawPiece(spot, p, x, y - 6, TRAY_CELL * 0.3);
      el("text", { x: x, y: y + TRAY_CELL / 2 - 5, "text-anchor": "middle", "font-family": "sans-serif", "font-size": 11, fill: "#475569" }, spot).textContent = String(p);
      if (clickable && available[p] && state.available.length > 0) {
        (function (piece, node) {
          makeButton(node, "Give " + pieceName(piece), function () {
            if (state.in_hand < 0) { options.onAction(272 + piece); return; }
            if (selected >= 0) options.onAction(17 * selected + piece);
          });
        })(p, spot);
      }
    }

    while (container.firstChild) container.removeChild(container.firstChild);
    container.appendChild(svg);
    return svg;
  }

  window.RLArenaRenderers = window.RLArenaRenderers || {};
  window.RLArenaRenderers["quarto"] = render;
})();
