// Tic-tac-toe starter agent in C++ for RL Arena.
//
// What the arena sends (the game's rules page has the full rules):
// state: 3 rows of 3 cells: 1 = your mark, -1 = the opponent's, 0 = empty (row 0 at the top).
// actions: cell = row * 3 + column (0..8); valid actions are the empty cells.
// This kit wins when it can, else blocks the opponent's win, else takes the centre, else plays at random.
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

  int choose(const arena::Observation& obs, const std::vector<int>& valid) {
    static const int lines[8][3] = {{0, 1, 2}, {3, 4, 5}, {6, 7, 8}, {0, 3, 6},
                                    {1, 4, 7}, {2, 5, 8}, {0, 4, 8}, {2, 4, 6}};
    for (int who : {1, -1}) {  // first a winning cell of ours, then one that blocks the opponent
      for (int cell : valid) {
        for (const auto& line : lines) {
          int mine = 0, here = 0;
          for (int c : line) {
            if (c == cell) here = 1;
            else if (obs.get(c) == who) ++mine;
          }
          if (here && mine == 2) return cell;
        }
      }
    }
    for (int cell : valid)
      if (cell == 4) return 4;
    return random_choice(valid);
  }
};

int main(int argc, char** argv) {
  Player player;
  return arena::run(argc, argv, player);
}
