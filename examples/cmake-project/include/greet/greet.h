// Public interface of the example's library; touching it must rebuild both the library and app.
#pragma once

#include <string>

namespace greet {

std::string Greeting(const std::string& name);

}  // namespace greet
