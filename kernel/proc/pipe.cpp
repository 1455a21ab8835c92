// Pipe reads and writes under each pipe's own lock (kernel/proc/pipe.h).
//
// Nothing under a pipe lock may fault: a fault runs the whole fault path
// (the space's lock, frame allocation, maybe a flush that waits for every
// other CPU) while the pipe's other readers and writers spin, and under
// the kernel lock's callers it could not sleep either. So the copies to
// and from user memory run with faults turned into failures
// (user_faults_off, as a futex compare does); a copy that fails moves
// nothing visible — a read leaves the bytes in the pipe, a write has not
// advanced the count — and the caller drops the lock, brings the pages in
// with faults allowed (or finds the address bad: EFAULT), and tries again.
#include "kernel/proc/pipe.h"

#include "base/lib/kstring.h"
#include "kernel/proc/file.h"
#include "kernel/proc/process.h"
#include "kernel/proc/user_copy.h"
#include "kernel/proc/without_user_faults.h"

namespace pvk {

namespace {

constexpr unsigned kMaxPipes = 64;
Pipe g_pipes[kMaxPipes];

constexpr uint64_t kPage = 4096;

uint32_t min32(uint64_t a, uint64_t b) { return static_cast<uint32_t>(a < b ? a : b); }

// A transfer cut short reports what it moved; only a transfer of nothing
// reports the error.
ErrorOr<uint64_t> partial(uint64_t done, Errno e) {
  if (done) return done;
  return e;
}

// Brings in every page of [addr, addr+len) with faults allowed (no lock
// held): a byte of each is read and, for a destination, written back as it
// was (the range is where this read's bytes go anyway).
ErrorOr<void> fault_in(uint64_t addr, uint64_t len, bool for_write) {
  for (uint64_t at = addr; at < addr + len; at = (at & ~(kPage - 1)) + kPage) {
    uint8_t byte;
    TRY(copy_from_user(&byte, at, 1));
    if (for_write) TRY(copy_to_user(at, &byte, 1));
  }
  return {};
}

// Under the lock: every waiter of q unlinked, marked woken and woken up.
void wake_queue(PipeWaiter*& q) {
  while (PipeWaiter* w = q) {
    q = w->next;
    // The thread before `woken`: once that is set the waiter may return
    // and its entry (on its stack) be gone.
    Process& t = *w->thread;
    __atomic_store_n(&w->woken, true, __ATOMIC_SEQ_CST);
    wake_up(t);
  }
}

// Under p's lock: sleeps on q until woken (progress at the other end, its
// close), a signal, or spuriously; the lock is dropped for the sleep and
// held again on return. False if a signal should cut the call short
// (EINTR). The caller looks at its condition again either way.
bool wait_on(Pipe& p, PipeWaiter*& q) {
  Process& self = *current();
  PipeWaiter w{&self};
  w.next = q;
  q = &w;
  // Commit, then look (kernel/proc/wake.h): a wake from here on ends the
  // sleep below before it begins, and so does a signal sent from here on
  // (send_signal stores the bit, then wakes).
  commit_sleep(&w, UINT64_MAX);
  p.lock.unlock_irqs_off();
  bool signalled = false;
  if (__atomic_load_n(&w.woken, __ATOMIC_SEQ_CST)) {
    cancel_committed_sleep();
  } else if (signal_interrupts(self)) {
    cancel_committed_sleep();
    signalled = true;
  } else {
    sleep_committed();
  }
  p.lock.lock_irqs_off();
  if (!__atomic_load_n(&w.woken, __ATOMIC_RELAXED))
    for (PipeWaiter** at = &q; *at; at = &(*at)->next)
      if (*at == &w) {
        *at = w.next;
        break;
      }
  return !signalled;
}

// Under the lock: n bytes of src from `done` on into the ring at its tail,
// without faults. False if a copy failed; then the count is unchanged, so
// nothing of it is visible.
bool copy_in(Pipe& p, const WriteSource& src, uint64_t done, uint32_t n) {
  return without_user_faults([&] {
    const uint32_t tail = (p.head + p.count) % Pipe::kSize;
    const uint32_t first = min32(n, Pipe::kSize - tail);
    if (src.copy(p.buf + tail, done, first).is_error()) return false;
    return first == n || !src.copy(p.buf, done + first, n - first).is_error();
  });
}

}  // namespace

Pipe* pipe_alloc() {
  for (Pipe& p : g_pipes) {
    if (__atomic_load_n(&p.in_use, __ATOMIC_ACQUIRE)) continue;
    p.head = p.count = 0;
    p.readers = p.writers = 1;
    p.reading = p.writing = nullptr;
    __atomic_store_n(&p.in_use, true, __ATOMIC_RELAXED);
    return &p;
  }
  return nullptr;
}

void pipe_free_unused(Pipe& p) { __atomic_store_n(&p.in_use, false, __ATOMIC_RELEASE); }

unsigned pipes_in_use() {
  unsigned n = 0;
  for (const Pipe& p : g_pipes) n += __atomic_load_n(&p.in_use, __ATOMIC_RELAXED);
  return n;
}

ErrorOr<uint64_t> pipe_read(Pipe& p, uint64_t user_buf, uint64_t len, bool nonblock) {
  p.lock.lock_irqs_off();
  for (;;) {
    while (!p.count) {
      if (!p.writers) {
        p.lock.unlock_irqs_off();
        return uint64_t{0};  // EOF
      }
      if (nonblock) {
        p.lock.unlock_irqs_off();
        return Errno::EAGAIN;
      }
      if (!wait_on(p, p.reading)) {
        p.lock.unlock_irqs_off();
        return Errno::EINTR;
      }
    }
    uint64_t done = 0;
    bool faulted = false;
    while (done < len && p.count) {
      const uint32_t chunk = min32(min32(Pipe::kSize - p.head, p.count), len - done);
      if (!without_user_faults([&] { return !copy_to_user(user_buf + done, p.buf + p.head, chunk).is_error(); })) {
        faulted = true;  // these bytes stay in the pipe
        break;
      }
      p.head = (p.head + chunk) % Pipe::kSize;
      p.count -= chunk;
      done += chunk;
    }
    if (done) wake_queue(p.writing);  // room for them
    p.lock.unlock_irqs_off();
    if (done || !faulted) return done;
    // Nothing moved: bring the destination in, then look again (the bytes
    // may have been taken meanwhile by another reader).
    TRY(fault_in(user_buf, len < Pipe::kSize ? len : Pipe::kSize, /*for_write=*/true));
    p.lock.lock_irqs_off();
  }
}

ErrorOr<uint64_t> pipe_write(Pipe& p, const WriteSource& src, uint64_t len, bool& broken, bool nonblock) {
  // A write of at most PIPE_BUF bytes waits for room for all of them and
  // goes in with one copy; a longer one goes in as room appears.
  const bool whole = len <= Pipe::kSize;
  uint64_t done = 0, woken_for = 0;  // the bytes readers were last woken for
  Errno error = Errno::EPIPE;
  p.lock.lock_irqs_off();
  while (done < len) {
    if (!p.readers) {
      broken = true;
      break;
    }
    const uint64_t left = len - done;
    const uint32_t room = Pipe::kSize - p.count;
    if (!room || (whole && room < left)) {
      // Readers first for the bytes this call put in, so a write longer
      // than the ring never waits on readers that were never told.
      if (done != woken_for) wake_queue(p.reading), woken_for = done;
      if (nonblock) {
        error = Errno::EAGAIN;
        break;
      }
      if (!wait_on(p, p.writing)) {
        error = Errno::EINTR;
        break;
      }
      continue;
    }
    const uint32_t n = min32(room, left);
    if (!copy_in(p, src, done, n)) {
      p.lock.unlock_irqs_off();
      const ErrorOr<void> in = src.kernel ? ErrorOr<void>{} : fault_in(src.user + done, n, /*for_write=*/false);
      p.lock.lock_irqs_off();
      if (in.is_error()) {
        error = in.error();
        break;
      }
      continue;
    }
    p.count += n;
    done += n;
  }
  if (done != woken_for) wake_queue(p.reading);
  p.lock.unlock_irqs_off();
  if (done == len) return done;
  return partial(done, error);
}

void pipe_close_end(Pipe& p, bool read_end) {
  p.lock.lock_irqs_off();
  if (read_end)
    --p.readers;
  else
    --p.writers;
  // A blocked peer sees EOF or EPIPE (and the other end's own sleepers look
  // again; they hold Files of their own, so this is never the last end
  // while they sleep).
  wake_queue(p.reading);
  wake_queue(p.writing);
  const bool last = !p.readers && !p.writers;
  p.lock.unlock_irqs_off();
  // After the unlock: the allocator may hand the pipe (and its lock) out
  // again from here on.
  if (last) __atomic_store_n(&p.in_use, false, __ATOMIC_RELEASE);
}

}  // namespace pvk
