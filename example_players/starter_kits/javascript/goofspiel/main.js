// Goofspiel starter agent in JavaScript for RL Arena.
//
// What the arena sends (the game's rules page has the full rules):
// state: 43 numbers from your side: [0] the prize card on the table, [1] your points, [2] the
// opponent's, [3] the turn 0..12, [4..16] 1 if you still hold card v (index 4 + v - 1), [17..29] the
// same for the opponent, [30..42] 1 if prize card v is still to come.
// actions: card - 1 (0..12): bid that card from your hand; valid actions are the cards you hold.
// This kit bids the card equal to the prize when it holds it, else its lowest card.
//
// Return one of `validActions`; anything else loses the match (INVALID_ACTION). You have 1 s per
// move. The arena's Node.js harness requires this file; upload the folder as a zip (main.js at its
// top level). docs/PROTOCOL.md describes what the harness speaks.
'use strict';

function randomChoice(validActions) {
  return validActions[Math.floor(Math.random() * validActions.length)];
}

function choose(state, validActions) {
  const prize = state[0];
  if (validActions.includes(prize - 1)) return prize - 1;
  return Math.min(...validActions);
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
