// RL Arena harness for C++ agents (header only, C++17, standard library + POSIX). Ours, not the user's:
// the builder compiles the agent's .cpp files against this copy, so the protocol is always the platform's.
//
//   #include "arena.hpp"
//   class MyPlayer : public arena::Player {
//     int start(const arena::Observation& obs, const std::vector<int>& valid) override { return valid[0]; }
//     int step(const arena::Observation& obs, const std::vector<int>& valid, double reward) override {
//       return valid[0];
//     }
//   };
//   int main(int argc, char** argv) { MyPlayer player; return arena::run(argc, argv, player); }
//
// arena::run speaks the protocol of docs/PROTOCOL.md (newline-delimited JSON) with the referee: over the
// Unix socket named by `--connect PATH` (the Docker sandbox), else over stdin/stdout. Either way fd 0 then
// reads /dev/null and fd 1 (std::cout, printf) writes to stderr, so the agent's prints never corrupt the
// protocol; they end up in the owner's log. An exception thrown by the player is reported as an `error`
// message (its what()), and the harness keeps serving; a crash ends the process (the referee's CRASH).
#pragma once

// Few, light headers on purpose: they are parsed again for every agent build.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <fcntl.h>
#include <time.h>
#include <cxxabi.h>
#include <cstdlib>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>
#include <typeinfo>
#include <utility>
#include <vector>

namespace arena {

// An observation: the game's nested lists of numbers, flattened row-major, with their shape.
// Connect Four: shape {6, 7}, at(r, c) is 1 (mine), -1 (opponent's) or 0 (empty), row 0 at the top.
struct Observation {
  std::vector<double> values;
  std::vector<size_t> shape;

  size_t size() const { return values.size(); }
  double operator[](size_t i) const { return values.at(i); }
  int get(size_t i) const { return static_cast<int>(values.at(i)); }
  // Element (row, column) of a 2-D observation.
  int at(size_t row, size_t column) const {
    if (shape.size() != 2) throw std::out_of_range("at(row, column) needs a 2-D observation");
    return static_cast<int>(values.at(row * shape[1] + column));
  }
};

// What an agent implements. start: the first move of a match; step: every later move; end: the match is
// over (reward +1 win, -1 loss, 0 draw). Return one of `valid`.
class Player {
 public:
  virtual ~Player() = default;
  virtual int start(const Observation& obs, const std::vector<int>& valid) = 0;
  virtual int step(const Observation& obs, const std::vector<int>& valid, double reward) = 0;
  virtual void end(const Observation& obs, double reward) { (void)obs, (void)reward; }
};

namespace detail {

// A minimal JSON value: enough for the referee's messages (objects, arrays, numbers, strings, literals).
struct Json {
  enum Kind { Null, Bool, Number, String, Array, Object } kind = Null;
  double number = 0;
  bool boolean = false;
  std::string text;
  std::vector<Json> items;
  std::vector<std::pair<std::string, Json>> fields;

  const Json* get(const std::string& key) const {
    for (const auto& field : fields)
      if (field.first == key) return &field.second;
    return nullptr;
  }
};

class Parser {
 public:
  explicit Parser(const std::string& s) : s_(s) {}
  Json parse() {
    Json value = value_(0);
    space_();
    if (i_ != s_.size()) fail_("trailing characters");
    return value;
  }

 private:
  const std::string& s_;
  size_t i_ = 0;

