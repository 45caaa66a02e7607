// Reader of MIOpen's tuning databases (SQLite perf DBs: tables `config` and `perf_db`, see
// /work/shared/README.md): the tuned parameter vector of a solver for each stored problem.
// Host-only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tunecast/problem.h"
#include "tunecast/status.h"

struct sqlite3;

namespace tunecast {

struct PerfDbRow {
  Problem problem;              // every config column, plus arch when the file name tells it
  std::vector<int64_t> params;  // the tuned vector, in the solver's own order
  std::string params_text;      // as stored ("4,16,8,16,2,1,1,4")
  int64_t config_id = 0;        // config.id
};

struct PerfDbFilter {
  std::optional<int64_t> dtype;  // DataType value (kFp32...), or any
  std::optional<int64_t> dir;    // Direction value (kForward...), or any
};

// One open database (read-only). Move-only; closes on destruction.
class PerfDb {
 public:
  PerfDb() = default;
  ~PerfDb();
  PerfDb(PerfDb&& other) noexcept;
  PerfDb& operator=(PerfDb&& other) noexcept;
  PerfDb(const PerfDb&) = delete;
  PerfDb& operator=(const PerfDb&) = delete;

  // Opens `path` read-only and checks that tables config and perf_db and every column this reader
  // uses exist ("perf DB X has no table perf_db", "... table config has no column in_h").
  static Status open(const std::string& path, PerfDb* db);

  // Rows of `solver` ("ConvAsm1x1U"), ordered by perf_db.id. A row whose enum strings (layout,
  // data_type, direction) are unknown, or whose params are not comma-separated integers, is an
  // error naming the row.
  Status rows(std::string_view solver, const PerfDbFilter& filter, std::vector<PerfDbRow>* out) const;

  // Distinct solver names with their row counts, by name.
  Status solvers(std::vector<std::pair<std::string, int64_t>>* out) const;

  const std::string& path() const { return path_; }
  // Architecture from the file name ("gfx906_60.db" -> kGfx906, "gfx942130.db" -> kGfx942), set as
  // the problem's arch field in every row; empty when the name starts with no known architecture.
  std::optional<int64_t> arch() const { return arch_; }
  bool is_open() const { return db_ != nullptr; }

 private:
  sqlite3* db_ = nullptr;
  std::string path_;
  std::optional<int64_t> arch_;
};

// Convenience: open, read one solver's rows, close.
Status read_perf_db(const std::string& path, std::string_view solver, const PerfDbFilter& filter,
                    std::vector<PerfDbRow>* out);

// Parses a comma-separated list of integers ("4,16,8"); spaces around values are allowed.
bool parse_param_list(std::string_view text, std::vector<int64_t>* values);

// A problem as the perf DB spells its config row: every column but id, in table order
// ("layout=NCHW;data_type=FP32;direction=F;spatial_dim=2;in_channels=64;..."). Independent of the
// architecture and of row order: the trainer's split hashes it (dataset_split.h).
std::string perf_db_descriptor(const Problem& problem);

}  // namespace tunecast
