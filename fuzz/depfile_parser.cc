// libFuzzer target: DepfileParser::Parse (in-place unescaping) on arbitrary depfile text.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "headroom/logs/depfile_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string content(reinterpret_cast<const char*>(data), size);
  headroom::DepfileParser parser;
  std::string err;
  if (parser.Parse(&content, &err)) {
    // Every view must lie inside the (rewritten) buffer.
    const char* begin = content.data();
    const char* end = begin + content.size();
    for (const auto* list : {&parser.outs, &parser.ins})
      for (std::string_view view : *list)
        if (!view.empty() && (view.data() < begin || view.data() + view.size() > end)) std::abort();
  }
  return 0;
}
