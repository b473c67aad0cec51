// Random example player in JavaScript: picks uniformly among the valid actions. Works for every game.
// The arena's Node.js harness (run_duel/harness/arena_harness.js) requires this file and builds the
// exported Player; docs/PROTOCOL.md describes what it speaks.
'use strict';

class Player {
  constructor(trainMode) {
    this.trainMode = trainMode;
  }

  start(state, validActions) {
    return this.pick(validActions);
  }

  step(state, validActions, reward) {
    return this.pick(validActions);
  }

  end(state, reward) {}

  pick(validActions) {
    return validActions[Math.floor(Math.random() * validActions.length)];
  }
}

module.exports = Player;
