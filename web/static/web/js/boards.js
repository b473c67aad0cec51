/*
 * RL Arena sample boards: each <div data-sample-board data-game="slug"> is drawn by the game's own renderer
 * (window.RLArenaRenderers[slug], loaded by the page) from the position in the JSON script "sample-boards"
 * ({slug: state}). A picture only: no moves to click.
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
      if (typeof render !== "function" || !states[slug]) continue;
      render(nodes[i], states[slug], { players: ["Player 1", "Player 2"], first_player: "PLAYER_1", seat: 0 });
      nodes[i].hidden = false;
    }
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
