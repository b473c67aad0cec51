/*
 * RL Arena game renderers: shared bootstrap (optional).
 *
 * Each game ships environments/<package>/static/renderer.js, which registers
 *   window.RLArenaRenderers["<slug>"] = function render(container, state, options) { ... }
 * and replaces the container's content with a drawing of ONE JSON state. Renderers are pure functions
 * of (state, options): no network, no globals besides the registry, state text set with textContent only.
 *
 * options (all optional):
 *   players      [name of PLAYER_1, name of PLAYER_2]
 *   first_player "PLAYER_1" | "PLAYER_2"  (who holds seat 0 in this match)
 *   size         width in CSS pixels of the drawing (default: fills the container, max 420px)
 *   onAction     function(action): when given and the game is running, legal moves become clickable
 *   seat         0 | 1: the seat the viewer plays (live play). Card games draw what that seat may see (the
 *                state is already redacted by the server); on a simultaneous turn (Goofspiel) the moves
 *                offered are that seat's, and Leduc Hold'em offers its buttons on that seat's turn only
 *   compact      true: a picture only (game cards), without the words a renderer may add below it
 *
 * This file only adds RLArenaRender(container, slug, state, options), which falls back to a JSON dump
 * when no renderer is registered for the slug or the renderer throws.
 */
(function () {
  "use strict";
  window.RLArenaRenderers = window.RLArenaRenderers || {};

  window.RLArenaRender = function (container, slug, state, options) {
    var render = window.RLArenaRenderers[slug];
    if (typeof render === "function") {
      try {
        render(container, state, options || {});
        return true;
      } catch (err) {
        if (window.console) window.console.error("renderer for " + slug + " failed", err);
      }
    }
    while (container.firstChild) container.removeChild(container.firstChild);
    var pre = document.createElement("pre");
    pre.className = "rl-render-fallback";
    pre.textContent = JSON.stringify(state, null, 1);
    container.appendChild(pre);
    return false;
  };
})();
