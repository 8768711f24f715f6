// Sanitizer defaults baked into sanitized headroom and headroom_tests (never into release builds):
// every report goes to a file under HEADROOM_SANITIZER_LOG_DIR, one per process.
//
// Why baked in rather than set through ASAN_OPTIONS: the e2e harness runs headroom with a fixed, minimal
// environment (to compare it with ninja), so options from the environment would never reach it, and a
// report on stderr would only show up as an unexplained output difference. ASAN_OPTIONS/UBSAN_OPTIONS
// set in the environment are still read after these and override them.

#ifndef HEADROOM_SANITIZER_LOG_DIR
#error "HEADROOM_SANITIZER_LOG_DIR must name the directory for sanitizer reports"
#endif

extern "C" {

// With ASan and UBSan in one runtime, common flags such as log_path are shared (the last parsed
// wins), so the path is set once, here. detect_stack_use_after_return finds dangling references to
// locals; strict_string_checks catches unterminated C strings; 86 tells an ASan exit from a build failure.
const char* __asan_default_options() {
  return "log_path=" HEADROOM_SANITIZER_LOG_DIR "/report:detect_leaks=1:detect_stack_use_after_return=1"
         ":strict_string_checks=1:exitcode=86";
}

// Recover and keep going so one run lists every report; the scripts fail on any report file.
const char* __ubsan_default_options() { return "print_stacktrace=1:halt_on_error=0"; }

}  // extern "C"
