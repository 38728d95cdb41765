// Modules loaded with dlopen by a program linked with no module of its own:
// one with the marker header shares the program's session; one built against
// another npuprof ABI is told, records nothing and cannot start a session,
// instead of sharing process-wide state laid out differently.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>

#include "../support.hpp"

namespace {

struct kernels {
  static constexpr const char* name = "kernels";
};

template <class F>
F symbol(void* lib, const char* name) {
  void* p = ::dlsym(lib, name);
  REQUIRE(p != nullptr);
  return reinterpret_cast<F>(p);
}

/// What `body` writes to stderr.
template <class F>
std::string stderr_of(F&& body) {
  std::fflush(stderr);
  const int saved = ::dup(2);
  std::FILE* tmp = std::tmpfile();
  ::dup2(::fileno(tmp), 2);
  body();
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  std::string out;
  std::rewind(tmp);
  for (int c; (c = std::fgetc(tmp)) != EOF;) out += static_cast<char>(c);
  std::fclose(tmp);
  return out;
}

}  // namespace

TEST_CASE("a module of another ABI records nothing, says so once, and cannot start a session") {
  // This program's control side claimed the process's ABI while it started.
  CHECK(npuprof::unversioned::process_abi.load() == NPUPROF_ABI_VERSION);
  void* markers_lib = ::dlopen(NPUPROF_TEST_OTHER_ABI_MARKERS, RTLD_NOW | RTLD_LOCAL);
  void* session_lib = ::dlopen(NPUPROF_TEST_OTHER_ABI_SESSION, RTLD_NOW | RTLD_LOCAL);
  REQUIRE(markers_lib != nullptr);
  REQUIRE(session_lib != nullptr);
  auto record = symbol<void (*)()>(markers_lib, "other_abi_record");
  auto state = symbol<const void* (*)()>(markers_lib, "other_abi_marker_state");
  auto start = symbol<const char* (*)(const char*)>(session_lib, "other_abi_start_session");

  // Its state is its own, not this program's.
  CHECK(state() != &npuprof::detail::markers());

  test::temp_dir dir;
  std::string said;
  auto t = test::record(test::config_in(dir), [&] {
    npuprof::mark<kernels>("mark of this ABI");
    said = stderr_of([&] {
      record();
      record();
    });
  });
  CHECK(t.count("mark of this ABI", "i") == 1);
  CHECK(t.count("range from the other ABI") == 0);
  CHECK(t.count("mark from the other ABI") == 0);
  INFO(said);
  CHECK(said.find("built against npuprof ABI 999") != std::string::npos);
  CHECK(said.find("already uses ABI " + std::to_string(NPUPROF_ABI_VERSION)) != std::string::npos);
  // Once, not per marker.
  CHECK(said.find("npuprof:") == said.rfind("npuprof:"));

  std::string error;
  stderr_of([&] { error = start(dir.path.c_str()); });
  CHECK(error.find("built against npuprof ABI 999") != std::string::npos);
  // And this program's session still works after all that.
  auto t2 = test::record(test::config_in(dir), [] { npuprof::mark<kernels>("after"); });
  CHECK(t2.count("after", "i") == 1);
}

TEST_CASE("a shared object loaded with dlopen while the session runs records into it") {
  test::temp_dir dir;
  void* lib = nullptr;
  auto t = test::record(test::config_in(dir), [&] {
    lib = ::dlopen(NPUPROF_TEST_PLUGIN_LATE, RTLD_NOW | RTLD_LOCAL);
    REQUIRE(lib != nullptr);
    auto state = reinterpret_cast<const void* (*)()>(::dlsym(lib, "plugin_late_state"));
    auto record = reinterpret_cast<void (*)()>(::dlsym(lib, "plugin_late_record"));
    const bool found = state != nullptr && record != nullptr;
    REQUIRE(found);
    CHECK(state() == &npuprof::detail::markers());
    record();
  });
  CHECK(t.count("range in plugin_late", "X") == 1);
  CHECK(t.count("mark in plugin_late", "i") == 1);
}
