// GNU make jobserver client (PyPI ninja 1.13.2 behaviour): parses MAKEFLAGS and borrows job tokens from
// make's pool (a FIFO, make 4.4+, or an inherited pipe, make 4.3 and older) so a headroom run nested in
// `make -jN` shares make's pool instead of adding its own -j.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace headroom {

struct BuildConfig;
class Status;

struct JobserverConfig {
  enum class Mode { kNone, kPipe, kFifo };
  Mode mode = Mode::kNone;
  std::string fifo_path;  // kFifo
  int read_fd = -1;       // kPipe: the inherited descriptors make named
  int write_fd = -1;
};

// Reads a MAKEFLAGS value. The last --jobserver-auth= (or the older --jobserver-fds=) wins; a dry
// run (`n` among the single-letter flags of the first word) means no jobserver. A descriptor pair is
// read as make's sscanf("%d,%d") reads it (`3,4,5` is 3,4; a negative one means no jobserver).
// Returns false with *error for an auth value that is neither `fifo:PATH` nor such a pair.
bool ParseMakeFlags(std::string_view makeflags, JobserverConfig* config, std::string* error);

// MAKEFLAGS split into its words at spaces and tabs (the client reads them; the server rewrites them per job).
std::vector<std::string_view> MakeflagsWords(std::string_view makeflags);

// A client of a FIFO jobserver. Every process in the pool owns one implicit slot; each extra job
// needs a token, a byte read from the FIFO, and the same byte goes back when the job is done.
class JobserverClient {
 public:
  // Opens the FIFO (close-on-exec: children reach the pool through MAKEFLAGS, never through an
  // inherited descriptor). nullptr with *error when it cannot be used.
  static std::unique_ptr<JobserverClient> OpenFifo(const std::string& path, std::string* error);
  // Uses make's inherited pipe: both descriptors must be open pipes ("Invalid file descriptors"
  // otherwise, as when make withheld them from a recipe without `+`). The pipe is reopened through
  // /proc/self/fd so reads are non-blocking without touching the description make shares.
  static std::unique_ptr<JobserverClient> OpenPipe(int read_fd, int write_fd, std::string* error);
  ~JobserverClient();  // hands back every token still held
  JobserverClient(const JobserverClient&) = delete;
  JobserverClient& operator=(const JobserverClient&) = delete;

  // Job slots held now: the implicit one plus the tokens read so far.
  size_t slots() const { return 1 + tokens_.size(); }
  size_t tokens_held() const { return tokens_.size(); }
  // Takes one more token if the pool has one right now; never blocks.
  bool TryAcquire();
  // Gives tokens back until no more slots are held than `jobs` needs (the implicit slot stays).
  void ReleaseTo(size_t jobs);

 private:
  explicit JobserverClient(int fd) : fd_(fd) {}
  bool WriteToken(char token);

  int fd_;
  std::string tokens_;  // the bytes read, given back last-in first-out
};

// What ninja's RunBuild does before building: unless -j or -n was given, looks at `makeflags`
// (getenv("MAKEFLAGS")), reports the outcome through `status` as ninja 1.13 words it, and returns
// the client to use, or nullptr to build with the local -j.
std::unique_ptr<JobserverClient> SetUpJobserver(const BuildConfig& config, const char* makeflags, Status* status);

}  // namespace headroom
