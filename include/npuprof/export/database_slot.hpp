// Where the database export plugs in. The session calls it for
// export_type "db"; <npuprof/database.hpp> installs it, so that a program
// that never asks for the database needs no SQLite to compile or link.
#pragma once

#include "../detail/abi.hpp"

#include <string>

#include <nlohmann/json.hpp>

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

struct collected;
class output_directory;

/// Writes the database of one output directory from collected records.
using database_writer = void (*)(const collected&, output_directory&, const std::string& trace_id,
                                 const nlohmann::json& user);

/// The installed writer; null until <npuprof/database.hpp> is part of the
/// program.
inline database_writer& installed_database_writer() noexcept {
  static database_writer writer = nullptr;
  return writer;
}

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
