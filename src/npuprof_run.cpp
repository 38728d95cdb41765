// npuprof-run: captures the mstx markers of any program, unchanged.
//
//   npuprof-run [options] -- PROGRAM [ARGS...]
//
// Runs PROGRAM with MSTX_INJECTION_PATH naming npuprof's injection library
// (and the options as NPUPROF_* variables), passes on the signals it is sent,
// says where each trace went (the program's and those of children it
// forked), and exits as the program did.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <npuprof/version.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace fs = std::filesystem;

namespace {

constexpr const char* usage_text =
    "usage: npuprof-run [options] -- PROGRAM [ARGS...]\n"
    "Runs PROGRAM with npuprof capturing its mstx markers; each trace is written when a process\n"
    "of it exits, and listed here.\n"
    "\n"
    "options:\n"
    "  -o, --output DIR        where traces are written (NPUPROF_OUTPUT_DIR; default: .)\n"
    "  --export TYPES          text, db or text,db (NPUPROF_EXPORT_TYPE; default: text)\n"
    "  --flight-recorder       keep the last minute in memory; `kill -USR1` this process to dump it\n"
    "                          (NPUPROF_FLIGHT_RECORDER=1)\n"
    "  --include DOMAINS       only these mstx domains record, comma-separated (NPUPROF_DOMAIN_INCLUDE)\n"
    "  --exclude DOMAINS       these mstx domains do not record (NPUPROF_DOMAIN_EXCLUDE)\n"
    "  --config FILE           a JSON configuration file (NPUPROF_CONFIG)\n"
    "  --wait all|primary      wait for every process the program started (all, the default), or for\n"
    "                          the program only (primary)\n"
    "  --library PATH          the injection library to use (default: the one installed with npuprof-run)\n"
    "  -h, --help              this text\n"
    "  --version               npuprof's version\n";

constexpr const char* library_name = "libnpuprof_mstx.so";

// Every message of npuprof-run: one line on stderr, with its prefix, in one write.
__attribute__((format(printf, 1, 2))) void tell(const char* format, ...) {
  char line[8192] = "npuprof-run: ";
  const std::size_t prefix = std::strlen(line);
  va_list args;
  va_start(args, format);
  const int n = std::vsnprintf(line + prefix, sizeof line - prefix - 1, format, args);
  va_end(args);
  std::size_t size = n < 0 ? prefix : std::min(prefix + static_cast<std::size_t>(n), sizeof line - 2);
  line[size++] = '\n';
  (void)!::write(STDERR_FILENO, line, size);
}

[[noreturn]] void usage_error(const std::string& what) {
  const std::string usage(usage_text, std::strlen(usage_text) - 1);  // tell() ends the line
  tell("%s\n%s", what.c_str(), usage.c_str());
  std::exit(2);
}

[[noreturn]] void fail(const std::string& what) {
  tell("%s", what.c_str());
  std::exit(2);
}

struct options {
  std::vector<std::pair<std::string, std::string>> env;  // NPUPROF_* variables to set
  std::string library;
  bool wait_all = true;
  std::vector<char*> program;  // PROGRAM ARGS..., null-terminated
};

bool known_export_types(const std::string& list) {
  std::size_t from = 0;
  while (true) {
    const std::size_t comma = list.find(',', from);
    const std::string t = list.substr(from, comma == std::string::npos ? std::string::npos : comma - from);
    if (t != "text" && t != "db") return false;
    if (comma == std::string::npos) return true;
    from = comma + 1;
  }
}

options parse(int argc, char** argv) {
  options o;
  int i = 1;
  // An option's value: "--name value" or "--name=value".
  auto value = [&](const std::string& arg, const std::string& name, std::string& out) {
    if (arg == name) {
      if (i + 1 >= argc) usage_error("option '" + name + "' needs a value");
      out = argv[++i];
      return true;
    }
    if (arg.rfind(name + "=", 0) == 0) {
      out = arg.substr(name.size() + 1);
      return true;
    }
    return false;
  };
  for (; i < argc; ++i) {
    const std::string arg = argv[i];
    std::string v;
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg.empty() || arg[0] != '-') break;  // the program, without "--"
    if (arg == "-h" || arg == "--help") {
      std::fputs(usage_text, stdout);
      std::exit(0);
    }
    if (arg == "--version") {
      std::printf("npuprof-run %s\n", npuprof::version_string);
      std::exit(0);
    }
    if (arg == "--flight-recorder") {
      o.env.emplace_back("NPUPROF_FLIGHT_RECORDER", "1");
    } else if (value(arg, "-o", v) || value(arg, "--output", v)) {
      if (v.empty()) usage_error("option '" + arg + "' needs a directory");
      o.env.emplace_back("NPUPROF_OUTPUT_DIR", v);
    } else if (value(arg, "--export", v)) {
      if (!known_export_types(v)) usage_error("option '--export': expected text, db or text,db, got '" + v + "'");
      o.env.emplace_back("NPUPROF_EXPORT_TYPE", v);
    } else if (value(arg, "--include", v)) {
      o.env.emplace_back("NPUPROF_DOMAIN_INCLUDE", v);
    } else if (value(arg, "--exclude", v)) {
      o.env.emplace_back("NPUPROF_DOMAIN_EXCLUDE", v);
    } else if (value(arg, "--config", v)) {
      if (::access(v.c_str(), R_OK) != 0)
        usage_error("option '--config': cannot read '" + v + "': " + std::strerror(errno));
      o.env.emplace_back("NPUPROF_CONFIG", fs::absolute(v).string());
    } else if (value(arg, "--wait", v)) {
      if (v != "all" && v != "primary") usage_error("option '--wait': expected all or primary, got '" + v + "'");
      o.wait_all = v == "all";
    } else if (value(arg, "--library", v)) {
      o.library = v;
    } else {
      usage_error("unknown option '" + arg + "'");
    }
  }
  if (i >= argc) usage_error("no program to run");
  for (; i < argc; ++i) o.program.push_back(argv[i]);
  o.program.push_back(nullptr);
  return o;
}