  [[noreturn]] void fail_(const char* what) { throw std::runtime_error(std::string("bad JSON from the referee: ") + what); }
  void space_() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\r' || s_[i_] == '\n')) ++i_;
  }
  bool literal_(const char* word) {
    size_t n = std::strlen(word);
    if (s_.compare(i_, n, word) != 0) return false;
    i_ += n;
    return true;
  }
  Json value_(int depth) {
    if (depth > 64) fail_("nested too deeply");
    space_();
    if (i_ >= s_.size()) fail_("unexpected end");
    Json v;
    char c = s_[i_];
    if (c == '{') {
      v.kind = Json::Object;
      ++i_;
      space_();
      if (i_ < s_.size() && s_[i_] == '}') { ++i_; return v; }
      for (;;) {
        space_();
        if (i_ >= s_.size() || s_[i_] != '"') fail_("expected a key");
        std::string key = string_();
        space_();
        if (i_ >= s_.size() || s_[i_] != ':') fail_("expected ':'");
        ++i_;
        Json value = value_(depth + 1);
        v.fields.emplace_back(std::move(key), std::move(value));
        space_();
        if (i_ < s_.size() && s_[i_] == ',') { ++i_; continue; }
        if (i_ < s_.size() && s_[i_] == '}') { ++i_; return v; }
        fail_("expected ',' or '}'");
      }
    }
    if (c == '[') {
      v.kind = Json::Array;
      ++i_;
      space_();
      if (i_ < s_.size() && s_[i_] == ']') { ++i_; return v; }
      for (;;) {
        v.items.push_back(value_(depth + 1));
        space_();
        if (i_ < s_.size() && s_[i_] == ',') { ++i_; continue; }
        if (i_ < s_.size() && s_[i_] == ']') { ++i_; return v; }
        fail_("expected ',' or ']'");
      }
    }
    if (c == '"') { v.kind = Json::String; v.text = string_(); return v; }
    if (literal_("true")) { v.kind = Json::Bool; v.boolean = true; return v; }
    if (literal_("false")) { v.kind = Json::Bool; return v; }
    if (literal_("null")) return v;
    const char* start = s_.c_str() + i_;
    char* end = nullptr;
    v.number = std::strtod(start, &end);
    if (end == start) fail_("unexpected character");
    v.kind = Json::Number;
    i_ += static_cast<size_t>(end - start);
    return v;
  }
  std::string string_() {
    std::string out;
    ++i_;  // opening quote
    while (i_ < s_.size() && s_[i_] != '"') {
      char c = s_[i_++];
      if (c != '\\') { out += c; continue; }
      if (i_ >= s_.size()) break;
      char e = s_[i_++];
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'u': out += '?'; i_ += 4; break;  // the referee sends ASCII; keys never need \u
        default: out += e;
      }
    }
    if (i_ >= s_.size()) fail_("unterminated string");
    ++i_;
    return out;
  }
};

inline void flatten(const Json& v, Observation& obs, size_t depth) {
  if (v.kind == Json::Array) {
    if (obs.shape.size() <= depth) obs.shape.push_back(v.items.size());
    for (const Json& item : v.items) flatten(item, obs, depth + 1);
  } else if (v.kind == Json::Number) {
    obs.values.push_back(v.number);
  } else if (v.kind == Json::Bool) {
    obs.values.push_back(v.boolean ? 1 : 0);
  } else {
    throw std::runtime_error("the observation holds something other than numbers");
  }
}

inline Observation observation(const Json& msg) {
  Observation obs;
  if (const Json* state = msg.get("state")) flatten(*state, obs, 0);
  return obs;
}

inline std::vector<int> valid_actions(const Json& msg) {
  std::vector<int> valid;
  if (const Json* list = msg.get("valid_actions"))
    for (const Json& item : list->items) valid.push_back(static_cast<int>(item.number));
  return valid;
}

inline double reward(const Json& msg) {
  const Json* r = msg.get("reward");
  return r && r->kind == Json::Number ? r->number : 0.0;
}

inline std::string quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') { out += '\\'; out += static_cast<char>(c); }
    else if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c >= 0x7f) { char buf[8]; std::snprintf(buf, sizeof buf, "\\u%04x", c); out += buf; }
    else out += static_cast<char>(c);
  }
  return out + "\"";
}

