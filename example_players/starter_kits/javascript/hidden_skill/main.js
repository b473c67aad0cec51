// Hidden skill starter agent in JavaScript for RL Arena.
//
// What the arena sends (the game's rules page has the full rules):
// state: 2 numbers: [your seat, number of moves made so far].
// actions: level * 100 + nonce with level and nonce in 0..99; the higher level usually wins.
// This kit plays the highest level with a random nonce.
//
// Return one of `validActions`; anything else loses the match (INVALID_ACTION). You have 1 s per
// move. The arena's Node.js harness requires this file; upload the folder as a zip (main.js at its
// top level). docs/PROTOCOL.md describes what the harness speaks.
'use strict';

function randomChoice(validActions) {
  return validActions[Math.floor(Math.random() * validActions.length)];
}

function choose(state, validActions) {
  const best = Math.max(...validActions.map((a) => Math.floor(a / 100) * 100));
  const wanted = best + Math.floor(Math.random() * 100);
  return validActions.includes(wanted) ? wanted : best;
}

class Player {
  constructor(trainMode) {
    this.trainMode = trainMode;
  }

  start(state, validActions) {
    return choose(state, validActions);
  }

  step(state, validActions, reward) {
    return choose(state, validActions);
  }

  end(state, reward) {}
}

module.exports = Player;