// The injection library: next to this program (in the build tree), or where
// it was installed, relative to where this program was installed (so that
// an installed tree may be moved).
std::string find_library() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  std::vector<fs::path> tried;
  if (!ec) {
    tried.push_back(self.parent_path() / library_name);
    tried.push_back(self.parent_path() / fs::path(NPUPROF_RUN_LIBDIR).lexically_relative(NPUPROF_RUN_BINDIR) /
                    library_name);
  }
  tried.push_back(fs::path(NPUPROF_RUN_LIBDIR) / library_name);
  std::string list;
  for (const fs::path& p : tried) {
    if (fs::exists(p, ec)) return fs::weakly_canonical(p, ec).string();
    list += "\n  " + p.lexically_normal().string();
  }
  fail(std::string("cannot find ") + library_name + "; looked for:" + list + "\n(give one with --library PATH)");
}

std::atomic<pid_t> g_child{0};            // the program, while it runs
std::atomic<bool> g_stop_waiting{false};  // a signal came after it ended

// A signal sent to npuprof-run goes on to the program. One the terminal sent
// to the whole foreground group (Ctrl-C) reached the program already. Once
// the program has ended, a signal stops the wait for the processes it left.
void pass_on(int sig, siginfo_t* info, void*) {
  const bool from_terminal = info != nullptr && info->si_code == SI_KERNEL;
  const pid_t child = g_child.load();
  if (child == 0 && sig != SIGCONT && sig != SIGWINCH) g_stop_waiting.store(true);
  if (child > 0 && !from_terminal) ::kill(child, sig);
}

constexpr int passed_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCONT, SIGWINCH};

// Starts the program; exits with 127 (not found) or 126 (not runnable), as a
// shell does, when it cannot.
pid_t start(const options& o) {
  int report[2];  // the child's exec error, if any; closed by a successful exec
  if (::pipe2(report, O_CLOEXEC) != 0) fail(std::string("pipe: ") + std::strerror(errno));
  sigset_t all, old;
  sigfillset(&all);
  ::sigprocmask(SIG_BLOCK, &all, &old);  // no signal passed on before the pid is known
  const pid_t pid = ::fork();
  if (pid < 0) fail(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    for (int sig : passed_signals) ::signal(sig, SIG_DFL);
    ::sigprocmask(SIG_SETMASK, &old, nullptr);
    ::close(report[0]);
    ::execvp(o.program[0], o.program.data());
    const int err = errno;
    (void)!::write(report[1], &err, sizeof err);
    ::_exit(127);
  }
  g_child.store(pid);
  struct sigaction sa {};
  sa.sa_sigaction = &pass_on;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  for (int sig : passed_signals) ::sigaction(sig, &sa, nullptr);
  ::sigprocmask(SIG_SETMASK, &old, nullptr);
  ::close(report[1]);
  int err = 0;
  ssize_t n;
  while ((n = ::read(report[0], &err, sizeof err)) < 0 && errno == EINTR) {
  }
  ::close(report[0]);
  if (n == sizeof err) {
    ::waitpid(pid, nullptr, 0);
    tell("cannot run '%s': %s", o.program[0], std::strerror(err));
    std::exit(err == ENOENT ? 127 : 126);
  }
  return pid;
}

