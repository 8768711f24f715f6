// bench/bench_manifest_text.h: builds an in-memory Chromium-shaped manifest (one file) for the micro-benchmarks,
// deterministic for a given size, with rules, a pool, per-target variables, deps=gcc and rspfile edges.
#pragma once

#include <cstdint>
#include <string>

namespace headroom_bench {

// `targets` targets of `sources` compile edges each, plus one link and one phony alias per target.
inline std::string ChromiumLikeManifest(int targets, int sources) {
  std::string m;
  m.reserve(static_cast<size_t>(targets) * sources * 120);
  m += "ninja_required_version = 1.7.2\ncc = stub_cc\npool link_pool\n  depth = 4\n";
  m += "rule cxx\n  command = $cc -o $out -d $out.d $defines $include_dirs $cflags -c $in\n"
       "  description = CXX $out\n  depfile = $out.d\n  deps = gcc\n";
  m += "rule link\n  command = $cc -o $out @$rspfile\n  rspfile = $out.rsp\n  rspfile_content = $in\n"
       "  pool = link_pool\n";
  uint32_t rng = 12345;
  for (int t = 0; t < targets; ++t) {
    const std::string name = "component" + std::to_string(t % 13) + "/lib" + std::to_string(t);
    m += "defines = -DTARGET_" + std::to_string(t) + " -DCOMPONENT_BUILD\n";
    m += "include_dirs = -I../../src/" + name + " -I../../third_party/include\n";
    std::string objs;
    for (int s = 0; s < sources; ++s) {
      rng = rng * 1103515245u + 12345u;
      const std::string obj = "obj/" + name + "/./f" + std::to_string(s) + ".o";
      m += "build " + obj + ": cxx ../../src/" + name + "/f" + std::to_string(s) + ".cc";
      if (t > 0) m += " || obj/component" + std::to_string((t - 1) % 13) + "/lib" + std::to_string(t - 1) + ".stamp";
      m += "\n";
      if (rng % 4 == 0) m += "  cflags = -O2 -Wno-unused\n";
      objs += " " + obj;
    }
    m += "build obj/" + name + ".stamp: link" + objs + "\n";
    m += "build lib" + std::to_string(t) + ": phony obj/" + name + ".stamp\n";
  }
  m += "default";
  for (int t = 0; t < targets; ++t) m += " lib" + std::to_string(t);
  m += "\n";
  return m;
}

}  // namespace headroom_bench
