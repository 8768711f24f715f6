// The example library: one function behind a public header.
#include "greet/greet.h"

namespace greet {

std::string Greeting(const std::string& name) { return "hello, " + name; }

}  // namespace greet
