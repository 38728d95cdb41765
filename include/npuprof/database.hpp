// The SQLite database export (config export_type "db"). Include this in the
// file that defines NPUPROF_IMPLEMENTATION and link SQLite (meson: npuprof_db_dep, or
// -lsqlite3); a program that does not include it needs no SQLite, and
// asking it for "db" is an error at session::start().
#pragma once

#include "control/export_formats.hpp"
#include "export/database.hpp"
#include "session.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

/// Installs the database writer when the program starts.
inline const bool database_writer_installed = install_format_writer("db", &write_database);

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
