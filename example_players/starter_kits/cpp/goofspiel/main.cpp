// Goofspiel starter agent in C++ for RL Arena.
//
// What the arena sends (the game's rules page has the full rules):
// state: 43 numbers from your side: [0] the prize card on the table, [1] your points, [2] the
// opponent's, [3] the turn 0..12, [4..16] 1 if you still hold card v (index 4 + v - 1), [17..29] the
// same for the opponent, [30..42] 1 if prize card v is still to come.
// actions: card - 1 (0..12): bid that card from your hand; valid actions are the cards you hold.
// This kit bids the card equal to the prize when it holds it, else its lowest card.
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
    int prize = obs.get(0);
    for (int action : valid)
      if (action == prize - 1) return action;
    int lowest = valid.front();
    for (int action : valid) lowest = std::min(lowest, action);
    return lowest;
  }
};

int main(int argc, char** argv) {
  Player player;
  return arena::run(argc, argv, player);
}
