// hello: the smallest user program, for bringing up user mode (init=hello).
// One write to fd 1, one record, exit 0. No fork, no signals, no memory calls.
#include "bench/libc/user.h"
#include "base/console/record.h"

int main(int argc, char** argv, char** envp) {
  pvk::user::print("hello from user mode\n");
  pvk::Record("hello").u64("argc", static_cast<uint64_t>(argc)).str("argv0", argc > 0 && argv[0] ? argv[0] : "");
  return 0;
}
