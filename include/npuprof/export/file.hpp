// Writing output files safely, with errors that name the path and the reason.
//
// An output directory is made fresh (never reused) and held open; each file
// is created inside it relative to that descriptor, exclusively and without
// following symlinks, so nothing planted at a predicted name (or put in the
// directory's place after it was made) can redirect a write. Modes are set
// explicitly: 0750 for directories, 0640 for files, whatever the umask.
#pragma once

#include "../marker/abi.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../error.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

inline constexpr ::mode_t output_dir_mode = 0750;
inline constexpr ::mode_t output_file_mode = 0640;

/// An owned file descriptor.
class unique_fd {
 public:
  unique_fd() = default;
  explicit unique_fd(int fd) noexcept : fd_(fd) {}
  unique_fd(unique_fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  unique_fd& operator=(unique_fd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  ~unique_fd() { reset(); }
  int get() const noexcept { return fd_; }
  explicit operator bool() const noexcept { return fd_ >= 0; }
  /// Closes; returns ::close's result (0 when there was nothing to close).
  int reset() noexcept {
    const int r = fd_ >= 0 ? ::close(fd_) : 0;
    fd_ = -1;
    return r;
  }

 private:
  int fd_ = -1;
};

/// Writes all of `data` to `fd`, retrying short writes and EINTR. Returns 0
/// or the errno of the write that failed.
inline int write_all(int fd, std::string_view data) noexcept {
  const char* p = data.data();
  std::size_t left = data.size();
  while (left > 0) {
    const ::ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return EIO;
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  return 0;
}

/// A directory this process has just made, held open. Files are created in
/// it through its descriptor; discard() removes them and the directory.
class output_directory {
 public:
  /// Opens `parent` (following symlinks: it is the user's choice) for
  /// making directories in it. Throws npuprof::error naming it.
  static unique_fd open_parent(const std::filesystem::path& parent) {
    unique_fd fd(::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd) throw error("npuprof: cannot open output directory '" + parent.string() + "': " + std::strerror(errno));
    return fd;
  }

  /// Makes `name` in the directory open as `parent_fd` (path `parent`), mode
  /// 0750. Returns false when the name is taken by anything (a directory, a
  /// file, a symlink, dangling or not); throws npuprof::error naming the
  /// path on any other failure.
  bool make(std::shared_ptr<unique_fd> parent_fd, const std::filesystem::path& parent, const std::string& name) {
    const std::filesystem::path path = parent / name;
    if (::mkdirat(parent_fd->get(), name.c_str(), output_dir_mode) != 0) {
      if (errno == EEXIST) return false;
      throw error("npuprof: cannot create output directory '" + path.string() + "': " + std::strerror(errno));
    }
    // Held from here on: a symlink put in its place is never followed.
    unique_fd fd(::openat(parent_fd->get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd) {
      const int e = errno;
      ::unlinkat(parent_fd->get(), name.c_str(), AT_REMOVEDIR);  // never follows a symlink
      throw error("npuprof: cannot open the output directory just made '" + path.string() + "': " + std::strerror(e));
    }
    if (::fchmod(fd.get(), output_dir_mode) != 0) {
      const int e = errno;
      ::unlinkat(parent_fd->get(), name.c_str(), AT_REMOVEDIR);
      throw error("npuprof: cannot set the mode of '" + path.string() + "': " + std::strerror(e));
    }
    parent_fd_ = std::move(parent_fd);
    fd_ = std::move(fd);
    name_ = name;
    path_ = path;
    return true;
  }

  /// An existing directory, opened for creating files in it (the same way);
  /// discard() then removes those files only.
  static output_directory open_existing(const std::filesystem::path& path) {
    output_directory dir;
    dir.fd_ = unique_fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dir.fd_) throw error("npuprof: cannot open directory '" + path.string() + "': " + std::strerror(errno));
    dir.path_ = path;
    return dir;
  }

  int fd() const noexcept { return fd_.get(); }
  const std::filesystem::path& path() const noexcept { return path_; }
  /// The path of `file` inside it, for messages.
  std::string path_of(std::string_view file) const { return (path_ / std::string(file)).string(); }

  /// Creates `file` inside, exclusively and without following a symlink,
  /// mode 0640, for writing. Throws npuprof::error naming the path.
  unique_fd create(const std::string& file) {
    unique_fd fd(
        ::openat(fd_.get(), file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, output_file_mode));
    if (!fd) throw error("npuprof: cannot create '" + path_of(file) + "': " + std::strerror(errno));
    created_.push_back(file);
    if (::fchmod(fd.get(), output_file_mode) != 0) {
      const int e = errno;
      remove(file);
      throw error("npuprof: cannot set the mode of '" + path_of(file) + "': " + std::strerror(e));
    }
    return fd;
  }

  /// Makes the directory `name` inside and returns it, held open the same
  /// way. Its discard() removes what it holds and it; discard() here
  /// removes it once empty.
  output_directory subdirectory(const std::string& name) {
    auto self = std::make_shared<unique_fd>(::fcntl(fd_.get(), F_DUPFD_CLOEXEC, 0));
    if (!*self) throw error("npuprof: cannot open '" + path_.string() + "': " + std::strerror(errno));
    output_directory sub;
    if (!sub.make(std::move(self), path_, name)) {
      throw error("npuprof: cannot create directory '" + path_of(name) + "': the name is taken");
    }
    created_.push_back(name);
    return sub;
  }

  /// Removes one file this object created.
  void remove(const std::string& file) noexcept {
    ::unlinkat(fd_.get(), file.c_str(), 0);
    for (auto it = created_.begin(); it != created_.end(); ++it) {
      if (*it == file) {
        created_.erase(it);
        break;
      }
    }
  }

  /// Removes the files it created, then the directory itself (through its
  /// parent's descriptor: a symlink put in its place is not followed).
  void discard() noexcept {
    if (!fd_) return;
    for (const std::string& file : created_) {
      if (::unlinkat(fd_.get(), file.c_str(), 0) != 0) ::unlinkat(fd_.get(), file.c_str(), AT_REMOVEDIR);
    }
    created_.clear();
    fd_.reset();
    if (parent_fd_) ::unlinkat(parent_fd_->get(), name_.c_str(), AT_REMOVEDIR);
  }

 private:
  std::shared_ptr<unique_fd> parent_fd_;
  unique_fd fd_;
  std::string name_;
  std::filesystem::path path_;
  std::vector<std::string> created_;
};

/// Writes a file inside an output directory in pieces, collected into large
/// blocks (pieces of a block or more go straight through). Throws
/// npuprof::error naming the path when a step fails, disk full included; the
/// partial file is removed then, and when the writer is destroyed unclosed.
class file_writer {
 public:
  static constexpr std::size_t block = std::size_t{1} << 20;

  file_writer(output_directory& dir, std::string name) : dir_(dir), name_(std::move(name)), fd_(dir.create(name_)) {}
  ~file_writer() {
    if (fd_) {
      fd_.reset();
      dir_.remove(name_);
    }
  }
  file_writer(const file_writer&) = delete;
  file_writer& operator=(const file_writer&) = delete;

  void write(std::string_view data) {
    if (buffer_.size() + data.size() < block) {
      buffer_.append(data);
      return;
    }
    flush();
    if (data.size() >= block) {
      put(data);
    } else {
      buffer_.append(data);
    }
  }

  /// Writes what is buffered and closes; the file is complete only after
  /// this returns.
  void close() {
    flush();
    // Gives back the room asked for ahead and not written (also what a
    // request that failed part way got: a file system may keep that).
    if (asked_ahead_ && ::ftruncate(fd_.get(), static_cast<::off_t>(written_)) != 0) fail(errno);
    if (fd_.reset() != 0) fail(errno);
  }

 private:
  void flush() {
    if (buffer_.empty()) return;
    put(buffer_);
    buffer_.clear();
  }
  void put(std::string_view data) {
    if (written_ != 0) reserve_ahead(data.size());  // a file written at once needs none
    if (const int e = write_all(fd_.get(), data); e != 0) fail(e);
    written_ += data.size();
  }
  // A large file asks the file system for its room ahead, in steps that grow
  // with it (up to 64 MiB): writing into room already allocated costs about a
  // quarter less than allocating each page's blocks as it is written. The
  // file's size stays what was written. A file system that cannot do this
  // (or is short of room) just writes as before: write() reports what matters.
  void reserve_ahead(std::size_t n) {
#if defined(__linux__)
    if (!reserve_ahead_ || written_ + n <= allocated_) return;
    const std::size_t step = std::min(std::max(written_, block), std::size_t{64} << 20) + n;
    asked_ahead_ = true;
    if (::fallocate(fd_.get(), FALLOC_FL_KEEP_SIZE, static_cast<::off_t>(written_), static_cast<::off_t>(step)) != 0) {
      // A file system short of room may have kept part of it: given back
      // now, so that what is left to write finds it.
      reserve_ahead_ = false;
      if (::ftruncate(fd_.get(), static_cast<::off_t>(written_)) != 0) fail(errno);
      return;
    }
    allocated_ = written_ + step;
#else
    (void)n;
#endif
  }
  [[noreturn]] void fail(int e) {
    fd_.reset();
    dir_.remove(name_);
    throw error("npuprof: cannot write '" + dir_.path_of(name_) + "': " + std::strerror(e));
  }

  output_directory& dir_;
  std::string name_;
  unique_fd fd_;
  std::string buffer_;
  std::size_t written_ = 0;    // bytes written to the file
  std::size_t allocated_ = 0;  // bytes of room asked for ahead, from the start
  bool reserve_ahead_ = true;
  bool asked_ahead_ = false;  // room was asked for: close() gives back the rest
};

/// Writes `data` as the new file `name` inside `dir`. Throws npuprof::error
/// naming the path when any step fails, disk full included; nothing of the
/// file stays then.
inline void write_file(output_directory& dir, const std::string& name, std::string_view data) {
  file_writer f(dir, name);
  f.write(data);
  f.close();
}

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
