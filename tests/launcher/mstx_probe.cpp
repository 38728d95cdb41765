// A program with mstx markers, for npuprof-run's tests. It knows nothing of
// npuprof: like any mstx program it loads the tool MSTX_INJECTION_PATH names.
//
//   mstx_probe marks N       N marks, exit 0
//   mstx_probe exit CODE     a mark, exit(CODE)
//   mstx_probe signal        a mark; says "ready"; a SIGUSR2 makes a mark and exit(7); a SIGTERM kills it
//   mstx_probe fork N        a mark, then a fork()ed child makes N marks and exits; exit 0
//   mstx_probe daemon N      a mark, then exits 0 at once, leaving a daemon (a new session) that makes N marks
//                            after half a second and exits
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "../mstx_loader.hpp"

namespace {

mstx_loader mstx;
volatile std::sig_atomic_t g_usr2 = 0;

void on_usr2(int) { g_usr2 = 1; }

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 && !(argc == 2 && std::strcmp(argv[1], "signal") == 0)) {
    std::fprintf(stderr, "usage: mstx_probe marks N | exit CODE | signal | fork N | daemon N\n");
    return 64;
  }
  if (mstx.load() != MSTX_SUCCESS) {
    std::fprintf(stderr, "mstx_probe: no mstx tool\n");
    return 65;
  }
  const std::string mode = argv[1];
  const int n = argc == 3 ? std::atoi(argv[2]) : 0;
  if (mode == "marks") {
    for (int i = 0; i < n; ++i) mstx.mark("probe mark");
    return 0;
  }
  if (mode == "exit") {
    mstx.mark("before exit");
    std::exit(n);
  }
  if (mode == "signal") {
    std::signal(SIGUSR2, &on_usr2);
    mstx.mark("waiting");
    std::printf("ready\n");
    std::fflush(stdout);
    while (g_usr2 == 0) ::pause();
    mstx.mark("got SIGUSR2");
    std::exit(7);
  }
  if (mode == "fork") {
    mstx.mark("parent");
    const pid_t pid = ::fork();
    if (pid < 0) return 66;
    if (pid == 0) {
      for (int i = 0; i < n; ++i) mstx.mark("child mark");
      std::exit(0);
    }
    int status = 0;
    if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return 67;
    return 0;
  }
  if (mode == "daemon") {
    mstx.mark("before daemon");
    const pid_t pid = ::fork();
    if (pid != 0) return pid < 0 ? 66 : 0;
    ::setsid();
    if (::fork() != 0) ::_exit(0);
    ::usleep(500000);
    for (int i = 0; i < n; ++i) mstx.mark("daemon mark");
    std::exit(0);
  }
  std::fprintf(stderr, "mstx_probe: unknown mode '%s'\n", mode.c_str());
  return 64;
}
