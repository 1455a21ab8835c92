// Host stand-in for the kernel's panic(): the message is printed to stderr
// and thrown as PanicError, so a test can EXPECT_THROW an intended panic and
// any unintended one fails the test loudly (uncaught in a test body, or
// std::terminate when raised in a destructor, which death tests catch).
#pragma once
#include "host_compat.h"
#include <stdexcept>
#include <string>

namespace pvk::test {

class PanicError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// How many times pvk::panic ran in this process (death tests aside).
unsigned panic_count();

}  // namespace pvk::test
