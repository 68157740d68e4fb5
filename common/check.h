// Errors and check macros used across tl.
//
// Two kinds of failure:
//  - tl::InputError: the user gave something wrong (a flag, a file, a placement). The message
//    names the thing and what is wrong; tools print it and exit with status 2.
//  - tl::Error: an internal invariant broke. The message carries file:line and, for the
//    comparison macros, both operands.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace tl {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// Bad input from the user: flags, files, placements, checkpoints.
class InputError : public Error {
 public:
  explicit InputError(const std::string& what) : Error(what) {}
};

// Bad input that every process of the job meets at the same point with the same message (a
// decision on values all of them hold, such as a step's gradient norm): the launcher prints it
// from the one process that reports it, so the user reads it once.
class JobWideInputError : public InputError {
 public:
  JobWideInputError(const std::string& what, bool reports) : InputError(what), reports_(reports) {}
  bool reports() const { return reports_; }

 private:
  bool reports_;
};

// A collective or peer did not answer in time.
class TimeoutError : public Error {
 public:
  explicit TimeoutError(const std::string& what) : Error(what) {}
};

namespace detail {

inline void appendAll(std::ostringstream&) {}
template <typename T, typename... Rest>
void appendAll(std::ostringstream& os, const T& first, const Rest&... rest) {
  os << first;
  appendAll(os, rest...);
}

template <typename... Args>
std::string concat(const Args&... args) {
  std::ostringstream os;
  appendAll(os, args...);
  return os.str();
}

template <typename E, typename... Args>
[[noreturn]] void fail(const char* file, int line, const char* cond, const Args&... msg) {
  std::ostringstream os;
  os << file << ":" << line << ": check failed: " << cond;
  if constexpr (sizeof...(msg) > 0) {
    os << ": ";
    appendAll(os, msg...);
  }
  throw E(os.str());
}

template <typename A, typename B, typename... Args>
[[noreturn]] void failCmp(const char* file, int line, const char* expr, const A& a, const B& b,
                          const Args&... msg) {
  std::ostringstream os;
  os << file << ":" << line << ": check failed: " << expr << " (" << a << " vs " << b << ")";
  if constexpr (sizeof...(msg) > 0) {
    os << ": ";
    appendAll(os, msg...);
  }
  throw Error(os.str());
}

}  // namespace detail

// Builds a message from streamable pieces: tl::str("rank ", r, " of ", n).
template <typename... Args>
std::string str(const Args&... args) {
  return detail::concat(args...);
}

// Throws InputError with exactly the given message (no file:line: it is for users).
template <typename... Args>
[[noreturn]] void inputError(const Args&... args) {
  throw InputError(detail::concat(args...));
}

}  // namespace tl

// Internal invariants: throw tl::Error with file:line and the condition.
#define TL_CHECK(cond, ...)                                                    \
  do {                                                                         \
    if (!(cond)) ::tl::detail::fail<::tl::Error>(__FILE__, __LINE__, #cond, ##__VA_ARGS__); \
  } while (0)

#define TL_CHECK_OP_(a, b, op, ...)                                                        \
  do {                                                                                     \
    const auto& tl_a_ = (a);                                                               \
    const auto& tl_b_ = (b);                                                               \
    if (!(tl_a_ op tl_b_))                                                                 \
      ::tl::detail::failCmp(__FILE__, __LINE__, #a " " #op " " #b, tl_a_, tl_b_, ##__VA_ARGS__); \
  } while (0)

#define TL_CHECK_EQ(a, b, ...) TL_CHECK_OP_(a, b, ==, ##__VA_ARGS__)
#define TL_CHECK_NE(a, b, ...) TL_CHECK_OP_(a, b, !=, ##__VA_ARGS__)
#define TL_CHECK_LT(a, b, ...) TL_CHECK_OP_(a, b, <, ##__VA_ARGS__)
#define TL_CHECK_LE(a, b, ...) TL_CHECK_OP_(a, b, <=, ##__VA_ARGS__)
#define TL_CHECK_GT(a, b, ...) TL_CHECK_OP_(a, b, >, ##__VA_ARGS__)
#define TL_CHECK_GE(a, b, ...) TL_CHECK_OP_(a, b, >=, ##__VA_ARGS__)

// User input: throw tl::InputError with the message alone when cond is false.
#define TL_REQUIRE(cond, ...)                       \
  do {                                              \
    if (!(cond)) ::tl::inputError(__VA_ARGS__);     \
  } while (0)
