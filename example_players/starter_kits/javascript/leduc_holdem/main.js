// Leduc Hold'em starter agent in JavaScript for RL Arena.
//
// What the arena sends (the game's rules page has the full rules):
// state: 16 numbers from your side: [0] your card's rank (0 Jack, 1 Queen, 2 King), [1] the public
// card's rank (-1 before it is turned up), [2] the betting round, [3] your chips in the pot, [4] the
// opponent's, [5..12] this hand's actions, [13] hand number, [14] chips won so far, [15] 1 if you act first.
// actions: 0 fold (only when facing a bet), 1 call or check, 2 bet or raise.
// This kit raises with a King or a pair with the public card, folds a Jack facing a bet, else calls.
//
// Return one of `validActions`; anything else loses the match (INVALID_ACTION). You have 1 s per
// move. The arena's Node.js harness requires this file; upload the folder as a zip (main.js at its
// top level). docs/PROTOCOL.md describes what the harness speaks.
'use strict';

function randomChoice(validActions) {
  return validActions[Math.floor(Math.random() * validActions.length)];
}

function choose(state, validActions) {
  const [card, board] = state;
  const strong = card === 2 || card === board;
  if (strong && validActions.includes(2)) return 2;
  if (card === 0 && board !== 0 && validActions.includes(0)) return 0; // a Jack facing a bet
  return validActions.includes(1) ? 1 : validActions[0];
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
