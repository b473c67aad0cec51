// Leduc Hold'em starter agent in C++ for RL Arena.
//
// What the arena sends (the game's rules page has the full rules):
// state: 16 numbers from your side: [0] your card's rank (0 Jack, 1 Queen, 2 King), [1] the public
// card's rank (-1 before it is turned up), [2] the betting round, [3] your chips in the pot, [4] the
// opponent's, [5..12] this hand's actions, [13] hand number, [14] chips won so far, [15] 1 if you act first.
// actions: 0 fold (only when facing a bet), 1 call or check, 2 bet or raise.
// This kit raises with a King or a pair with the public card, folds a Jack facing a bet, else calls.
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

  static bool has(const std::vector<int>& valid, int action) {
    return std::find(valid.begin(), valid.end(), action) != valid.end();
  }

  int choose(const arena::Observation& obs, const std::vector<int>& valid) {
    int card = obs.get(0), board = obs.get(1);
    bool strong = card == 2 || card == board;
    if (strong && has(valid, 2)) return 2;
    if (card == 0 && board != 0 && has(valid, 0)) return 0;  // a Jack facing a bet
    return has(valid, 1) ? 1 : valid.front();
  }
};

int main(int argc, char** argv) {
  Player player;
  return arena::run(argc, argv, player);
}
