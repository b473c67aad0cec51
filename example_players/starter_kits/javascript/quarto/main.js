// Quarto starter agent in JavaScript for RL Arena.
//
// What the arena sends (the game's rules page has the full rules):
// state: 17 numbers: 16 board cells (row * 4 + column) holding a piece id 0..15 or -1 when empty, then
// the piece you must place now (-1 on the very first turn, when you only choose a piece to give).
// A piece id's bits are its attributes (1 tall, 2 dark, 4 square, 8 hollow); four pieces in a line that
// share an attribute value win for whoever placed the fourth.
// actions: 17 * cell + piece: place your piece on `cell` and give `piece` to the opponent (cell 16:
// place nothing, first turn only; piece 16: nothing left to give).
// This kit plays at random among the valid actions: make it avoid handing over a winning piece.
//
// Return one of `validActions`; anything else loses the match (INVALID_ACTION). You have 1 s per
// move. The arena's Node.js harness requires this file; upload the folder as a zip (main.js at its
// top level). docs/PROTOCOL.md describes what the harness speaks.
'use strict';

function randomChoice(validActions) {
  return validActions[Math.floor(Math.random() * validActions.length)];
}

function choose(state, validActions) {
  // state[0..15]: the board, state[16]: the piece in hand
  return randomChoice(validActions);
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
