// `tunecast table` in two parts: the command (cmd_table.cpp: the problem list, the predictions,
// warnings) and the formats it writes (table_formats.cpp: a C++ include, text, a MIOpen perf DB).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cli.h"

namespace tunecast::cli::table {

// One problem of the list and its prediction.
struct Row {
  Problem problem;
  std::string text;  // canonical --problem form
  int line = 0;
  Status status;     // of the prediction
  Candidate best;
  uint32_t out_of_range_fields = 0;  // PredictInfo's: fields outside the training ranges
  int not_applicable = -1;           // PredictInfo's: the first applicability condition it fails
};

// A C++ include: NS::kDefaultParameters[], one {problem, found, applicable, values} per row.
std::string cpp_table(const Model& model, const std::string& model_path, int beam,
                      const std::string& name_space, const std::vector<Row>& rows);
// One line per row: the problem, a tab, the values (or '# reason'), and '\t# not applicable: ...'.
std::string text_table(const Model& model, const std::vector<Row>& rows);
// Refuses a row with a field beyond the perf DB's 32-bit INT columns (naming the line and column).
Status check_perf_db_fields(const std::string& path, const std::vector<Row>& rows);
// A MIOpen perf DB of the rows that found a candidate and that the kernel applies to, built in a
// private temporary file: `merge_into`'s rows (when that perf DB exists) with these added or
// replacing theirs (same solver and problem). `written` counts this run's rows (a problem listed
// twice is one row), `held` the file's.
// An existing output a perf DB can be merged into (writable, with MIOpen's tables), or a new one:
// checked before the work, so a wrong -o costs nothing.
Status check_perf_db_output(const std::string& path);
Status perf_db_bytes(const std::string& solver, const std::vector<Row>& rows, const std::string& merge_into,
                     std::string* bytes, size_t* written, size_t* held);

}  // namespace tunecast::cli::table
