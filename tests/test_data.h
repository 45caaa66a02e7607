// Where tests find the shared data (MIOpen perf DBs and models): $TUNECAST_DATA_DIR, else the
// checkout's sibling ../shared/data. Tests that need it print "skipped: ..." and pass when it is absent.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

namespace tunecast_test {

inline std::string data_dir() {
  const char* env = std::getenv("TUNECAST_DATA_DIR");
  if (env != nullptr && env[0] != '\0') return env;
  return TUNECAST_SOURCE_DIR "/../shared/data";
}

inline bool have_shared_data() {
  std::error_code error;
  return std::filesystem::is_directory(data_dir(), error);
}

// A file under the data directory ("miopen/perfdb/gfx906_60.db").
inline std::string data_path(const std::string& relative) { return data_dir() + "/" + relative; }

// A file of this checkout ("weights/rules/ConvAsm1x1U.tcr").
inline std::string source_path(const std::string& relative) { return std::string(TUNECAST_SOURCE_DIR "/") + relative; }

}  // namespace tunecast_test
