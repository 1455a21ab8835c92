#include "kernel/proc/file.h"

#include "base/console/console.h"
#include "base/counters.h"
#include "base/abi.h"
#include "base/lib/kstring.h"
#include "kernel/fs/ramfs.h"
#include "kernel/kernel_lock.h"
#include "kernel/proc/pipe.h"
#include "kernel/proc/process.h"
#include "kernel/proc/user_copy.h"

namespace pvk {

namespace {

constexpr unsigned kMaxFiles = 256;
File g_files[kMaxFiles];
File g_console{File::Kind::Console, 1, nullptr, nullptr, 0, 2};  // never freed; O_RDWR

// O_NONBLOCK as the File has it now (F_SETFL may change it meanwhile, on
// another CPU: one whole load).
bool nonblocking(const File& f) { return __atomic_load_n(&f.flags, __ATOMIC_RELAXED) & abi::O_NONBLOCK; }

// A transfer cut short reports what it moved; only a transfer of nothing
// reports the error.
ErrorOr<uint64_t> partial(uint64_t done, Errno e) {
  if (done) return done;
  return e;
}

// A File's kind as the allocator and the last put see it: a pipe end's last
// reference may be dropped without the kernel lock (a read or write that
// ran without it, whose descriptor was closed meanwhile), and its release
// store of Free is the last thing done to it.
File::Kind load_kind(const File& f) {
  return static_cast<File::Kind>(__atomic_load_n(reinterpret_cast<const uint8_t*>(&f.kind), __ATOMIC_ACQUIRE));
}
void store_free(File& f) {
  __atomic_store_n(reinterpret_cast<uint8_t*>(&f.kind), static_cast<uint8_t>(File::Kind::Free), __ATOMIC_RELEASE);
}

// Under the kernel lock (the only allocator).
File* alloc_file(File::Kind kind, Pipe* pipe) {
  for (File& f : g_files) {
    if (load_kind(f) != File::Kind::Free) continue;
    f = File{kind, 1, pipe, nullptr, 0, 0};
    return &f;
  }
  return nullptr;
}

// SIGPIPE for the caller: signal state is the kernel lock's, which a write
// without it takes for just this.
void raise_sigpipe() {
  if (kernel_lock_held()) return send_signal(*current(), abi::SIGPIPE);
  kernel_lock();
  send_signal(*current(), abi::SIGPIPE);
  kernel_unlock();
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

unsigned files_in_use() {
  unsigned n = 0;
  for (const File& f : g_files) n += load_kind(f) != File::Kind::Free;
  return n;
}

// The count is atomic: a read or write on a pipe end takes and drops its
// reference without the kernel lock (kernel/proc/fd_table.h). Only a pipe
// end's last put can come without it; every other kind is only ever
// referenced under it.
File* file_get(File* f) {
  __atomic_fetch_add(&f->refs, 1u, __ATOMIC_RELAXED);
  return f;
}

void file_put(File* f) {
  if (!__atomic_load_n(&f->refs, __ATOMIC_RELAXED) || load_kind(*f) == File::Kind::Free)
    panic("file_put of a file with no reference (%p)", f);
  if (__atomic_sub_fetch(&f->refs, 1u, __ATOMIC_ACQ_REL)) return;
  if (f == &g_console) {
    __atomic_store_n(&f->refs, 1u, __ATOMIC_RELAXED);
    return;
  }
  if (Pipe* p = f->pipe) pipe_close_end(*p, f->kind == File::Kind::PipeRead);
  if (f->node) fs::inode_put(f->node), f->node = nullptr;
  store_free(*f);
}

ErrorOr<void> make_pipe(File*& read_end, File*& write_end) {
  Pipe* pipe = pipe_alloc();
  if (!pipe) return Errno::EMFILE;
  read_end = alloc_file(File::Kind::PipeRead, pipe);
  write_end = read_end ? alloc_file(File::Kind::PipeWrite, pipe) : nullptr;
  if (!write_end) {
    if (read_end) store_free(*read_end);
    pipe_free_unused(*pipe);
    return Errno::EMFILE;
  }
  return {};
}

ErrorOr<uint64_t> file_read(File* f, uint64_t user_buf, uint64_t len) {
  if (!len) return uint64_t{0};
  if (!user_range_ok(user_buf, len)) return Errno::EFAULT;
  switch (f->kind) {
    case File::Kind::Console: return uint64_t{0};  // no console input: EOF
    case File::Kind::Node: return node_read(f, user_buf, len);
    case File::Kind::PipeRead: return pipe_read(*f->pipe, user_buf, len, nonblocking(*f));
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
        count_event(g_cpu_counters.console_bytes, n);
        done += n;
        cond_resched();
      }
      return done;
    }
    case File::Kind::Node: return node_write(f, src, len);
    case File::Kind::PipeWrite: {
      bool broken = false;
      ErrorOr<uint64_t> r = pipe_write(*f->pipe, src, len, broken, nonblocking(*f));
      if (broken) raise_sigpipe();
      return r;
    }
    default: return Errno::EBADF;
  }
}

}  // namespace pvk
