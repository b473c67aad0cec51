// Hidden skill starter agent in C++ for RL Arena.
//
// What the arena sends (the game's rules page has the full rules):
// state: 2 numbers: [your seat, number of moves made so far].
// actions: level * 100 + nonce with level and nonce in 0..99; the higher level usually wins.
// This kit plays the highest level with a random nonce.
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
    (void)obs;
    int best = valid.front();
    for (int action : valid) best = std::max(best, action / 100 * 100);
    int nonce = static_cast<int>(rng_() % 100);
    for (int action : valid)
      if (action == best + nonce) return action;
    return best;
  }
};

int main(int argc, char** argv) {
  Player player;
  return arena::run(argc, argv, player);
}
