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

/// Writes a file in pieces, through a buffer the caller fills. Throws
/// npuprof::error naming the path when a step fails; the partial file is
/// removed then.
class file_writer {
 public:
  explicit file_writer(std::string path) : path_(std::move(path)) {
    file_ = std::fopen(path_.c_str(), "wb");
    if (file_ == nullptr) throw error("npuprof: cannot create '" + path_ + "': " + std::strerror(errno));
  }
  ~file_writer() {
    if (file_ != nullptr) {
      std::fclose(file_);
      std::remove(path_.c_str());
    }
  }
  file_writer(const file_writer&) = delete;
  file_writer& operator=(const file_writer&) = delete;

  void write(std::string_view data) {
    if (std::fwrite(data.data(), 1, data.size(), file_) != data.size()) fail(errno);
  }

  /// Flushes and closes; the file is complete only after this returns.
  void close() {
    const bool flushed = std::fflush(file_) == 0;
    const int flush_errno = errno;
    const bool closed = std::fclose(file_) == 0;
    file_ = nullptr;
    if (!flushed || !closed) {
      std::remove(path_.c_str());
      throw error("npuprof: cannot write '" + path_ + "': " + std::strerror(flushed ? errno : flush_errno));
    }
  }

 private:
  [[noreturn]] void fail(int e) {
    throw error("npuprof: cannot write '" + path_ + "': " + std::strerror(e));
  }

  std::string path_;
  std::FILE* file_ = nullptr;
};

}  // namespace npuprof::detail
