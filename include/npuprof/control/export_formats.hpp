// The output formats a session writes (config export_type): one line each.
//
// A new format is one file in export/ with its writer (the signature of
// format_writer), and one line in export_formats() below. A format that needs
// a library of its own names no writer here: its public header installs one
// (as <npuprof/database.hpp> does), so that programs that never ask for it
// need none of its libraries.
#pragma once

#include "../marker/abi.hpp"

#include <array>
#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "../engine/collected.hpp"
#include "../export/output_dir.hpp"
#include "../export/trace_files.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

/// Writes one format's files into an output directory, from collected records.
using format_writer = void (*)(const collected&, output_directory&, const std::string& trace_id,
                               const nlohmann::json& user);

/// One output format.
struct export_format {
  std::string_view name;   // its export_type value
  format_writer writer;    // null: installed by the header named in `needs`
  std::string_view needs;  // what a program does to have it, when it is installed
};

/// Every format, in the order a trace's files are written.
inline constexpr std::array<export_format, 2> export_formats() {
  return {{
      {"text", &write_trace_files, {}},
      {"db", nullptr,
       "include <npuprof/database.hpp> in the file that defines NPUPROF_IMPLEMENTATION and link SQLite (meson: "
       "npuprof_db_dep)"},
  }};
}

/// The writers installed by the formats' headers, by their place in export_formats().
inline std::array<format_writer, export_formats().size()>& installed_format_writers() noexcept {
  static std::array<format_writer, export_formats().size()> writers{};
  return writers;
}

/// Where format `name` is in export_formats(), or export_formats().size().
constexpr std::size_t export_format_index(std::string_view name) noexcept {
  std::size_t i = 0;
  while (i < export_formats().size() && export_formats()[i].name != name) ++i;
  return i;
}

/// For a format's header: installs its writer when the program starts.
inline bool install_format_writer(std::string_view name, format_writer writer) noexcept {
  const std::size_t i = export_format_index(name);
  if (i < export_formats().size()) installed_format_writers()[i] = writer;
  return true;
}

/// The writer of format `name`: its own, or the one installed; null if neither.
inline format_writer writer_of(std::string_view name) noexcept {
  const std::size_t i = export_format_index(name);
  if (i == export_formats().size()) return nullptr;
  return export_formats()[i].writer != nullptr ? export_formats()[i].writer : installed_format_writers()[i];
}

/// The known names, quoted, for messages: "text" or "db".
inline std::string export_format_names() {
  std::string out;
  for (std::size_t i = 0; i < export_formats().size(); ++i) {
    if (i > 0) out += i + 1 == export_formats().size() ? " or " : ", ";
    out += '"' + std::string(export_formats()[i].name) + '"';
  }
  return out;
}

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
