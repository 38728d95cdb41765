// Output directory naming, as torch_npu's profiler does it:
// {worker_name or hostname}_{pid}_{YYYYmmddHHMMSSmmm}_npuprof
#pragma once

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <string>
#include <system_error>

#include <fmt/format.h>

#include "../error.hpp"

namespace npuprof::detail {

inline std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "localhost";
  return buf;
}

inline std::string output_dir_name(const std::string& worker, std::uint32_t pid, std::int64_t wall_ns) {
  const std::time_t secs = static_cast<std::time_t>(wall_ns / 1'000'000'000);
  const long ms = static_cast<long>((wall_ns / 1'000'000) % 1000);
  std::tm tm{};
  ::localtime_r(&secs, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d%H%M%S", &tm);
  return fmt::format("{}_{}_{}{:03}_npuprof", worker, pid, stamp, ms);
}

/// Creates a new output directory under `parent` (made if missing) and
/// returns its absolute path. A name already taken gets the next millisecond.
inline std::filesystem::path make_output_dir(const std::string& parent, const std::string& worker,
                                             std::uint32_t pid, std::int64_t wall_ns) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(parent, ec);
  if (ec) throw error("npuprof: cannot create output directory '" + parent + "': " + ec.message());
  for (int attempt = 0; attempt < 1000; ++attempt) {
    const fs::path dir = fs::path(parent) / output_dir_name(worker, pid, wall_ns + attempt * 1'000'000LL);
    if (fs::create_directory(dir, ec)) return fs::absolute(dir).lexically_normal();
    if (ec) throw error("npuprof: cannot create output directory '" + dir.string() + "': " + ec.message());
  }
  throw error("npuprof: cannot find a free output directory name under '" + parent + "'");
}

}  // namespace npuprof::detail
