// Writing output files with errors that name the path and the reason.
#pragma once

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include "../error.hpp"

namespace npuprof::detail {

/// Writes `data` to `path` (replacing it). Throws npuprof::error naming the
/// path when any step fails, disk full included.
inline void write_file(const std::string& path, std::string_view data) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) throw error("npuprof: cannot create '" + path + "': " + std::strerror(errno));
  const std::size_t written = std::fwrite(data.data(), 1, data.size(), f);
  const int write_errno = errno;
  const bool flushed = std::fflush(f) == 0;
  const int flush_errno = errno;
  const bool closed = std::fclose(f) == 0;
  if (written != data.size() || !flushed || !closed) {
    const int e = written != data.size() ? write_errno : (!flushed ? flush_errno : errno);
    std::remove(path.c_str());
    throw error("npuprof: cannot write '" + path + "': " + std::strerror(e));
  }
}

}  // namespace npuprof::detail
