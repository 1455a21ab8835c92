#include "kernel/proc/exec.h"

#include <elf.h>

#include "base/arch/cpu.h"
#include "base/counters.h"
#include "base/arch/platform.h"
#include "base/lib/kstring.h"
#include "kernel/fs/file_pages.h"
#include "kernel/fs/path.h"
#include "kernel/fs/ramfs.h"
#include "kernel/proc/elf_image.h"
#include "kernel/proc/fpu_state.h"
#include "kernel/proc/process.h"
#include "kernel/proc/random.h"
#include "kernel/proc/shebang.h"
#include "base/console/record.h"
#include "kernel/proc/programs.h"
#include "base/frames/frame_allocator.h"
#include "mm/kernel_space.h"
#include "base/frames/physmap.h"
#include "pvops/call/pvop.h"

namespace pvk {
namespace {

const PvkEmbeddedProgram* find_program(const char* name) {
  // "/bin/foo" and "foo" name the same program.
  const char* base = name;
  for (const char* c = name; *c; ++c)
    if (*c == '/') base = c + 1;
  for (uint64_t i = 0; i < pvk_program_count; ++i)
    if (!strcmp(pvk_programs[i].name, base)) return &pvk_programs[i];
  return nullptr;
}

// What exec loads from: an image embedded in the kernel, or a regular file
// of the root filesystem (a reference held while exec reads it).
struct ExecFile {
  const uint8_t* image = nullptr;
  fs::Inode* node = nullptr;
  uint64_t size = 0;
  const char* name = nullptr;  // what the process is called: the file's last path component

