// Connect Four starter agent in JavaScript for RL Arena.
//
// What the arena sends (the game's rules page has the full rules):
// state: 6 rows of 7 cells: 1 = your piece, -1 = the opponent's, 0 = empty (row 0 is the TOP row);
// pieces drop to the lowest free row of a column.
// actions: the column 0..6; valid actions are the columns that are not full.
// This kit wins when it can, else blocks the opponent's win, else prefers central columns.
//
// Return one of `validActions`; anything else loses the match (INVALID_ACTION). You have 1 s per
// move. The arena's Node.js harness requires this file; upload the folder as a zip (main.js at its
// top level). docs/PROTOCOL.md describes what the harness speaks.
'use strict';

function randomChoice(validActions) {
  return validActions[Math.floor(Math.random() * validActions.length)];
}

// Whether dropping `who`'s piece in `column` makes four in a line.
function wins(board, column, who) {
  let row = -1;
  for (let r = 5; r >= 0; r -= 1) {
    if (board[r][column] === 0) { row = r; break; }
  }
  if (row < 0) return false;
  for (const [dr, dc] of [[0, 1], [1, 0], [1, 1], [1, -1]]) {
    let count = 1;
    for (const sign of [1, -1]) {
      let r = row + sign * dr;
      let c = column + sign * dc;
      while (r >= 0 && r < 6 && c >= 0 && c < 7 && board[r][c] === who) {
        count += 1;
        r += sign * dr;
        c += sign * dc;
      }
    }
    if (count >= 4) return true;
  }
  return false;
}

function choose(state, validActions) {
  for (const who of [1, -1]) {
    for (const column of validActions) if (wins(state, column, who)) return column;
  }
  for (const column of [3, 2, 4, 1, 5, 0, 6]) {
    if (validActions.includes(column) && Math.random() < 0.7) return column;
  }
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
