// The build ledger's record text: one entry's line (percent-encoded strings, key=value figures, an FNV-1a checksum
// against torn reads), formatted and parsed; build_ledger.cc owns the files it lives in (docs/build-ledger.md).
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "headroom/memory/build_ledger.h"
#include "headroom/util/digits.h"

namespace headroom {
namespace {

constexpr std::string_view kLedgerMagic = "headroom-ledger";
constexpr int kFormatVersion = 1;
constexpr pid_t kMaxPid = 1 << 22;  // PID_MAX_LIMIT on 64-bit Linux

bool NeedsEscape(unsigned char c) { return c <= ' ' || c >= 0x7f || c == '%' || c == '='; }

std::string PercentEncode(std::string_view text) {
  std::string out;
  for (unsigned char c : text) {
    if (NeedsEscape(c)) {
      out += fmt::format("%{:02X}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

bool PercentDecode(std::string_view text, std::string* out) {
  out->clear();
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      *out += text[i];
      continue;
    }
    if (i + 2 >= text.size()) return false;
    uint64_t byte = 0;
    if (!ParseDigits(text.substr(i + 1, 2), 16, 2, &byte)) return false;
    *out += static_cast<char>(byte);
    i += 2;
  }
  return true;
}

// Digits only; a figure too large for 64 bits saturates (it is clamped later anyway).
bool ParseUnsigned(std::string_view text, uint64_t* value) {
  if (text.empty()) return false;
  uint64_t result = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    const uint64_t digit = static_cast<uint64_t>(c - '0');
    result = result > (UINT64_MAX - digit) / 10 ? UINT64_MAX : result * 10 + digit;
  }
  *value = result;
  return true;
}

bool ParseSigned(std::string_view text, int64_t* value) {
  const bool negative = !text.empty() && text[0] == '-';
  uint64_t magnitude = 0;
  if (!ParseUnsigned(negative ? text.substr(1) : text, &magnitude)) return false;
  if (magnitude > static_cast<uint64_t>(INT64_MAX)) return false;
  *value = negative ? -static_cast<int64_t>(magnitude) : static_cast<int64_t>(magnitude);
  return true;
}

// The keys a version-1 record holds; a bit each, so a repeated key is noticed.
enum KeyBit : unsigned {
  kKeyId = 1u << 0,
  kKeyPid = 1u << 1,
  kKeyCgroup = 1u << 2,
  kKeyParentId = 1u << 3,
  kKeyParentJob = 1u << 4,
  kKeyOwed = 1u << 5,
  kKeyUsed = 1u << 6,
  kKeyBudget = 1u << 7,
  kKeyUpdated = 1u << 8,
  kKeyWaiting = 1u << 9,
};

// Applies one key=value pair to *entry. Unknown keys are accepted and ignored (a newer writer's additions).
bool ApplyField(std::string_view key, std::string_view value, LedgerEntry* entry, unsigned* seen, std::string* err) {
  auto mark = [&](KeyBit bit) {
    if (*seen & bit) {
      *err = fmt::format("key '{}' repeated", key);
      return false;
    }
    *seen |= bit;
    return true;
  };
  auto bad_value = [&]() {
    *err = fmt::format("bad value for '{}'", key);
    return false;
  };
  uint64_t number = 0;
  if (key == "id") {
    if (!mark(kKeyId)) return false;
    if (!PercentDecode(value, &entry->id) || entry->id.empty()) return bad_value();
  } else if (key == "pid") {
    if (!mark(kKeyPid)) return false;
    if (!ParseUnsigned(value, &number) || number == 0 || number > static_cast<uint64_t>(kMaxPid)) return bad_value();
    entry->pid = static_cast<pid_t>(number);
  } else if (key == "cgroup") {
    if (!mark(kKeyCgroup)) return false;
    if (!PercentDecode(value, &entry->cgroup)) return bad_value();
  } else if (key == "parent_id") {
    if (!mark(kKeyParentId)) return false;
    if (!PercentDecode(value, &entry->parent_id)) return bad_value();
  } else if (key == "parent_job") {
    if (!mark(kKeyParentJob)) return false;
    if (!ParseSigned(value, &entry->parent_job)) return bad_value();
    entry->parent_job = std::max<int64_t>(entry->parent_job, -1);
  } else if (key == "waiting") {  // optional: entries written before it was added wait for nothing
    if (!mark(kKeyWaiting)) return false;
    if (!ParseUnsigned(value, &number)) return bad_value();
    entry->waiting_bytes = ClampLedgerClaim(number);
  } else if (key == "owed" || key == "used" || key == "budget") {
    if (!mark(key == "owed" ? kKeyOwed : key == "used" ? kKeyUsed : kKeyBudget)) return false;
    if (!ParseUnsigned(value, &number)) return bad_value();  // a negative figure is malformed, not zero
    uint64_t* field = key == "owed" ? &entry->owed_bytes : key == "used" ? &entry->used_bytes : &entry->budget_bytes;
    *field = ClampLedgerClaim(number);
  } else if (key == "updated_ms") {
    if (!mark(kKeyUpdated)) return false;
    if (!ParseUnsigned(value, &number)) return bad_value();
    entry->updated_ms = static_cast<int64_t>(std::min<uint64_t>(number, INT64_MAX));
  }
  return true;
}

// Splits the record's body (magic, version, key=value pairs) and applies each pair.
bool ParseBody(std::string_view body, LedgerEntry* entry, std::string* err) {
  size_t position = 0;
  int index = 0;
  unsigned seen = 0;
  while (position < body.size()) {
    const size_t end = std::min(body.find(' ', position), body.size());
    const std::string_view token = body.substr(position, end - position);
    position = end + 1;
    if (token.empty()) continue;
    const int this_index = index++;
    if (this_index == 0) {
      if (token != kLedgerMagic) {
        *err = "not a headroom ledger record";
        return false;
      }
      continue;
    }
    if (this_index == 1) {
      uint64_t version = 0;
      if (!ParseUnsigned(token, &version) || version < 1) {
        *err = "bad version";
        return false;
      }
      continue;
    }
    const size_t equals = token.find('=');
    if (equals == std::string_view::npos) {
      *err = fmt::format("'{}' is not key=value", token.substr(0, 40));
      return false;
    }
    if (!ApplyField(token.substr(0, equals), token.substr(equals + 1), entry, &seen, err)) return false;
  }
  constexpr unsigned kRequired = kKeyId | kKeyPid | kKeyOwed;
  if ((seen & kRequired) != kRequired) {
    *err = index < 2 ? "truncated record" : "id, pid or owed missing";
    return false;
  }
  return true;
}

}  // namespace

uint64_t LedgerRecordChecksum(std::string_view body) {
  uint64_t hash = 0xcbf29ce484222325ull;  // FNV-1a 64 offset basis
  for (unsigned char c : body) {
    hash ^= c;
    hash *= 0x100000001b3ull;  // FNV-1a 64 prime
  }
  return hash;
}

std::string FormatLedgerRecord(const LedgerEntry& entry) {
  const std::string body = fmt::format(
      "{} {} id={} pid={} cgroup={} parent_id={} parent_job={} owed={} used={} budget={} updated_ms={} waiting={}",
      kLedgerMagic, kFormatVersion, PercentEncode(entry.id), entry.pid, PercentEncode(entry.cgroup),
      PercentEncode(entry.parent_id), std::max<int64_t>(entry.parent_job, -1), ClampLedgerClaim(entry.owed_bytes),
      ClampLedgerClaim(entry.used_bytes), ClampLedgerClaim(entry.budget_bytes), std::max<int64_t>(entry.updated_ms, 0),
      ClampLedgerClaim(entry.waiting_bytes));
  return fmt::format("{} sum={:016x}", body, LedgerRecordChecksum(body));
}

bool ParseLedgerRecord(std::string_view text, LedgerEntry* entry, std::string* err) {
  std::string_view line = text.substr(0, std::min(text.find('\n'), text.size()));
  while (!line.empty() && line.back() == ' ') line.remove_suffix(1);
  const size_t sum_at = line.rfind(" sum=");
  if (sum_at == std::string_view::npos) {
    *err = "no checksum (truncated?)";
    return false;
  }
  const std::string_view body = line.substr(0, sum_at);
  const std::string_view sum_text = line.substr(sum_at + 5);
  if (sum_text.size() != 16 || sum_text != fmt::format("{:016x}", LedgerRecordChecksum(body))) {
    *err = "checksum mismatch (torn or damaged)";
    return false;
  }
  LedgerEntry parsed;
  parsed.uid = entry->uid;
  if (!ParseBody(body, &parsed, err)) return false;
  *entry = std::move(parsed);
  return true;
}

}  // namespace headroom
