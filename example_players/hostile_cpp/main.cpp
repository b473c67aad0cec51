// Hostile C++ agent for the tests: misbehaves as the ARENA_HOSTILE environment variable says, on its first
// move (the test passes it through the launch spec):
//   crash      dereferences a null pointer (SIGSEGV)             -> CRASH
//   throw      throws std::runtime_error (an `error` message)     -> CRASH
//   timeout    spins forever                                      -> TIMEOUT
//   flood      writes endless bytes without a newline on the protocol socket -> OUTPUT_LIMIT
//   malformed  writes a line that is not JSON on the protocol socket        -> BAD_OUTPUT
//   illegal    returns an action that is not valid                -> INVALID_ACTION
//   stdout     prints 4 MB with std::cout, then plays fine (its output lands in the capped log)
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "arena.hpp"

namespace {

// The harness's private protocol socket: the first socket descriptor after stdio.
int protocol_fd() {
  for (int fd = 3; fd < 64; ++fd) {
    struct stat info;
    if (fstat(fd, &info) == 0 && S_ISSOCK(info.st_mode)) return fd;
  }
  return -1;
}

class Hostile : public arena::Player {
 public:
  int start(const arena::Observation&, const std::vector<int>& valid) override { return misbehave(valid); }
  int step(const arena::Observation&, const std::vector<int>& valid, double) override { return misbehave(valid); }

 private:
  int misbehave(const std::vector<int>& valid) {
    const char* how = std::getenv("ARENA_HOSTILE");
    std::string mode = how ? how : "";
    if (mode == "crash") {
      volatile int* nowhere = nullptr;
      return *nowhere;
    }
    if (mode == "throw") throw std::runtime_error("hostile: thrown on purpose");
    if (mode == "timeout") {
      volatile unsigned long spin = 0;
      for (;;) ++spin;
    }
    if (mode == "flood" || mode == "malformed") {
      int fd = protocol_fd();
      std::string chunk = mode == "flood" ? std::string(65536, 'x') : std::string("this is not json\n");
      for (int i = 0; i < (mode == "flood" ? 1000 : 1); ++i)
        if (write(fd, chunk.data(), chunk.size()) < 0) break;
      for (;;) pause();
    }
    if (mode == "illegal") return -12345;
    if (mode == "stdout") {
      std::string line(1023, 'o');
      for (int i = 0; i < 4096; ++i) std::cout << line << '\n';
      std::cout.flush();
    }
    return valid.front();
  }
};

}  // namespace

int main(int argc, char** argv) {
  Hostile player;
  return arena::run(argc, argv, player);
}
