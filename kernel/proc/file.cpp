#include "kernel/proc/file.h"

#include "base/console/console.h"
#include "base/abi.h"
#include "base/lib/kstring.h"
#include "kernel/fs/ramfs.h"
#include "kernel/proc/process.h"
#include "kernel/proc/user_copy.h"

namespace pvk {

struct Pipe {
  static constexpr uint32_t kSize = 4096;
  uint8_t buf[kSize] = {};
  uint32_t head = 0;  // next byte to read
  uint32_t count = 0;
  unsigned readers = 0;
  unsigned writers = 0;
  bool in_use = false;
};

namespace {

constexpr unsigned kMaxFiles = 256;
constexpr unsigned kMaxPipes = 64;
File g_files[kMaxFiles];
Pipe g_pipes[kMaxPipes];
File g_console{File::Kind::Console, 1, nullptr, nullptr, 0, 2};  // never freed; O_RDWR

// A transfer cut short reports what it moved; only a transfer of nothing
// reports the error.
ErrorOr<uint64_t> partial(uint64_t done, Errno e) {
  if (done) return done;
  return e;
}

File* alloc_file(File::Kind kind, Pipe* pipe) {
  for (File& f : g_files) {
    if (f.kind != File::Kind::Free) continue;
    f = File{kind, 1, pipe, nullptr, 0, 0};
    return &f;
  }
  return nullptr;
}

}  // namespace

// Node reads and writes, kernel/proc/file_node.cpp.
ErrorOr<uint64_t> node_read(File* f, uint64_t user_buf, uint64_t len);
ErrorOr<uint64_t> node_write(File* f, WriteSource src, uint64_t len);

ErrorOr<void> WriteSource::copy(void* dst, uint64_t done, size_t n) const {
  if (kernel) {
    memcpy(dst, kernel + done, n);
    return {};
  }
  return copy_from_user(dst, user + done, n);
}

bool WriteSource::range_ok(uint64_t len) const { return kernel || user_range_ok(user, len); }

ErrorOr<File*> open_node(fs::Inode* node, uint32_t flags) {
  File* f = alloc_file(File::Kind::Node, nullptr);
  if (!f) return Errno::EMFILE;
  fs::inode_get(node);
  f->node = node;
  f->flags = flags;
  return f;
}

File* console_file() { return file_get(&g_console); }

unsigned pipes_in_use() {
  unsigned n = 0;
  for (const Pipe& p : g_pipes) n += p.in_use;
  return n;
}

unsigned files_in_use() {
  unsigned n = 0;
  for (const File& f : g_files) n += f.kind != File::Kind::Free;
  return n;
}

File* file_get(File* f) {
  ++f->refs;
  return f;
}

void file_put(File* f) {
  if (!f->refs || f->kind == File::Kind::Free) panic("file_put of a file with no reference (%p)", f);
  if (--f->refs) return;
  if (f == &g_console) {
    f->refs = 1;
    return;
  }
  if (Pipe* p = f->pipe) {
    if (f->kind == File::Kind::PipeRead) --p->readers;
    if (f->kind == File::Kind::PipeWrite) --p->writers;
    wake_all(p);  // a blocked peer sees EOF or EPIPE
    if (!p->readers && !p->writers) p->in_use = false;
  }
  if (f->node) fs::inode_put(f->node), f->node = nullptr;
  f->kind = File::Kind::Free;
}

ErrorOr<void> make_pipe(File*& read_end, File*& write_end) {
  Pipe* pipe = nullptr;
  for (Pipe& p : g_pipes)
    if (!p.in_use) {
      pipe = &p;
      break;
    }
  if (!pipe) return Errno::EMFILE;
  read_end = alloc_file(File::Kind::PipeRead, pipe);
  if (!read_end) return Errno::EMFILE;
  write_end = alloc_file(File::Kind::PipeWrite, pipe);
  if (!write_end) {
    read_end->kind = File::Kind::Free;
    return Errno::EMFILE;
  }
  pipe->in_use = true;
  pipe->head = pipe->count = 0;
  pipe->readers = pipe->writers = 1;
  return {};
}

ErrorOr<uint64_t> file_read(File* f, uint64_t user_buf, uint64_t len) {
  if (!len) return uint64_t{0};
  if (!user_range_ok(user_buf, len)) return Errno::EFAULT;
  switch (f->kind) {
    case File::Kind::Console: return uint64_t{0};  // no console input: EOF
    case File::Kind::Node: return node_read(f, user_buf, len);
    case File::Kind::PipeRead: {
      Pipe* p = f->pipe;
      while (!p->count) {
        if (!p->writers) return uint64_t{0};
        if (signal_interrupts(*current())) return Errno::EINTR;
        sleep_on(p);
      }
      uint64_t done = 0;
      while (done < len && p->count) {
        uint32_t chunk = Pipe::kSize - p->head;
        if (chunk > p->count) chunk = p->count;
        if (chunk > len - done) chunk = static_cast<uint32_t>(len - done);
        auto r = copy_to_user(user_buf + done, p->buf + p->head, chunk);
        if (r.is_error()) return partial(done, r.error());  // bytes stay in the pipe
        p->head = (p->head + chunk) % Pipe::kSize;
        p->count -= chunk;
        done += chunk;
      }
      wake_all(p);
      return done;
    }
    default: return Errno::EBADF;
  }
}

ErrorOr<uint64_t> file_write(File* f, uint64_t user_buf, uint64_t len) {
  return file_write_from(f, WriteSource::from_user(user_buf), len);
}

ErrorOr<uint64_t> file_write_from(File* f, WriteSource src, uint64_t len) {
  if (!len) return uint64_t{0};
  if (!src.range_ok(len)) return Errno::EFAULT;
  switch (f->kind) {
    case File::Kind::Console: {
      // A console write can be long (the serial port drains ~10 KB/s of
      // real time under TCG): between chunks other processes get their
      // turn and a signal that should interrupt (SIGKILL above all) ends
      // the write with what it has done.
      char chunk[256];
      uint64_t done = 0;
      while (done < len) {
        if (signal_interrupts(*current())) return partial(done, Errno::EINTR);
        const uint64_t n = len - done < sizeof chunk ? len - done : sizeof chunk;
        if (auto r = src.copy(chunk, done, n); r.is_error()) return partial(done, r.error());
        console_write_user(chunk, n);
        done += n;
        cond_resched();
      }
      return done;
    }
    case File::Kind::Node: return node_write(f, src, len);
    case File::Kind::PipeWrite: {
      Pipe* p = f->pipe;
      uint64_t done = 0, woken_for = 0;  // the bytes readers were last woken for
      while (done < len) {
        if (!p->readers) {
          send_signal(*current(), abi::SIGPIPE);
          return partial(done, Errno::EPIPE);
        }
        if (p->count == Pipe::kSize) {
          if (signal_interrupts(*current())) return partial(done, Errno::EINTR);
          // Readers and writers sleep on the same channel: wake them only
          // for bytes this call put in. Woken for nothing, another writer
          // of the full pipe would wake us back the same way, and the two
          // would hand the CPU to each other in the kernel for ever (no
          // tick from user mode, so no timer expires either).
          if (done != woken_for) wake_all(p), woken_for = done;
          sleep_on(p);
          continue;
        }
        const uint32_t tail = (p->head + p->count) % Pipe::kSize;
        uint32_t chunk = Pipe::kSize - p->count;
        if (chunk > Pipe::kSize - tail) chunk = Pipe::kSize - tail;
        if (chunk > len - done) chunk = static_cast<uint32_t>(len - done);
        auto r = src.copy(p->buf + tail, done, chunk);
        if (r.is_error()) return partial(done, r.error());
        p->count += chunk;
        done += chunk;
      }
      wake_all(p);
      return done;
    }
    default: return Errno::EBADF;
  }
}

}  // namespace pvk
