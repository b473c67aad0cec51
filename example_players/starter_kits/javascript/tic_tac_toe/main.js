// Tic-tac-toe starter agent in JavaScript for RL Arena.
//
// What the arena sends (the game's rules page has the full rules):
// state: 3 rows of 3 cells: 1 = your mark, -1 = the opponent's, 0 = empty (row 0 at the top).
// actions: cell = row * 3 + column (0..8); valid actions are the empty cells.
// This kit wins when it can, else blocks the opponent's win, else takes the centre, else plays at random.
//
// Return one of `validActions`; anything else loses the match (INVALID_ACTION). You have 1 s per
// move. The arena's Node.js harness requires this file; upload the folder as a zip (main.js at its
// top level). docs/PROTOCOL.md describes what the harness speaks.
'use strict';

function randomChoice(validActions) {
  return validActions[Math.floor(Math.random() * validActions.length)];
}

const LINES = [[0, 1, 2], [3, 4, 5], [6, 7, 8], [0, 3, 6], [1, 4, 7], [2, 5, 8], [0, 4, 8], [2, 4, 6]];

function choose(state, validActions) {
  const cells = state.flat();
  for (const who of [1, -1]) { // first a winning cell of ours, then one that blocks the opponent
    for (const cell of validActions) {
      for (const line of LINES) {
        if (line.includes(cell) && line.filter((c) => c !== cell && cells[c] === who).length === 2) return cell;
      }
    }
  }
  if (validActions.includes(4)) return 4;
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
