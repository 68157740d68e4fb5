// Installing a signal handler the same way everywhere: interrupted system calls restart.
#pragma once

#include <signal.h>

#include <initializer_list>

namespace tl {

// `handler` must be async-signal-safe (set an atomic flag, write a pipe).
inline void handleSignals(std::initializer_list<int> signals, void (*handler)(int)) {
  struct sigaction sa {};
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int s : signals) sigaction(s, &sa, nullptr);
}

}  // namespace tl
