#include "tunecast/codegen/file_io.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace tunecast::codegen {

Status read_file(const std::string& path, std::string* contents) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    return Status::error(errno == ENOENT ? StatusCode::kNotFound : StatusCode::kIoError,
                         "cannot open '%s': %s", path.c_str(), std::strerror(errno));
  }
  contents->clear();
  char buffer[1 << 16];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, f)) > 0) contents->append(buffer, n);
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) return Status::error(StatusCode::kIoError, "cannot read '%s'", path.c_str());
  return Status::ok();
}

Status write_file_atomic(const std::string& path, std::string_view contents) {
  const std::string temp = path + ".tmp-" + std::to_string(::getpid());
  FILE* f = std::fopen(temp.c_str(), "wb");
  if (f == nullptr) {
    return Status::error(StatusCode::kIoError, "cannot write '%s': %s", path.c_str(),
                         std::strerror(errno));
  }
  const bool written = std::fwrite(contents.data(), 1, contents.size(), f) == contents.size();
  const bool flushed = std::fflush(f) == 0 && ::fsync(::fileno(f)) == 0;
  const bool closed = std::fclose(f) == 0;
  if (!written || !flushed || !closed || std::rename(temp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(temp.c_str());
    return Status::error(StatusCode::kIoError, "cannot write '%s': %s", path.c_str(),
                         std::strerror(err));
  }
  return Status::ok();
}

Status check_output_path(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  const std::string folder = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  struct stat st;
  if (path.empty() || path.back() == '/') {
    return Status::error(StatusCode::kInvalidArgument, "cannot write '%s': not a file name", path.c_str());
  }
  if (::stat(folder.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return Status::error(StatusCode::kIoError, "cannot write '%s': no folder '%s'", path.c_str(), folder.c_str());
  }
  if (::access(folder.c_str(), W_OK) != 0) {
    return Status::error(StatusCode::kIoError, "cannot write '%s': folder '%s' is not writable", path.c_str(),
                         folder.c_str());
  }
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {  // said now, not after the work
    return Status::error(StatusCode::kInvalidArgument, "cannot write '%s': it is a folder; name a file", path.c_str());
  }
  return Status::ok();
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(data_, size_);
}

Status MappedFile::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return Status::error(errno == ENOENT ? StatusCode::kNotFound : StatusCode::kIoError,
                         "cannot open '%s': %s", path.c_str(), std::strerror(errno));
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::error(StatusCode::kIoError, "'%s' is not a regular file", path.c_str());
  }
  if (st.st_size == 0) {
    ::close(fd);
    return Status::error(StatusCode::kCorruptModel, "'%s' is empty", path.c_str());
  }
  void* p = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) {
    return Status::error(StatusCode::kIoError, "cannot map '%s': %s", path.c_str(),
                         std::strerror(errno));
  }
  data_ = p;
  size_ = static_cast<size_t>(st.st_size);
  return Status::ok();
}

}  // namespace tunecast::codegen
