// Whole-file reads and atomic writes (temp file + rename): a failed or interrupted write never
// leaves a half-written output behind.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tunecast/status.h"

namespace tunecast::codegen {

Status read_file(const std::string& path, std::string* contents);
Status write_file_atomic(const std::string& path, std::string_view contents);
// Whether `path` could be written by write_file_atomic (its folder exists and is writable), so
// that a command can refuse a typo before a long run rather than after it.
Status check_output_path(const std::string& path);
inline Status write_file_atomic(const std::string& path, const std::vector<uint8_t>& bytes) {
  return write_file_atomic(path, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

// A file's bytes in memory aligned for Model::load (mmap'd read-only where possible).
class MappedFile {
 public:
  MappedFile() = default;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();
  Status open(const std::string& path);
  const void* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace tunecast::codegen
