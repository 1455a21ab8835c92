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
#include "kernel/proc/exec_args.h"
#include "kernel/proc/fpu_state.h"
#include "kernel/proc/process.h"
#include "kernel/proc/random.h"
#include "kernel/proc/shebang.h"
#include "kernel/proc/without_kernel_lock.h"
#include "base/console/record.h"
#include "kernel/proc/programs.h"
#include "base/frames/frame_allocator.h"
#include "mm/kernel_space.h"
#include "base/frames/physmap.h"
#include "pvops/call/pvop.h"

namespace pvk {

ErrorOr<void> ExecFile::read(uint64_t offset, void* dst, uint64_t len) const {
  if (image) {
    memcpy(dst, image + offset, len);
    return {};
  }
  const uint64_t got = TRY(fs::read_bytes(node, offset, dst, len));
  if (got != len) return Errno::EIO;  // the file shrank since its headers were checked
  return {};
}

void ExecFile::release() {
  if (node) fs::inode_put(node), node = nullptr;
}

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
// the platform string, the strings of argv and envp and, at the top, the
// file name (AT_EXECFN). It is built in frames of its own through the
// physmap (as many as it takes: up to 2 MiB of strings), which are then
// mapped at the top of the stack VMA; the VMA keeps kUserStackPages
// pages below the page that holds the lowest word.
constexpr unsigned kAuxPairs = 20;

ErrorOr<uint64_t> build_stack(AddressSpace& as, const ElfImage& elf, const char* execfn, const ExecArgs& args) {
  static constexpr char kPlatform[] = "x86_64";
  const uint64_t top = abi::kUserStackTop;
  const uint64_t fn_len = strlen(execfn) + 1;
  const uint64_t fn_at = top - fn_len;
  const uint64_t strings_at = fn_at - args.string_bytes();
  const uint64_t platform_at = strings_at - sizeof kPlatform;
  const uint64_t rand_at = align_down(platform_at, 16) - 16;
  const uint64_t argc = args.argc(), envc = args.envc();
  const uint64_t words_count = 1 + argc + 1 + envc + 1 + 2 * kAuxPairs;
  const uint64_t sp = align_down(rand_at - 8 * words_count, 16);
  const uint64_t base = align_down(sp, kPageSize);
  const uint64_t pages = (top - base) / kPageSize;
  const uint64_t vma_pages = abi::kUserStackPages + pages - 1;
  TRY(as.mmap(VirtAddr{top - vma_pages * kPageSize}, vma_pages * kPageSize, vm::Read | vm::Write, vm::Stack,
              /*fixed=*/true));
  FrameBytes mem;  // offset 0 is `base`; cleared: nothing of the kernel's shows below sp
  TRY(mem.reserve(pages * kPageSize, /*clear=*/true));
  auto put = [&](uint64_t addr, const void* src, uint64_t len) { mem.write(addr - base, src, len); };
  auto word = [&](uint64_t i, uint64_t value) { put(sp + 8 * i, &value, 8); };
  // The strings, and argv[]/envp[] pointing at them (envp's words come
  // after argv's NULL).
  args.lay_out(mem, strings_at - base, [&](uint64_t k, uint64_t pos) {
    word(k < argc ? 1 + k : 2 + k, strings_at + pos);
  });
  put(fn_at, execfn, fn_len);
  put(platform_at, kPlatform, sizeof kPlatform);
  uint8_t random[16];
  random_bytes(random, sizeof random);
  put(rand_at, random, sizeof random);
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
      {AT_EXECFN, fn_at},
      {AT_PLATFORM, platform_at},
      {AT_NULL, 0},
      {AT_NULL, 0},
  };
  word(0, argc);
  word(1 + argc, 0);             // argv terminator
  word(2 + argc + envc, 0);      // envp terminator
  uint64_t w = 3 + argc + envc;
  for (const auto& pair : aux) word(w++, pair[0]), word(w++, pair[1]);
  // Mapped a chunk at a time; a chunk handed to map_frames is its, on
  // success or failure, and the rest stays the buffer's to free.
  for (unsigned i = 0; i < pages;) {
    Pfn chunk[64];
    unsigned n = 0;
    for (; n < 64 && i + n < pages; ++n) chunk[n] = mem.page(i + n);
    auto r = as.map_frames(VirtAddr{base + uint64_t{i} * kPageSize}, chunk, n, vm::Read | vm::Write);
    mem.give_away(i + n);
    TRY(r);
    i += n;
  }
  return sp;
}

