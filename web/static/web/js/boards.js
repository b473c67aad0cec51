/*
 * RL Arena game boards: each <div data-sample-board data-game="slug"> is drawn by the game's own renderer
 * (window.RLArenaRenderers[slug], loaded by the page) from the JSON script "sample-boards"
 * ({slug: {state, players, first_player}}: the latest duel's final position, or a sample one). A picture only: no moves to click, no caption (options.compact).
 */
(function () {
  "use strict";

  function init() {
    var source = document.getElementById("sample-boards");
    if (!source) return;
    var states = JSON.parse(source.textContent);
    var nodes = document.querySelectorAll("[data-sample-board]");
    for (var i = 0; i < nodes.length; i++) {
      var slug = nodes[i].getAttribute("data-game");
      var render = (window.RLArenaRenderers || {})[slug];
      var board = states[slug];
      if (typeof render !== "function" || !board) continue;
      render(nodes[i], board.state, { players: board.players, first_player: board.first_player, seat: 0, compact: true });
      nodes[i].hidden = false;
    }
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