int wait_for(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) fail(std::string("waitpid: ") + std::strerror(errno));
  }
  g_child.store(0);
  return status;
}

// Processes the program started and left running (daemons, workers) are
// this process's children now (it is their subreaper): waits for them, as
// their traces are written when they exit, unless told not to. True when
// some still run.
bool wait_for_the_rest(bool wait_all) {
  bool said = false;
  while (true) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid > 0) continue;
    if (pid < 0 && errno == EINTR) continue;
    if (pid < 0) return false;  // none left
    if (!wait_all) {
      tell(
          "the program ended; processes it started still run: their traces are written when they exit, not "
          "listed here");
      return true;
    }
    if (g_stop_waiting.load()) {
      tell("stopped waiting for the processes the program started: their traces are not listed here");
      return true;
    }
    if (!said) {
      tell(
          "the program ended; waiting for the processes it started (a signal stops the wait; --wait primary "
          "does not wait)");
      said = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// Ends this process as the program ended: with its exit status, or killed by
// the same signal (without a core file of its own).
[[noreturn]] void end_as(int status) {
  if (WIFEXITED(status)) std::exit(WEXITSTATUS(status));
  const int sig = WTERMSIG(status);
  std::fflush(nullptr);
  const struct rlimit no_core { 0, 0 };
  ::setrlimit(RLIMIT_CORE, &no_core);
  ::signal(sig, SIG_DFL);
  sigset_t only;
  sigemptyset(&only);
  sigaddset(&only, sig);
  ::sigprocmask(SIG_UNBLOCK, &only, nullptr);
  ::raise(sig);
  std::_Exit(128 + sig);
}

// The file the injection library notes each trace it writes in, under
// TMPDIR or /tmp; without one the program still runs, its traces unlisted.
std::string make_trace_list() {
  std::string why;
  for (const char* dir : {static_cast<const char*>(std::getenv("TMPDIR")), "/tmp"}) {
    if (dir == nullptr || dir[0] == '\0') continue;
    std::string path = (fs::path(dir) / "npuprof-run.XXXXXX").string();
    const int fd = ::mkstemp(path.data());
    if (fd >= 0) {
      ::close(fd);
      return path;
    }
    why += std::string(why.empty() ? "" : "; ") + dir + ": " + std::strerror(errno);
  }
  tell("traces will not be listed: no file for their list (%s)", why.c_str());
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  options o = parse(argc, argv);
  const std::string library = o.library.empty() ? find_library() : fs::absolute(o.library).string();
  if (!fs::exists(library)) fail("no injection library at '" + library + "'");

  ::setenv("MSTX_INJECTION_PATH", library.c_str(), 1);
  const std::string list = make_trace_list();
  if (!list.empty()) ::setenv("NPUPROF_RUN_TRACE_LIST", list.c_str(), 1);
  for (const auto& [name, v] : o.env) ::setenv(name.c_str(), v.c_str(), 1);
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);  // processes the program leaves behind come back here

  const int status = wait_for(start(o));
  const bool others_run = wait_for_the_rest(o.wait_all);
  if (list.empty()) end_as(status);

  std::ifstream written(list);
  std::size_t traces = 0;
  for (std::string line; std::getline(written, line);) {
    if (line.empty()) continue;
    tell("trace written to %s", line.c_str());
    ++traces;
  }
  ::unlink(list.c_str());
  if (traces == 0 && !others_run) {
    tell(
        "no trace written (the program made no mstx call, or ended without exit(): killed, _exit(), or exec of "
        "a program that makes none)");
  }
  end_as(status);
}