ErrorOr<uint64_t> load(AddressSpace& as, const ExecFile& file, const ElfImage& elf, const char* execfn,
                       const ExecArgs& args) {
  for (unsigned i = 0; i < elf.count; ++i) TRY(load_segment(as, file, elf.segments[i]));
  as.set_brk_base(VirtAddr{elf.brk_base});
  return build_stack(as, elf, execfn, args);
}

}  // namespace

ErrorOr<void> check_exec_file(const char* path) {
  ExecFile f = TRY(open_exec_file(path));
  f.release();
  return {};
}

// The interpreter of a `#!` script must be a program, not another script
// (ELOOP; Linux allows a few levels, each costing kernel stack here).
ErrorOr<void> prepare_exec(ExecPlan& plan, const char* path, ExecArgs& args) {
  plan.file.release();
  plan.file = TRY(open_exec_file(path));
  plan.path = path;
  if (plan.file.node) {
    const uint64_t n = plan.file.size < sizeof plan.head ? plan.file.size : sizeof plan.head;
    TRY(plan.file.read(0, plan.head, n));
    Shebang script;
    if (TRY(parse_shebang(plan.head, static_cast<size_t>(n), /*whole_file=*/plan.file.size < sizeof plan.head,
                          script))) {
      // argv becomes interpreter, its optional argument, the script's
      // path, then the caller's argv[1...] (Linux's order).
      plan.file.release();
      const char* with[3];
      unsigned k = 0;
      with[k++] = script.interpreter;
      if (script.argument) with[k++] = script.argument;
      with[k++] = path;
      plan.file = TRY(open_exec_file(script.interpreter));
      plan.path = script.interpreter;
      if (plan.file.node && plan.file.size >= 2) {
        char magic[2];
        TRY(plan.file.read(0, magic, 2));
        if (magic[0] == '#' && magic[1] == '!') return Errno::ELOOP;
      }
      TRY(args.replace_argv0(with, k, strlen(script.interpreter) + 1));
    }
  }
  // Checked before anything is built: a malformed image costs nothing.
  if (auto r = parse_headers(plan.file, plan.elf); r.is_error()) {
    if (plan.elf.interp) Record("exec_refused").str("path", plan.path).str("reason", "dynamic executable (PT_INTERP)");
    return r.error();
  }
  return {};
}

ErrorOr<void> commit_exec(Process& p, ExecPlan& plan, const ExecArgs& args) {
  ExecFile& file = plan.file;
  const ElfImage& elf = plan.elf;
  AddressSpace* as = TRY(AddressSpace::try_create());
  auto sp = load(*as, file, elf, plan.path, args);
  if (sp.is_error()) {
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
  // The old space's teardown last, and from a system call without the
  // kernel lock where the space's lock suffices, as exit's: no thread runs
  // in it any more (the others have ended) and nobody finds it (p.as is
  // the new one).
  if (old) {
    auto teardown = [old] { must(old->destroy(), "destroy old address space"); };
    if (&p == current() && kernel_lock_held())
      without_kernel_lock(teardown);
    else
      teardown();
  }
  return {};
}

ErrorOr<void> exec_program(Process& p, const char* path, ExecArgs& args) {
  ExecPlan plan;  // ~1 KiB of a 16 KiB kernel stack
  TRY(prepare_exec(plan, path, args));
  return commit_exec(p, plan, args);
}

}  // namespace pvk
