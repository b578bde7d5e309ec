// defines: hold_termination_signal, release_termination_signal, termination_requested
#include "runtime/termination.h"

#include <signal.h>

#include <atomic>
#include <mutex>

namespace asyncps::detail {

namespace {
volatile sig_atomic_t g_requested = 0;
std::mutex g_mu;
int g_holds = 0;
bool g_installed = false;  // this library's handler is SIGTERM's (the disposition was the default)

extern "C" void on_sigterm(int) { g_requested = 1; }
}  // namespace

void hold_termination_signal() noexcept {
  std::lock_guard lock(g_mu);
  if (g_holds++ > 0) return;
  struct sigaction old {};
  if (sigaction(SIGTERM, nullptr, &old) != 0 || (old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL) return;
  struct sigaction sa {};
  sa.sa_handler = on_sigterm;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  g_installed = sigaction(SIGTERM, &sa, nullptr) == 0;
}

void release_termination_signal() noexcept {
  std::lock_guard lock(g_mu);
  if (g_holds == 0 || --g_holds > 0 || !g_installed) return;
  g_installed = false;
  if (g_requested) return;  // (the job is stopping for it: a second TERM must not kill the final save)
  struct sigaction now {};
  if (sigaction(SIGTERM, nullptr, &now) != 0 || (now.sa_flags & SA_SIGINFO) || now.sa_handler != on_sigterm)
    return;  // the program installed its own handler meanwhile: it stays
  struct sigaction sa {};
  sa.sa_handler = SIG_DFL;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
}

bool termination_requested() noexcept { return g_requested != 0; }

}  // namespace asyncps::detail
