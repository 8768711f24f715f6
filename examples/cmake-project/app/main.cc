// The example executable: prints the library's greeting so a test can check the link worked.
#include <cstdio>

#include "greet/greet.h"

int main(int argc, char** argv) {
  std::puts(greet::Greeting(argc > 1 ? argv[1] : "headroom").c_str());
  return 0;
}
