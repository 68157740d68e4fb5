// The outer frame of tl's command-line tools: whatever escapes becomes one line on stderr that
// names the program, and the exit status says which kind of failure it was.
#pragma once

#include <cstdio>
#include <exception>
#include <functional>

#include "common/check.h"

namespace tl {

// Runs `body` and returns its exit status; 2 when it throws InputError (bad flags, files,
// values), 1 for any other exception.
inline int runTool(const char* program, const std::function<int()>& body) {
  try {
    return body();
  } catch (const InputError& e) {
    std::fprintf(stderr, "%s: error: %s\n", program, e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", program, e.what());
    return 1;
  }
}

}  // namespace tl
