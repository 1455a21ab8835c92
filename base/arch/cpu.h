// Thin wrappers over privileged x86-64 instructions used by native code.
// Code that must also run as a Xen PV guest reaches these only through
// pvops or the platform table (a PV kernel runs in ring 3 and traps on most).
#pragma once
#include <stdint.h>

namespace pvk::cpu {

inline void outb(uint16_t port, uint8_t v) { asm volatile("outb %0, %1" : : "a"(v), "Nd"(port)); }
inline void outl(uint16_t port, uint32_t v) { asm volatile("outl %0, %1" : : "a"(v), "Nd"(port)); }
inline uint8_t inb(uint16_t port) {
  uint8_t v;
  asm volatile("inb %1, %0" : "=a"(v) : "Nd"(port));
  return v;
}

inline uint64_t rdtsc() {
  uint32_t lo, hi;
  asm volatile("rdtsc" : "=a"(lo), "=d"(hi));
  return (uint64_t{hi} << 32) | lo;
}

inline uint64_t read_cr2() {
  uint64_t v;
  asm volatile("mov %%cr2, %0" : "=r"(v));
  return v;
}
inline uint64_t read_cr3() {
  uint64_t v;
  asm volatile("mov %%cr3, %0" : "=r"(v));
  return v;
}
inline uint64_t read_cr4() {
  uint64_t v;
  asm volatile("mov %%cr4, %0" : "=r"(v));
  return v;
}
inline void write_cr4(uint64_t v) { asm volatile("mov %0, %%cr4" : : "r"(v) : "memory"); }
inline void wrmsr(uint32_t msr, uint64_t v) {
  asm volatile("wrmsr" : : "c"(msr), "a"(static_cast<uint32_t>(v)), "d"(static_cast<uint32_t>(v >> 32)));
}
inline uint64_t rdmsr(uint32_t msr) {
  uint32_t lo, hi;
  asm volatile("rdmsr" : "=a"(lo), "=d"(hi) : "c"(msr));
  return (uint64_t{hi} << 32) | lo;
}
inline void write_cr3(uint64_t v) { asm volatile("mov %0, %%cr3" : : "r"(v) : "memory"); }
inline void invlpg(uint64_t va) { asm volatile("invlpg (%0)" : : "r"(va) : "memory"); }
// Unprivileged (also usable by a PV kernel in ring 3): writes back and
// invalidates the cache line holding p at every level, whatever its memory type.
inline void clflush(const volatile void* p) {
  asm volatile("clflush %0" : : "m"(*static_cast<const volatile char*>(p)) : "memory");
}
inline void mfence() { asm volatile("mfence" : : : "memory"); }

// Makes code written through a data access visible to instruction fetch
// (cpuid serialises; the SDM's recipe for cross-modifying code).
inline void serialize();
inline void cpuid(uint32_t leaf, uint32_t sub, uint32_t& a, uint32_t& b, uint32_t& c, uint32_t& d) {
  asm volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(leaf), "c"(sub));
}

inline void serialize() {
  uint32_t a, b, c, d;
  cpuid(0, 0, a, b, c, d);
}

// The body of every spin-wait (Linux's cpu_relax): `pause` tells a hardware
// sibling thread to run, and under QEMU's round-robin TCG it ends this vCPU's
// turn, so a CPU waiting for another lets that one run instead of burning its
// whole slice.
inline void relax() { asm volatile("pause" ::: "memory"); }

[[noreturn]] inline void halt_forever() {
  for (;;) asm volatile("cli; hlt");
}

}  // namespace pvk::cpu
