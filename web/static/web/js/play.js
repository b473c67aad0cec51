/*
 * RL Arena live play: draws the current state with the game's renderer, sends the person's clicks to
 * the server (which checks them with the game's rules) and polls for the agent's reply until the game
 * ends; then shows the replay. Markup: <div data-play data-game data-state-url data-move-url
 * data-player> plus a <script type="application/json" id="play-data"> holding the first state.
 */
(function () {
  "use strict";

  var POLL_MS = 400;

  function csrfToken() {
    try {
      return JSON.parse(document.body.getAttribute("hx-headers") || "{}")["X-CSRFToken"] || "";
    } catch (e) {
      return "";
    }
  }

  function Play(root) {
    this.root = root;
    this.slug = root.getAttribute("data-game");
    this.stateUrl = root.getAttribute("data-state-url");
    this.moveUrl = root.getAttribute("data-move-url");
    this.isPlayer = root.getAttribute("data-player") === "1";
    this.board = root.querySelector("[data-testid=play-board]");
    this.status = root.querySelector("[data-testid=play-status]");
    this.error = root.querySelector("[data-testid=play-error]");
    this.agentSentence = root.querySelector("[data-testid=play-end-reason]");
    this.agentError = root.querySelector("[data-testid=play-agent-error]");
    this.sending = false;
    this.timer = null;
    this.data = JSON.parse(document.getElementById("play-data").textContent);
    this.draw();
    this.schedule();
  }

  Play.prototype.statusText = function (d) {
    if (d.status === "QUEUED" && d.waiting_behind) {  // over the person's live-game cap: it waits its turn
      return "Waiting: your other live games use your " + d.live_cap + " places; this one starts when one ends.";
    }
    if (d.status === "QUEUED") return "Starting the agent…";
    if (d.status === "FINISHED") return "Game over. " + d.result_display;  // a sentence naming the winner
    if (d.your_turn) return "Your move.";
    if (this.isPlayer) return "The agent is thinking…";
    return "Playing (move " + (d.moves + 1) + ").";
  };

  Play.prototype.draw = function () {
    var d = this.data;
    var self = this;
    // seat: the person's seat (simultaneous turns offer its cards; card games show its hand face up).
    var options = { players: d.players, first_player: d.first_player, seat: d.human_seat };
    if (d.your_turn && !this.sending) options.onAction = function (a) { self.move(a); };
    var render = (window.RLArenaRenderers || {})[this.slug];
    // Keyboard play: a redraw replaces the board's nodes, so the focus goes back to the same move (or to
    // the board itself) instead of falling to the top of the page after every move.
    var focused = document.activeElement;
    var hadFocus = this.board.contains(focused);
    var focusedAction = hadFocus && focused.getAttribute ? focused.getAttribute("data-action") : null;
    if (d.status === "QUEUED") {
      // Not started: no board yet, so no "Red (…) to move" line before the agent is even running.
      this.board.textContent = "The board appears as soon as the agent is ready.";
    } else if (typeof render === "function") render(this.board, d.state, options);
    else this.board.textContent = JSON.stringify(d.state);
    this.labelBoard();
    if (hadFocus) {
      var again = focusedAction !== null && this.board.querySelector('[data-action="' + focusedAction + '"]');
      (again || this.board.querySelector(".rl-clickable") || this.board).focus();
    }
    this.board.setAttribute("data-moves", String(d.moves));
    this.board.setAttribute("data-your-turn", d.your_turn ? "1" : "0");
    this.status.textContent = this.statusText(d);
    this.root.setAttribute("data-status", d.status);
    this.root.setAttribute("data-result", d.result || "");
    if (d.error_msg) {  // the platform's sentence, for everyone
      this.agentSentence.textContent = d.error_msg;
      this.agentSentence.hidden = false;
    }
    if (d.error_detail) {  // the agent's own error and stderr: only sent to its owner and staff
      this.agentError.textContent = d.error_detail;
      this.agentError.hidden = false;
    }
    if (d.status === "FINISHED") {
      this.showReplay();
      this.offerAnotherGame();
    }
  };

  // Once the game is over: "Play again" (the page's form, shown to the person who played) replaces "End".
  Play.prototype.offerAnotherGame = function () {
    var help = document.querySelector("[data-testid=play-help]");
    if (help) help.textContent = "Unrated. The game is over.";
    var again = document.querySelector("[data-testid=play-again-form]");
    var end = document.querySelector("[data-testid=play-end-form]");
    if (end) end.hidden = true;
    if (again && again.hidden) {
      var hadFocus = end && end.contains(document.activeElement);
      again.hidden = false;
      if (hadFocus) again.querySelector("button").focus();  // a keyboard player is not sent to the top
    }
  };

  // A drawing with moves to choose is a group of buttons, not a picture: role "img" would hide them
  // from screen readers (axe: nested-interactive). The board holds the focus between moves.
  Play.prototype.labelBoard = function () {
    this.board.setAttribute("tabindex", "-1");
    var drawings = this.board.querySelectorAll("svg[role=img]");
    for (var i = 0; i < drawings.length; i++) {
      if (!drawings[i].querySelector("[tabindex]")) continue;
      var title = drawings[i].querySelector("title");
      drawings[i].setAttribute("role", "group");
      if (title) drawings[i].setAttribute("aria-label", title.textContent);
    }
  };

  Play.prototype.showError = function (text) {
    this.error.textContent = text;
    this.error.hidden = !text;
  };

  Play.prototype.schedule = function () {
    var self = this;
    if (this.timer) window.clearTimeout(this.timer);
    if (this.data.status === "FINISHED") return;
    this.timer = window.setTimeout(function () { self.poll(); }, POLL_MS);
  };

  Play.prototype.update = function (d) {
    var changed = d.moves !== this.data.moves || d.status !== this.data.status;
    this.data = d;
    if (changed) this.draw();
  };

  Play.prototype.poll = function () {
    var self = this;
    if (this.sending) { this.schedule(); return; }
    fetch(this.stateUrl, { headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (d) { if (d && !self.sending) self.update(d); })
      .catch(function () { /* network blip: try again */ })
      .then(function () { self.schedule(); });
  };

  Play.prototype.move = function (action) {
    var self = this;
    if (this.sending) return;
    this.sending = true;
    this.showError("");
    this.draw();
    fetch(this.moveUrl, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken(), Accept: "application/json" },
      body: JSON.stringify({ action: action })
    })
      .then(function (r) { return r.json().then(function (body) { return { ok: r.ok, body: body }; }); })
      .then(function (res) {
        self.sending = false;
        if (res.ok) { self.data = res.body; self.draw(); } else { self.showError(res.body.error || "Move refused."); self.draw(); }
      })
      .catch(function () { self.sending = false; self.showError("Could not send the move; try again."); self.draw(); })
      .then(function () { self.schedule(); });
  };

  Play.prototype.showReplay = function () {
    if (this.replayShown || !(this.data.states || []).length) return;
    this.replayShown = true;
    var card = document.querySelector("[data-testid=play-replay-card]");
    var script = document.createElement("script");
    script.type = "application/json";
    script.id = "play-replay-data";
    script.textContent = JSON.stringify(this.data);
    document.body.appendChild(script);
    card.hidden = false;
    new window.RLArenaReplay(card.querySelector(".replay"));
  };

  function init() {
    var roots = document.querySelectorAll("[data-play]");
    for (var i = 0; i < roots.length; i++) roots[i].rlPlay = new Play(roots[i]);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
