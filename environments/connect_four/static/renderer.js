/*
 * Connect Four renderer: draws one JSON state as SVG. Contract: environments/static/renderers.js.
 * state = {"board": [6 rows (row 0 = top) of 7 ints: 0 empty, 1 seat 0, 2 seat 1], "to_move", "winner",
 *          "done", "last_action": column or null}
 */
(function () {
  "use strict";
  var SVG_NS = "http://www.w3.org/2000/svg";
  var ROWS = 6;
  var COLS = 7;
  var CELL = 60;
  var PAD = 12;
  var COLORS = {
    frame: "#1d4ed8", hole: "#f8fafc", pieces: ["#dc2626", "#facc15"], rims: ["#991b1b", "#a16207"],
    last: "#0f172a", win: "#16a34a", text: "#0f172a",
  };
  var NAMES = ["Red", "Yellow"];
  var DIRS = [[0, 1], [1, 0], [1, 1], [1, -1]];

  function el(tag, attrs, parent) {
    var node = document.createElementNS(SVG_NS, tag);
    for (var k in attrs) if (Object.prototype.hasOwnProperty.call(attrs, k)) node.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(node);
    return node;
  }

  function seatNames(options) {
    var players = (options && options.players) || [];
    if (players.length !== 2) return null;
    return options.first_player === "PLAYER_2" ? [players[1], players[0]] : [players[0], players[1]];
  }

  /* Every line of four equal pieces, as lists of [row, col]. */
  function linesOfFour(board) {
    var lines = [];
    for (var r = 0; r < ROWS; r++) {
      for (var c = 0; c < COLS; c++) {
        var p = board[r][c];
        if (!p) continue;
        for (var d = 0; d < DIRS.length; d++) {
          var dr = DIRS[d][0], dc = DIRS[d][1];
          var er = r + 3 * dr, ec = c + 3 * dc;
          if (er < 0 || er >= ROWS || ec < 0 || ec >= COLS) continue;
          var ok = true;
          for (var i = 1; i < 4 && ok; i++) ok = board[r + i * dr][c + i * dc] === p;
          if (ok) lines.push([[r, c], [r + dr, c + dc], [r + 2 * dr, c + 2 * dc], [er, ec]]);
        }
      }
    }
    return lines;
  }

  function centerOf(r, c) {
    return [PAD + c * CELL + CELL / 2, PAD + r * CELL + CELL / 2];
  }

  function status(state, names) {
    var label = function (seat) { return names ? NAMES[seat] + " (" + names[seat] + ")" : NAMES[seat]; };
    if (state.done) return state.winner === null || state.winner === undefined ? "Draw" : label(state.winner) + " wins";
    return label(state.to_move) + " to move";
  }

  function render(container, state, options) {
    options = options || {};
    var board = state.board;
    var names = seatNames(options);
    var width = COLS * CELL + 2 * PAD;
    var height = ROWS * CELL + 2 * PAD;
    var svg = el("svg", {
      viewBox: "0 0 " + width + " " + (height + 56),
      width: options.size || "100%",
      role: "img",
      "class": "rl-board rl-connect-four",
      style: "max-width:" + (options.size || 420) + "px;display:block",
    });
    el("title", {}, svg).textContent = "Connect Four: " + status(state, names);
    var labels = el("g", { "font-family": "sans-serif", "font-size": 14, fill: "#64748b", "text-anchor": "middle" }, svg);
    el("rect", { x: 0, y: 0, width: width, height: height, rx: 14, fill: COLORS.frame }, svg);

    var lastRow = -1;
    var lastCol = state.last_action;
    if (lastCol !== null && lastCol !== undefined) {
      for (var lr = 0; lr < ROWS; lr++) if (board[lr][lastCol]) { lastRow = lr; break; }
    }
    for (var r = 0; r < ROWS; r++) {
      for (var c = 0; c < COLS; c++) {
        var ctr = centerOf(r, c);
        var p = board[r][c];
        if (p) {
          el("circle", { cx: ctr[0], cy: ctr[1], r: CELL * 0.4, fill: COLORS.pieces[p - 1], stroke: COLORS.rims[p - 1], "stroke-width": 3, "class": "rl-piece rl-seat-" + (p - 1) }, svg);
        } else {
          el("circle", { cx: ctr[0], cy: ctr[1], r: CELL * 0.4, fill: COLORS.hole }, svg);
        }
        if (r === lastRow && c === lastCol) {
          el("circle", { cx: ctr[0], cy: ctr[1], r: CELL * 0.13, fill: COLORS.last, opacity: 0.55, "class": "rl-last-action" }, svg);
        }
      }
    }
    var lines = linesOfFour(board);
    for (var i = 0; i < lines.length; i++) {
      var a = centerOf(lines[i][0][0], lines[i][0][1]);
      var b = centerOf(lines[i][3][0], lines[i][3][1]);
      el("line", { x1: a[0], y1: a[1], x2: b[0], y2: b[1], stroke: COLORS.win, "stroke-width": 10, "stroke-linecap": "round", opacity: 0.85, "class": "rl-winning-line" }, svg);
    }
    for (var col = 0; col < COLS; col++) {
      el("text", { x: PAD + col * CELL + CELL / 2, y: height + 18 }, labels).textContent = String(col + 1);
    }
    if (typeof options.onAction === "function" && !state.done) {
      for (var cc = 0; cc < COLS; cc++) {
        if (board[0][cc]) continue;
        var hit = el("rect", {
          x: PAD + cc * CELL, y: 0, width: CELL, height: height, fill: "transparent",
          "class": "rl-clickable", tabindex: 0, role: "button", "data-action": cc, style: "cursor:pointer",
        }, svg);
        el("title", {}, hit).textContent = "Drop in column " + (cc + 1);
        (function (action, node) {
          node.addEventListener("click", function () { options.onAction(action); });
          node.addEventListener("keydown", function (ev) {
            if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); options.onAction(action); }
          });
        })(cc, hit);
      }
    }
    var text = el("text", { x: width / 2, y: height + 46, "text-anchor": "middle", "font-family": "sans-serif", "font-size": 20, fill: COLORS.text, "class": "rl-status" }, svg);
    text.textContent = status(state, names);

    while (container.firstChild) container.removeChild(container.firstChild);
    container.appendChild(svg);
    return svg;
  }

  window.RLArenaRenderers = window.RLArenaRenderers || {};
  window.RLArenaRenderers["connect-four"] = render;
})();
