// Open files: the console and the two ends of pipes, shared between
// processes by reference count (fork, dup2).
//
// Lifetimes. A File lives while anything holds a reference: each
// descriptor-table slot that names it, and each system call that is using
// it (FileRef, from the descriptor lookup until the call returns — Linux's
// fdget/fdput). So a close or dup2 by another thread while a call sleeps
// in the file only frees the descriptor number; the sleeping call goes on
// against the file it looked up. A Pipe lives while any File names it
// (its reader and writer counts are those Files), and so outlives every
// sleeper in it, since each sleeper holds its File (kernel/proc/pipe.h).
// The count is atomic: reads and writes of pipe ends take their reference
// without the kernel lock (kernel/proc/fd_table.h).
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "base/lib/error_or.h"

namespace pvk {

struct Pipe;
namespace fs {
struct Inode;
}

struct File {
  // Node: a file, directory or device of the root filesystem (kernel/fs/),
  // holding a reference to its node for as long as the File lives.
  enum class Kind : uint8_t { Free, Console, PipeRead, PipeWrite, Node };
  Kind kind = Kind::Free;
  unsigned refs = 0;  // atomic (file_get, file_put)
  Pipe* pipe = nullptr;
  fs::Inode* node = nullptr;
  uint64_t pos = 0;     // Node: the file offset (directories: the getdents64 position)
  uint32_t flags = 0;   // the open flags that stay: access mode, O_APPEND, O_NONBLOCK (F_GETFL)
};

// A File for an open node of the root filesystem (takes a reference on it).
ErrorOr<File*> open_node(fs::Inode* node, uint32_t flags);
// Reads and writes at an explicit offset (pread64/pwrite64), leaving pos.
ErrorOr<uint64_t> file_pread(File* f, uint64_t user_buf, uint64_t len, uint64_t offset);
ErrorOr<uint64_t> file_pwrite(File* f, uint64_t user_buf, uint64_t len, uint64_t offset);

File* console_file();
ErrorOr<void> make_pipe(File*& read_end, File*& write_end);
File* file_get(File* f);  // one more reference
void file_put(File* f);   // one fewer; closes the end at zero

// One reference held for the length of a system call; released when the
// holder goes out of scope. Empty (false) when the lookup failed.
class FileRef {
 public:
  FileRef() = default;
  explicit FileRef(File* f) : file_(f ? file_get(f) : nullptr) {}
  // Takes over a reference the caller already holds (kernel/proc/fd_table.h).
  static FileRef adopt(File* held) {
    FileRef r;
    r.file_ = held;
    return r;
  }
  FileRef(FileRef&& other) : file_(other.file_) { other.file_ = nullptr; }
  FileRef(const FileRef&) = delete;
  FileRef& operator=(const FileRef&) = delete;
  FileRef& operator=(FileRef&&) = delete;
  ~FileRef() {
    if (file_) file_put(file_);
  }
  explicit operator bool() const { return file_ != nullptr; }
  File* get() const { return file_; }

 private:
  File* file_ = nullptr;
};

// Where the bytes of a write come from: a system call's user buffer, or
// kernel memory (sendfile's bounce page). copy() takes bytes [done, done+n).
struct WriteSource {
  uint64_t user = 0;                // a user address, when kernel is null
  const uint8_t* kernel = nullptr;
  static WriteSource from_user(uint64_t address) { return {address, nullptr}; }
  static WriteSource from_kernel(const void* p) { return {0, static_cast<const uint8_t*>(p)}; }
  ErrorOr<void> copy(void* dst, uint64_t done, size_t n) const;
  // A user range must lie in user space (EFAULT before anything moves).
  bool range_ok(uint64_t len) const;
};

// Blocking I/O on behalf of the current process. Buffers are user addresses.
// The caller holds a reference to f for the whole call (FileRef).
ErrorOr<uint64_t> file_read(File* f, uint64_t user_buf, uint64_t len);
ErrorOr<uint64_t> file_write(File* f, uint64_t user_buf, uint64_t len);
ErrorOr<uint64_t> file_write_from(File* f, WriteSource src, uint64_t len);

// For tests and the shutdown record: pipes and files in use now.
unsigned pipes_in_use();
unsigned files_in_use();

}  // namespace pvk
