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
// A MIOpen perf DB of the rows that found a candidate and that the kernel applies to, built in a private temporary file;
// `written` counts its rows (a problem listed twice is one row).
Status perf_db_bytes(const std::string& solver, const std::vector<Row>& rows, std::string* bytes,
                     size_t* written);

}  // namespace tunecast::cli::table