  ErrorOr<void> read(uint64_t offset, void* dst, uint64_t len) const {
    if (image) {
      memcpy(dst, image + offset, len);
      return {};
    }
    const uint64_t got = TRY(fs::read_bytes(node, offset, dst, len));
    if (got != len) return Errno::EIO;  // the file shrank since its headers were checked
    return {};
  }
  void release() {
    if (node) fs::inode_put(node), node = nullptr;
  }
};

const char* last_component(const char* path) {
  const char* base = path;
  for (const char* c = path; *c; ++c)
    if (*c == '/' && c[1]) base = c + 1;
  return base;
}

ExecFile embedded(const PvkEmbeddedProgram& prog) {
  return ExecFile{prog.start, nullptr, static_cast<uint64_t>(prog.end - prog.start), prog.name};
}

// A bare name is an embedded program first (the project's own programs are
// found by name); a path is looked up in the root filesystem from the
// working directory, and a path naming no file there may still end in an
// embedded program's name ("/bin/forkexec_child"). A directory or a file
// without an execute bit is EACCES, as on Linux.
ErrorOr<ExecFile> open_exec_file(const char* path) {
  bool bare = true;
  for (const char* c = path; *c; ++c) bare &= *c != '/';
  if (bare)
    if (const PvkEmbeddedProgram* prog = find_program(path)) return embedded(*prog);
  Process* self = current();
  fs::Inode* start = self && self->leader && self->leader->cwd ? self->leader->cwd : fs::root();
  auto node = fs::resolve(start, path, strlen(path), /*follow_last=*/true);
  if (node.is_error()) {
    if (node.error() == Errno::ENOENT && !bare)
      if (const PvkEmbeddedProgram* prog = find_program(path)) return embedded(*prog);
    return node.error();
  }
  fs::Inode* n = node.value();
  if (!n->is_reg() || !(n->mode & 0111)) return Errno::EACCES;
  fs::inode_get(n);
  return ExecFile{nullptr, n, n->size, last_component(path)};
}

// The ELF headers of f: an embedded image is read in place, a file's first
// page through a frame of its own (kept off the 16 KiB kernel stack).
ErrorOr<void> parse_headers(const ExecFile& f, ElfImage& elf) {
  if (f.image) return parse_elf_image(f.image, static_cast<size_t>(f.size), elf);
  const Pfn page = TRY(frames().try_alloc());
  const uint64_t len = f.size < kPageSize ? f.size : kPageSize;
  auto r = f.read(0, phys_to_virt<uint8_t>(page), len);
  if (!r.is_error()) r = parse_elf_image(phys_to_virt<uint8_t>(page), static_cast<size_t>(len), f.size, elf);
  frames().must_free(page);
  return r;
}

uint32_t segment_prot(uint32_t pflags) {
  uint32_t prot = vm::Read;
  if (pflags & PF_W) prot |= vm::Write;
  if (pflags & PF_X) prot |= vm::Exec;
  return prot;
}

// Pages [va, end) of a segment in fresh frames, filled from the file, mapped
// at once: a page the file fills is copied, with only its bytes outside
// the file zeroed; only pages without file bytes (.bss) are cleared whole
// (the page_clear_cycles counter showed exec clearing every page before
// copying over it: 41 % of forkexec natively).
ErrorOr<void> fill_pages(AddressSpace& as, const ExecFile& file, const ElfSegment& seg, uint64_t va, uint64_t end,
                         uint32_t prot) {
  Pfn chunk[64];
  while (va < end) {
    unsigned n = 0;
    for (; n < 64 && va + n * kPageSize < end; ++n) {
      auto f = frames().try_alloc();
      if (f.is_error()) {
        while (n--) frames().must_free(chunk[n]);
        return f.error();
      }
      chunk[n] = f.value();
      uint8_t* dst = phys_to_virt<uint8_t>(chunk[n]);
      const uint64_t page = va + n * kPageSize;
      // The file bytes that land in this page.
      const uint64_t from = page > seg.vaddr ? page : seg.vaddr;
      const uint64_t to_file = seg.vaddr + seg.filesz;
      const uint64_t to = page + kPageSize < to_file ? page + kPageSize : to_file;
      if (to > from) {
        count_event(g_mm_stats.exec_pages_filled);
        memset(dst, 0, from - page);
        memset(dst + (to - page), 0, page + kPageSize - to);
        if (auto r = file.read(seg.offset + (from - seg.vaddr), dst + (from - page), to - from); r.is_error()) {
          for (unsigned k = 0; k <= n; ++k) frames().must_free(chunk[k]);
          return r.error();
        }
      } else {
        clear_user_page(chunk[n]);
      }
    }
    TRY(as.map_frames(VirtAddr{va}, chunk, n, prot));  // on failure it keeps or frees each frame itself
    va += n * kPageSize;
  }
  return {};
}

// One segment (checked by parse_elf_image): the pages the file fills whole
// are a private mapping of the file, demand-paged from its own frames
// copy-on-write (mm/page_source.h; Linux maps a program from its page cache
// the same way), so exec maps nothing a run does not touch; the rest (an
// embedded image, a partial last page, .bss) is anonymous memory filled
// now. A segment's pages start at the file page holding its first byte
// (the bytes before it in that page are mapped too, as on Linux).
ErrorOr<void> load_segment(AddressSpace& as, const ExecFile& file, const ElfSegment& seg) {
  const uint64_t start = align_down(seg.vaddr, kPageSize);
  const uint64_t end = align_up(seg.vaddr + seg.memsz, kPageSize);
  const uint32_t prot = segment_prot(seg.flags);
  // A file page can stand for a page of the segment only where their
  // offsets agree within the page (the linkers' layout; ELF asks it).
  const bool congruent = seg.offset % kPageSize == seg.vaddr % kPageSize;
  const uint64_t whole_end = align_down(seg.vaddr + seg.filesz, kPageSize);  // past the last page the file fills
  uint64_t va = start;
  if (file.node && congruent && whole_end > start) {
    const uint64_t first_page = align_down(seg.offset, kPageSize) / kPageSize;
    TRY(as.mmap(VirtAddr{start}, whole_end - start, prot, 0, /*fixed=*/true, fs::file_pages(file.node, first_page)));
    va = whole_end;
  }
  if (va == end) return {};
  TRY(as.mmap(VirtAddr{va}, end - va, prot, 0, /*fixed=*/true));
  return fill_pages(as, file, seg, va, end, prot);
}

// Linux's initial stack: argc, argv[], NULL, envp[], NULL, the auxiliary
// vector glibc's static startup reads, then (above) AT_RANDOM's 16 bytes,
// the platform string, the strings of argv and envp and the file name
// (AT_EXECFN) — in the top page of the stack, filled through the physmap
// before it is mapped.
constexpr unsigned kAuxPairs = 20;

ErrorOr<uint64_t> build_stack(AddressSpace& as, const ElfImage& elf, const char* execfn, const char* const* argv,
                              const char* const* envp) {
  const uint64_t top = abi::kUserStackTop;
  TRY(as.mmap(VirtAddr{top - abi::kUserStackPages * kPageSize}, abi::kUserStackPages * kPageSize, vm::Read | vm::Write,
              vm::Stack, /*fixed=*/true));
  const Pfn page = TRY(frames().try_alloc());
  uint8_t* mem = phys_to_virt<uint8_t>(page);
  clear_user_page(page);
  constexpr unsigned kMaxStrings = 64;
  constexpr uint64_t kVectors = 8 * (kMaxStrings + 3 + 2 * kAuxPairs) + 32;  // words below the strings
  uint64_t strings = kPageSize;  // offset within the page, growing down
  auto push = [&](const void* src, size_t len) -> ErrorOr<uint64_t> {
    if (strings < len + kVectors) return Errno::E2BIG;
    strings -= len;
    memcpy(mem + strings, src, len);
    return top - kPageSize + strings;
  };
  auto fail = [&](Errno e) -> ErrorOr<uint64_t> {
    frames().must_free(page);
    return e;
  };
  auto fn = push(execfn, strlen(execfn) + 1);
  if (fn.is_error()) return fail(fn.error());
  uint64_t ptrs[kMaxStrings];
  unsigned count[2] = {0, 0};
  const char* const* lists[2] = {argv, envp};
  unsigned n = 0;
  for (unsigned l = 0; l < 2; ++l) {
    for (unsigned i = 0; lists[l] && lists[l][i]; ++i, ++n, ++count[l]) {
      if (n == kMaxStrings) return fail(Errno::E2BIG);
      auto at = push(lists[l][i], strlen(lists[l][i]) + 1);
      if (at.is_error()) return fail(at.error());
      ptrs[n] = at.value();
    }
  }
  static constexpr char kPlatform[] = "x86_64";
  const uint64_t platform = push(kPlatform, sizeof kPlatform).value();  // room kept by kVectors
  uint8_t random[16];
  random_bytes(random, sizeof random);
  strings = align_down(strings, 16);
  const uint64_t rand_at = push(random, sizeof random).value();
  uint32_t a, b, c, d;
  cpu::cpuid(1, 0, a, b, c, d);
  const uint64_t aux[kAuxPairs][2] = {
      {AT_HWCAP, d},                 // CPUID.1:EDX, as Linux reports it on x86
      {AT_PAGESZ, kPageSize},
      {AT_CLKTCK, 100},
      {AT_PHDR, elf.phdr_vaddr},
      {AT_PHENT, sizeof(Elf64_Phdr)},
      {AT_PHNUM, elf.phnum},
      {AT_BASE, 0},                  // no interpreter
      {AT_FLAGS, 0},
      {AT_ENTRY, elf.entry},
      {AT_UID, 0}, {AT_EUID, 0}, {AT_GID, 0}, {AT_EGID, 0},  // every process runs as root
      {AT_SECURE, 0},
      {AT_RANDOM, rand_at},
      {AT_HWCAP2, 0},
      {AT_EXECFN, fn.value()},
      {AT_PLATFORM, platform},
      {AT_NULL, 0},
      {AT_NULL, 0},
  };
  const unsigned argc = count[0], envc = count[1];
  const uint64_t words_count = 1 + argc + 1 + envc + 1 + 2 * kAuxPairs;
  const uint64_t sp = align_down(strings - 8 * words_count, 16);
  auto* words = reinterpret_cast<uint64_t*>(mem + sp);
  unsigned w = 0;
  words[w++] = argc;
  for (unsigned i = 0; i < argc; ++i) words[w++] = ptrs[i];
  words[w++] = 0;  // argv terminator
  for (unsigned i = 0; i < envc; ++i) words[w++] = ptrs[argc + i];
  words[w++] = 0;  // envp terminator
  for (const auto& pair : aux) words[w++] = pair[0], words[w++] = pair[1];
  TRY(as.map_frames(VirtAddr{top - kPageSize}, &page, 1, vm::Read | vm::Write));
  return top - kPageSize + sp;
}

ErrorOr<uint64_t> load(AddressSpace& as, const ExecFile& file, const ElfImage& elf, const char* execfn,
                       const char* const* argv, const char* const* envp) {
  for (unsigned i = 0; i < elf.count; ++i) TRY(load_segment(as, file, elf.segments[i]));
  as.set_brk_base(VirtAddr{elf.brk_base});
  return build_stack(as, elf, execfn, argv, envp);
}

}  // namespace

ErrorOr<void> check_exec_file(const char* path) {
  ExecFile f = TRY(open_exec_file(path));
  f.release();
  return {};
}

namespace {

ErrorOr<void> exec_elf(Process& p, ExecFile& file, const char* path, const char* const* argv, const char* const* envp);

// A file of the tree that starts with "#!" runs its interpreter instead:
// argv becomes interpreter, its optional argument, the script's path, then
// the caller's argv[1...] (Linux's order). The interpreter must be a
// program, not another script (ELOOP: each level costs kernel stack).
ErrorOr<void> exec_file(Process& p, ExecFile& file, const char* path, const char* const* argv,
                        const char* const* envp, bool nested) {
  if (file.node) {
    char head[kShebangBytes];
    const uint64_t n = file.size < sizeof head ? file.size : sizeof head;
    if (auto r = file.read(0, head, n); r.is_error()) return file.release(), r.error();
    Shebang script;
    auto is_script = parse_shebang(head, static_cast<size_t>(n), /*whole_file=*/file.size < sizeof head, script);
    if (is_script.is_error() || is_script.value()) {
      file.release();
      if (is_script.is_error()) return is_script.error();
      if (nested) return Errno::ELOOP;
      constexpr unsigned kMax = 64;
      const char* args[kMax + 1];
      unsigned k = 0;
      args[k++] = script.interpreter;
      if (script.argument) args[k++] = script.argument;
      args[k++] = path;
      for (unsigned i = 1; argv && argv[0] && argv[i]; ++i) {
        if (k == kMax) return Errno::E2BIG;
        args[k++] = argv[i];
      }
      args[k] = nullptr;
      ExecFile interp = TRY(open_exec_file(script.interpreter));
      return exec_file(p, interp, script.interpreter, args, envp, /*nested=*/true);
    }
  }
  return exec_elf(p, file, path, argv, envp);
}

ErrorOr<void> exec_elf(Process& p, ExecFile& file, const char* path, const char* const* argv, const char* const* envp) {
  // Checked before anything is built: a malformed image costs nothing.
  ElfImage elf;  // ~700 bytes of a 16 KiB kernel stack
  if (auto r = parse_headers(file, elf); r.is_error()) {
    if (elf.interp) Record("exec_refused").str("path", path).str("reason", "dynamic executable (PT_INTERP)");
    file.release();
    return r.error();
  }
  auto made = AddressSpace::try_create();
  if (made.is_error()) return file.release(), made.error();
  AddressSpace* as = made.value();
  auto sp = load(*as, file, elf, path, argv, envp);
  if (sp.is_error()) {
    file.release();
    must(as->destroy(), "destroy failed exec space");
    return sp.error();
  }
  // The group's /proc/self/exe: the new file's reference moves there.
  if (p.leader->exe) fs::inode_put(p.leader->exe);
  p.leader->exe = file.node;
  file.node = nullptr;
  AddressSpace* old = p.as;
  p.as = as;
  // Through switch_mm: this CPU joins the new space's CPU mask (else a
  // thread it later gets on another CPU could change the tables without
  // shooting this CPU down) and leaves the old one's before it goes.
  if (&p == current()) must(switch_mm(as), "switch_mm");
  if (old) must(old->destroy(), "destroy old address space");
  TrapFrame& f = *p.frame();
  memset(&f, 0, sizeof f);
  f.rip = elf.entry;
  f.rsp = sp.value();
  f.cs = g_platform->user_cs;
  f.ss = g_platform->user_ss;
  f.rflags = 0x202;  // IF
  fpu_exec_reset(p);  // a new program starts from the clean FP state
  for (auto& a : p.actions)
    if (a.handler != abi::SIG_IGN) a = abi::KernelSigaction{};  // handlers die with the old image
  size_t n = 0;
  for (const char* c = file.name; *c && n < sizeof p.name - 1; ++c) p.name[n++] = *c;
  p.name[n] = 0;
  return {};
}

}  // namespace

ErrorOr<void> exec_program(Process& p, const char* path, const char* const* argv, const char* const* envp) {
  ExecFile file = TRY(open_exec_file(path));
  return exec_file(p, file, path, argv, envp, /*nested=*/false);
}

}  // namespace pvk
