// Open files: the console and the two ends of pipes, shared between
// processes by reference count (fork, dup2).
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "base/lib/error_or.h"

namespace pvk {

struct Pipe;

struct File {
  enum class Kind : uint8_t { Free, Console, PipeRead, PipeWrite };
  Kind kind = Kind::Free;
  unsigned refs = 0;
  Pipe* pipe = nullptr;
};

File* console_file();
ErrorOr<void> make_pipe(File*& read_end, File*& write_end);
File* file_get(File* f);  // one more reference
void file_put(File* f);   // one fewer; closes the end at zero

// Blocking I/O on behalf of the current process. Buffers are user addresses.
ErrorOr<uint64_t> file_read(File* f, uint64_t user_buf, uint64_t len);
ErrorOr<uint64_t> file_write(File* f, uint64_t user_buf, uint64_t len);

}  // namespace pvk
