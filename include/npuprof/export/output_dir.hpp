// Output directory naming, as torch_npu's profiler does it:
// {worker_name or hostname}_{pid}_{YYYYmmddHHMMSSmmm}_ascend_pt, the time
// being when the directory is written. The Ascend tools find a run by that
// ending and read the third field from the end, split on '_', as its time
// (the newest run of a rank is the one they analyse), so a name already
// taken (by anything: a directory, a file, a symlink) gets its counter on
// the pid, where it moves no field: {worker}_{pid}.1_{...}_ascend_pt, .2, ...
#pragma once

#include "../marker/abi.hpp"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>

#include <fmt/format.h>

#include "../error.hpp"
#include "file.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

inline std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "localhost";
  return buf;
}

/// `name` as one safe path component: characters other than letters, digits,
/// '.', '_' and '-' (a '/' included) become '_', a name of dots only becomes
/// "_", an empty one the host name; at most 128 bytes.
inline std::string safe_worker_name(std::string_view name) {
  if (name.empty()) {
    const std::string host = host_name();
    return host.empty() ? std::string("_") : safe_worker_name(host);
  }
  std::string out;
  out.reserve(name.size());
  bool dots_only = true;
  for (const char c : name) {
    const bool keep =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    out.push_back(keep ? c : '_');
    dots_only = dots_only && c == '.';
  }
  if (dots_only) return "_";
  if (out.size() > 128) out.resize(128);
  return out;
}

/// The name for `wall_ns`; `counter` 0 is the plain name, others tell apart
/// names of the same millisecond.
inline std::string output_dir_name(const std::string& worker, std::uint32_t pid, std::int64_t wall_ns,
                                   std::uint64_t counter = 0) {
  const std::time_t secs = static_cast<std::time_t>(wall_ns / 1'000'000'000);
  const long ms = static_cast<long>((wall_ns / 1'000'000) % 1000);
  std::tm tm{};
  ::localtime_r(&secs, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d%H%M%S", &tm);
  if (counter == 0) return fmt::format("{}_{}_{}{:03}_ascend_pt", worker, pid, stamp, ms);
  return fmt::format("{}_{}.{}_{}{:03}_ascend_pt", worker, pid, counter, stamp, ms);
}

/// Makes `dir` and its parents if missing and checks that output
/// directories can be made in it. Throws npuprof::error naming it.
inline void check_output_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw error("npuprof: cannot create output directory '" + dir + "': " + ec.message());
  if (!fs::is_directory(dir, ec)) {
    throw error("npuprof: output directory '" + dir + "' is not a directory");
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    throw error("npuprof: output directory '" + dir + "' is not writable: " + std::strerror(errno));
  }
}

/// Where the last search for a free name ended: many directories written in
/// one millisecond (thousands of dumps a second) do not each try every
/// counter from 0 again. Only a hint: mkdir decides what is free.
struct output_name_hint {
  std::atomic<std::size_t> key{0};
  std::atomic<std::uint64_t> next{0};
};

inline output_name_hint& last_output_name() {
  static output_name_hint hint;
  return hint;
}

/// Creates a new output directory under `parent` (made if missing), named
/// for `wall_ns` and with a sanitised `worker`, and returns it held open,
/// its path absolute. A name already taken gets the next counter: there is
/// no limit on how many directories share a millisecond.
inline output_directory make_output_dir(const std::string& parent, const std::string& worker, std::uint32_t pid,
                                        std::int64_t wall_ns) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(parent, ec);
  if (ec) throw error("npuprof: cannot create output directory '" + parent + "': " + ec.message());
  const fs::path where = fs::absolute(parent).lexically_normal();
  const auto parent_fd = std::make_shared<unique_fd>(output_directory::open_parent(where));
  const std::string name = safe_worker_name(worker);
  const std::string plain = output_dir_name(name, pid, wall_ns);
  const std::size_t key = std::hash<std::string>{}(where.string() + '/' + plain);
  output_name_hint& hint = last_output_name();
  std::uint64_t counter =
      hint.key.load(std::memory_order_relaxed) == key ? hint.next.load(std::memory_order_relaxed) : 0;
  output_directory dir;
  for (;; ++counter) {
    if (dir.make(parent_fd, where, counter == 0 ? plain : output_dir_name(name, pid, wall_ns, counter))) break;
  }
  hint.key.store(key, std::memory_order_relaxed);
  hint.next.store(counter + 1, std::memory_order_relaxed);
  return dir;
}

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
