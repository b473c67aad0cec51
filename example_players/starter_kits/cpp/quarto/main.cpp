// Quarto starter agent in C++ for RL Arena.
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
    (void)obs;  // obs.get(0..15): the board, obs.get(16): the piece in hand
    return random_choice(valid);
  }
};

int main(int argc, char** argv) {
  Player player;
  return arena::run(argc, argv, player);
}
