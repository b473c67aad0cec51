/*
 * Tic-tac-toe renderer: draws one JSON state as SVG. Contract: environments/static/renderers.js.
 * state = {"board": [9 ints: 0 empty, 1 X (seat 0), 2 O (seat 1)], "to_move", "winner", "done", "last_action"}
 */
(function () {
  "use strict";
  var SVG_NS = "http://www.w3.org/2000/svg";
  var LINES = [[0, 1, 2], [3, 4, 5], [6, 7, 8], [0, 3, 6], [1, 4, 7], [2, 5, 8], [0, 4, 8], [2, 4, 6]];
  var CELL = 100;
  var PAD = 10;
  var COLORS = { grid: "#334155", x: "#2563eb", o: "#dc2626", last: "#fef3c7", win: "#16a34a", text: "#0f172a" };

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

  function winningLine(board) {
    for (var i = 0; i < LINES.length; i++) {
      var l = LINES[i];
      if (board[l[0]] !== 0 && board[l[0]] === board[l[1]] && board[l[1]] === board[l[2]]) return l;
    }
    return null;
  }

  function center(cell) {
    return [PAD + (cell % 3) * CELL + CELL / 2, PAD + Math.floor(cell / 3) * CELL + CELL / 2];
  }

  function status(state, names) {
    var label = function (seat) {
      var mark = seat === 0 ? "X" : "O";
      return names ? mark + " (" + names[seat] + ")" : mark;
    };
    if (state.done) return state.winner === null || state.winner === undefined ? "Draw" : label(state.winner) + " wins";
    return label(state.to_move) + " to move";
  }

  function render(container, state, options) {
    options = options || {};
    var board = state.board;
    var names = seatNames(options);
    var size = 3 * CELL + 2 * PAD;
    var svg = el("svg", {
      viewBox: "0 0 " + size + " " + (size + 36),
      width: options.size || "100%",
      role: "img",
      "class": "rl-board rl-tic-tac-toe",
      style: "max-width:" + (options.size || 420) + "px;display:block",
    });
    var title = el("title", {}, svg);
    title.textContent = "Tic-tac-toe: " + status(state, names);
    el("rect", { x: 0, y: 0, width: size, height: size, fill: "#ffffff" }, svg);

    if (state.last_action !== null && state.last_action !== undefined) {
      var lc = state.last_action;
      el("rect", {
        x: PAD + (lc % 3) * CELL + 2, y: PAD + Math.floor(lc / 3) * CELL + 2, width: CELL - 4, height: CELL - 4,
        fill: COLORS.last, "class": "rl-last-action",
      }, svg);
    }
    for (var i = 1; i < 3; i++) {
      el("line", { x1: PAD + i * CELL, y1: PAD, x2: PAD + i * CELL, y2: PAD + 3 * CELL, stroke: COLORS.grid, "stroke-width": 4, "stroke-linecap": "round" }, svg);
      el("line", { x1: PAD, y1: PAD + i * CELL, x2: PAD + 3 * CELL, y2: PAD + i * CELL, stroke: COLORS.grid, "stroke-width": 4, "stroke-linecap": "round" }, svg);
    }
    var clickable = typeof options.onAction === "function" && !state.done;
    for (var cell = 0; cell < 9; cell++) {
      var c = center(cell);
      var r = CELL * 0.3;
      if (board[cell] === 1) {
        var g = el("g", { stroke: COLORS.x, "stroke-width": 10, "stroke-linecap": "round", "class": "rl-mark rl-x" }, svg);
        el("line", { x1: c[0] - r, y1: c[1] - r, x2: c[0] + r, y2: c[1] + r }, g);
        el("line", { x1: c[0] + r, y1: c[1] - r, x2: c[0] - r, y2: c[1] + r }, g);
      } else if (board[cell] === 2) {
        el("circle", { cx: c[0], cy: c[1], r: r, fill: "none", stroke: COLORS.o, "stroke-width": 10, "class": "rl-mark rl-o" }, svg);
      } else if (clickable) {
        var hit = el("rect", {
          x: c[0] - CELL / 2 + 4, y: c[1] - CELL / 2 + 4, width: CELL - 8, height: CELL - 8, fill: "transparent",
          "class": "rl-clickable", tabindex: 0, role: "button", "data-action": cell, style: "cursor:pointer",
        }, svg);
        el("title", {}, hit).textContent = "Play row " + (Math.floor(cell / 3) + 1) + ", column " + ((cell % 3) + 1);
        (function (action, node) {
          node.addEventListener("click", function () { options.onAction(action); });
          node.addEventListener("keydown", function (ev) {
            if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); options.onAction(action); }
          });
        })(cell, hit);
      }
    }
    var line = winningLine(board);
    if (line) {
      var a = center(line[0]);
      var b = center(line[2]);
      el("line", { x1: a[0], y1: a[1], x2: b[0], y2: b[1], stroke: COLORS.win, "stroke-width": 12, "stroke-linecap": "round", opacity: 0.8, "class": "rl-winning-line" }, svg);
    }
    var text = el("text", { x: size / 2, y: size + 26, "text-anchor": "middle", "font-family": "sans-serif", "font-size": 20, fill: COLORS.text, "class": "rl-status" }, svg);
    text.textContent = status(state, names);

    while (container.firstChild) container.removeChild(container.firstChild);
    container.appendChild(svg);
    return svg;
  }

  window.RLArenaRenderers = window.RLArenaRenderers || {};
  window.RLArenaRenderers["tic-tac-toe"] = render;
})();
