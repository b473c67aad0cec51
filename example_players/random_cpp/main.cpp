// Random example player in C++: picks uniformly among the valid actions. Works for every game.
// The arena compiles every .cpp file of the zip with g++ (C++17, -O2) against its harness header
// arena.hpp (run_duel/harness/arena.hpp; docs/PROTOCOL.md describes what it speaks).
#include <random>
#include <vector>

#include "arena.hpp"

class RandomPlayer : public arena::Player {
 public:
  int start(const arena::Observation&, const std::vector<int>& valid) override { return pick(valid); }
  int step(const arena::Observation&, const std::vector<int>& valid, double) override { return pick(valid); }
  void end(const arena::Observation&, double) override {}

 private:
  std::mt19937_64 rng_{std::random_device{}()};  // two copies never play in lockstep
  int pick(const std::vector<int>& valid) {
    std::uniform_int_distribution<size_t> index(0, valid.size() - 1);
    return valid[index(rng_)];
  }
};

int main(int argc, char** argv) {
  RandomPlayer player;
  return arena::run(argc, argv, player);
}