class Channel {
 public:
  Channel(int read_fd, int write_fd) : read_fd_(read_fd), write_fd_(write_fd) {}
  bool readline(std::string& line) {
    for (;;) {
      size_t nl = buffer_.find('\n');
      if (nl != std::string::npos) {
        line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        return true;
      }
      char chunk[65536];
      ssize_t n = ::read(read_fd_, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      buffer_.append(chunk, static_cast<size_t>(n));
    }
  }
  void write(const std::string& message) {
    std::string data = message + "\n";
    size_t done = 0;
    while (done < data.size()) {
      ssize_t n = ::write(write_fd_, data.data() + done, data.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) throw std::runtime_error("the referee closed the channel");
      done += static_cast<size_t>(n);
    }
  }
  void close() {
    ::close(read_fd_);
    if (write_fd_ != read_fd_) ::close(write_fd_);
  }

 private:
  int read_fd_, write_fd_;
  std::string buffer_;
};

// fd 0 <- /dev/null, fd 1 -> stderr: the agent's own output can never reach the protocol.
inline void detach_stdio() {
  std::fflush(stdout);
  int devnull = ::open("/dev/null", O_RDONLY);
  if (devnull >= 0) { ::dup2(devnull, 0); ::close(devnull); }
  ::dup2(2, 1);
}

inline Channel connect_channel(int argc, char** argv) {
  std::string path;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--connect") path = argv[i + 1];
  if (path.empty()) {
    int in = ::dup(0), out = ::dup(1);
    ::fcntl(in, F_SETFD, FD_CLOEXEC);
    ::fcntl(out, F_SETFD, FD_CLOEXEC);
    detach_stdio();
    return Channel(in, out);
  }
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof address.sun_path) throw std::runtime_error("socket path too long");
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  timespec started{};
  clock_gettime(CLOCK_MONOTONIC, &started);
  for (;;) {
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) throw std::runtime_error("socket() failed");
    if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0) {
      detach_stdio();
      return Channel(fd, fd);
    }
    ::close(fd);
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec - started.tv_sec > 10) throw std::runtime_error("cannot connect to " + path);
    timespec pause{0, 20 * 1000 * 1000};
    nanosleep(&pause, nullptr);
  }
}

inline std::string type_name(const std::type_info& type) {
  int status = 0;
  char* name = abi::__cxa_demangle(type.name(), nullptr, nullptr, &status);
  std::string out = status == 0 && name ? name : type.name();
  std::free(name);
  return out;
}

inline std::string error_message(const std::string& exception, const std::string& what) {
  std::string message = what.size() > 8000 ? "...(truncated)..." + what.substr(what.size() - 8000) : what;
  return "{\"type\":\"error\",\"exception\":" + quote(exception) + ",\"message\":" + quote(message) + "}";
}

}  // namespace detail

// Serve the referee until `close` or the end of input; returns the process's exit code.
inline int run(int argc, char** argv, Player& player) {
  std::signal(SIGPIPE, SIG_IGN);
  detail::Channel channel = detail::connect_channel(argc, argv);
  channel.write("{\"type\":\"ready\"}");
  std::string line;
  try {
    while (channel.readline(line)) {
      detail::Json msg = detail::Parser(line).parse();
      const detail::Json* type = msg.get("type");
      std::string kind = type ? type->text : "";
      if (kind == "close") {
        channel.close();
        return 0;
      }
      std::string reply;
      try {
        if (kind == "start") {
          int action = player.start(detail::observation(msg), detail::valid_actions(msg));
          reply = "{\"type\":\"action\",\"action\":" + std::to_string(action) + "}";
        } else if (kind == "step") {
          int action = player.step(detail::observation(msg), detail::valid_actions(msg), detail::reward(msg));
          reply = "{\"type\":\"action\",\"action\":" + std::to_string(action) + "}";
        } else if (kind == "end") {
          player.end(detail::observation(msg), detail::reward(msg));
          reply = "{\"type\":\"ended\"}";
        } else {
          reply = detail::error_message("ProtocolError", "unknown message type '" + kind + "'");
        }
      } catch (const std::exception& exc) {
        reply = detail::error_message(detail::type_name(typeid(exc)), exc.what());
      } catch (...) {
        reply = detail::error_message("unknown", "the player threw something that is not a std::exception");
      }
      std::fflush(stdout);
      channel.write(reply);
    }
  } catch (const std::exception& exc) {
    std::fprintf(stderr, "arena harness: %s\n", exc.what());
    return 1;
  }
  return 0;
}

}  // namespace arena
