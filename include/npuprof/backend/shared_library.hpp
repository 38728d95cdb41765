// Libraries of the Ascend toolkit, loaded at run time with dlopen so that
// nothing of it is needed to build.
#pragma once

#include "../marker/abi.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <string>
#include <type_traits>

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

/// A library loaded for the life of the process and the functions looked up
/// in it. `what` names it in messages ("the Ascend runtime").
class shared_library {
 public:
  shared_library(std::string path, std::string what) : path_(std::move(path)), what_(std::move(what)) {}

  /// Loads it; on failure says why.
  bool open(std::string& why) {
    handle_ = ::dlopen(path_.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle_ != nullptr) return true;
    const char* e = ::dlerror();
    why = "cannot load " + what_ + " '" + path_ + "': " + (e != nullptr ? e : "unknown error");
    return false;
  }

  /// Looks up a function the library must have; the first one missing is
  /// reported by complete().
  template <class Fn>
  void need(Fn& fn, const char* name) {
    fn = find<Fn>(name);
    if (fn == nullptr && missing_ == nullptr) missing_ = name;
  }

  /// Looks up a function the library may lack (null then).
  template <class Fn>
  Fn find(const char* name) const {
    return reinterpret_cast<Fn>(::dlsym(handle_, name));
  }

  /// Whether every needed function was found; if not, unloads the library
  /// and says which was missing.
  bool complete(std::string& why) {
    if (missing_ == nullptr) return true;
    why = what_ + " '" + path_ + "' has no " + missing_;
    ::dlclose(handle_);
    handle_ = nullptr;
    return false;
  }

  const std::string& path() const noexcept { return path_; }

 private:
  std::string path_;
  std::string what_;
  void* handle_ = nullptr;
  const char* missing_ = nullptr;
};

/// Where a toolkit library is looked for: the environment variable `env`,
/// else $ASCEND_HOME_PATH/lib64/`file`, else the loader's search path (which
/// also finds a library the program already links).
inline std::string toolkit_library_path(const char* env, const char* file) {
  if (const char* p = std::getenv(env); p != nullptr && *p != '\0') return p;
  if (const char* home = std::getenv("ASCEND_HOME_PATH"); home != nullptr && *home != '\0') {
    return std::string(home) + "/lib64/" + file;
  }
  return file;
}

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
