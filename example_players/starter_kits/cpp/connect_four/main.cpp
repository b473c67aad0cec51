// Connect Four starter agent in C++ for RL Arena.
//
// What the arena sends (the game's rules page has the full rules):
// state: 6 rows of 7 cells: 1 = your piece, -1 = the opponent's, 0 = empty (row 0 is the TOP row);
// pieces drop to the lowest free row of a column.
// actions: the column 0..6; valid actions are the columns that are not full.
// This kit wins when it can, else blocks the opponent's win, else prefers central columns.
//
// Return one of `valid`; anything else loses the match (INVALID_ACTION). You have 1 s per move.
// Test it: docs/PROTOCOL.md; upload this folder as a zip (main.cpp at its top level).
// The arena compiles every .cpp file with g++ (C++17, -O2) against arena.hpp.
#include <algorithm>
#include <random>
#include <vector>

#include "arena.hpp"

class Player : public arena::Player {
 public:
  int start(const arena::Observation& obs, const std::vector<int>& valid) override { return choose(obs, valid); }
  int step(const arena::Observation& obs, const std::vector<int>& valid, double reward) override {
    (void)reward;  // 0 during a match
    return choose(obs, valid);
  }
  void end(const arena::Observation& obs, double reward) override { (void)obs, (void)reward; }

 private:
  std::mt19937 rng_{std::random_device{}()};

  int random_choice(const std::vector<int>& valid) { return valid[rng_() % valid.size()]; }

  // Whether dropping `who`'s piece in `column` makes four in a line.
  static bool wins(const arena::Observation& obs, int column, int who) {
    int row = -1;
    for (int r = 5; r >= 0; --r)
      if (obs.at(r, column) == 0) { row = r; break; }
    if (row < 0) return false;
    const int directions[4][2] = {{0, 1}, {1, 0}, {1, 1}, {1, -1}};
    for (const auto& d : directions) {
      int count = 1;
      for (int sign : {1, -1}) {
        int r = row + sign * d[0], c = column + sign * d[1];
        while (r >= 0 && r < 6 && c >= 0 && c < 7 && obs.at(r, c) == who) {
          ++count;
          r += sign * d[0];
          c += sign * d[1];
        }
      }
      if (count >= 4) return true;
    }
    return false;
  }

  int choose(const arena::Observation& obs, const std::vector<int>& valid) {
    for (int who : {1, -1})
      for (int column : valid)
        if (wins(obs, column, who)) return column;
    for (int column : {3, 2, 4, 1, 5, 0, 6})
      for (int v : valid)
        if (v == column && rng_() % 3 != 0) return column;
    return random_choice(valid);
  }
};

int main(int argc, char** argv) {
  Player player;
  return arena::run(argc, argv, player);
}
