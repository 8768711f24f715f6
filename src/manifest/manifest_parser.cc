// The build.ninja parser: statements, scopes (include/subninja), edge construction and its checks.
// Evaluation order and error positions follow ninja 1.13.2 because generators' test suites compare them.
#include "headroom/manifest/manifest_parser.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>

#include "headroom/manifest/version.h"
#include "headroom/util/disk.h"
#include "headroom/util/messages.h"
#include "headroom/util/path.h"

namespace headroom {

namespace {

// A pool's depth as ninja 1.13.2 reads it: a leading decimal number ("abc" is 0, "12x" is 12), saturated to
// the range of long, then stored in an int, keeping the low 32 bits. So 2147483648 and 4294967295 become
// negative (ninja reports "invalid pool depth"), and 4294967296 becomes 0, an unlimited pool.
int PoolDepthAsNinjaReadsIt(const std::string& value) {
  const long read = std::strtol(value.c_str(), nullptr, 10);  // saturates at LONG_MIN / LONG_MAX
  return static_cast<int>(static_cast<uint32_t>(read));        // both conversions are modulo 2^32 (C++20)
}

// True when CanonicalizePath would return `path` unchanged: no empty or "." components, and ".." only
// as a leading run of a relative path (CanonicalizePath keeps those). Nearly every manifest path passes,
// and this scan is far cheaper than canonicalising.
bool IsObviouslyCanonical(std::string_view path) {
  const bool absolute = !path.empty() && path[0] == '/';
  bool leading_parents_allowed = !absolute;
  size_t component_start = absolute ? 1 : 0;
  for (;;) {
    const size_t slash = path.find('/', component_start);
    const size_t end = slash == std::string_view::npos ? path.size() : slash;
    const size_t length = end - component_start;
    if (length == 0) return false;
    if (path[component_start] == '.') {
      if (length == 1) return false;
      if (length == 2 && path[component_start + 1] == '.') {
        if (!leading_parents_allowed) return false;
      } else {
        leading_parents_allowed = false;
      }
    } else {
      leading_parents_allowed = false;
    }
    if (end == path.size()) return true;
    component_start = end + 1;
  }
}

void Canonicalize(std::string* path) {
  if (IsObviouslyCanonical(*path)) return;
  std::string unused_err;  // only an empty path fails, and callers reject those first
  CanonicalizePath(path, &unused_err);
}

// A rule binding that is missing or evaluates to nothing counts as absent (`command =` is no command).
bool HasBinding(const Rule& rule, const std::string& key) {
  const EvalString* value = rule.GetBinding(key);
  return value && !value->empty();
}

}  // namespace

ManifestParser::ManifestParser(State* state, DiskInterface* disk, ManifestParserOptions options)
    : state_(state), disk_(disk), options_(options) {}

bool ManifestParser::Load(const std::string& filename, std::string* err) {
  std::string contents;
  std::string read_err;
  if (disk_->ReadFile(filename, &contents, &read_err) != DiskInterface::ReadStatus::kOkay) {
    *err = "loading '" + filename + "': " + read_err;
    return false;
  }
  return Parse(filename, contents, err);
}

bool ManifestParser::ParseTest(const std::string& input, std::string* err) {
  test_input_ = input;
  return Parse("input", test_input_, err);
}

bool ManifestParser::Parse(const std::string& filename, const std::string& contents, std::string* err) {
  return ParseFile(filename, contents, &state_->bindings, err);
}

bool ManifestParser::ParseFile(const std::string& filename, const std::string& contents, BindingEnv* env,
                               std::string* err) {
  // Files nest (include/subninja), so the including file's lexer and scope come back afterwards.
  Lexer lexer(filename, contents);
  Lexer* const outer_lexer = lexer_;
  BindingEnv* const outer_env = env_;
  lexer_ = &lexer;
  env_ = env;
  const bool ok = ParseStatements(err);
  lexer_ = outer_lexer;
  env_ = outer_env;
  return ok;
}

bool ManifestParser::ParseStatements(std::string* err) {
  for (;;) {
    const Lexer::Token token = lexer_->ReadToken();
    bool ok = true;
    switch (token) {
      case Lexer::Token::kPool: ok = ParsePool(err); break;
      case Lexer::Token::kBuild: ok = ParseEdge(err); break;
      case Lexer::Token::kRule: ok = ParseRule(err); break;
      case Lexer::Token::kDefault: ok = ParseDefault(err); break;
      case Lexer::Token::kIdent:
        lexer_->UnreadToken();
        ok = ParseTopLevelLet(err);
        break;
      case Lexer::Token::kInclude: ok = ParseFileInclude(false, err); break;
      case Lexer::Token::kSubninja: ok = ParseFileInclude(true, err); break;
      case Lexer::Token::kError: return lexer_->Error(lexer_->DescribeLastError(), err);
      case Lexer::Token::kEof: return true;
      case Lexer::Token::kNewline: break;
      default: return lexer_->Error(std::string("unexpected ") + Lexer::TokenName(token), err);
    }
    if (!ok) return false;
  }
}

bool ManifestParser::ExpectToken(Lexer::Token expected, std::string* err) {
  const Lexer::Token token = lexer_->ReadToken();
  if (token == expected) return true;
  return lexer_->Error(std::string("expected ") + Lexer::TokenName(expected) + ", got " + Lexer::TokenName(token) +
                           Lexer::TokenErrorHint(expected),
                       err);
}

bool ManifestParser::ParseLet(std::string_view* name, LexedString* value, std::string* err) {
  if (!lexer_->ReadIdent(name)) return lexer_->Error("expected variable name", err);
  if (!ExpectToken(Lexer::Token::kEquals, err)) return false;
  value->Clear();
  return lexer_->ReadValue(value, err);
}

bool ManifestParser::ParseTopLevelLet(std::string* err) {
  std::string_view name;
  if (!ParseLet(&name, &value_, err)) return false;
  // File-level variables are evaluated at once, so later redefinitions do not affect earlier uses.
  std::string value;
  value_.Evaluate(env_, &value);
  if (name == "ninja_required_version") CheckNinjaVersion(value);
  env_->AddBinding(std::string(name), value);
  return true;
}

bool ManifestParser::ParseRule(std::string* err) {
  std::string_view name;
  if (!lexer_->ReadIdent(&name)) return lexer_->Error("expected rule name", err);
  if (!ExpectToken(Lexer::Token::kNewline, err)) return false;
  std::string rule_name(name);
  if (env_->LookupRuleCurrentScope(rule_name)) return lexer_->Error("duplicate rule '" + rule_name + "'", err);

  auto rule = std::make_unique<Rule>(rule_name);
  while (lexer_->PeekToken(Lexer::Token::kIndent)) {
    std::string_view key;
    if (!ParseLet(&key, &value_, err)) return false;
    if (!Rule::IsReservedBinding(key)) return lexer_->Error("unexpected variable '" + std::string(key) + "'", err);
    rule->AddBinding(std::string(key), value_.ToEvalString());
  }
  if (HasBinding(*rule, "rspfile") != HasBinding(*rule, "rspfile_content"))
    return lexer_->Error("rspfile and rspfile_content need to be both specified", err);
  if (!HasBinding(*rule, "command")) return lexer_->Error("expected 'command =' line", err);
  env_->AddRule(std::move(rule));
  return true;
}

bool ManifestParser::ParsePool(std::string* err) {
  std::string_view name;
  if (!lexer_->ReadIdent(&name)) return lexer_->Error("expected pool name", err);
  if (!ExpectToken(Lexer::Token::kNewline, err)) return false;
  std::string pool_name(name);
  // Pools are global (not scoped) and `console` is predefined.
  if (state_->LookupPool(pool_name)) return lexer_->Error("duplicate pool '" + pool_name + "'", err);

  int depth = -1;
  while (lexer_->PeekToken(Lexer::Token::kIndent)) {
    std::string_view key;
    if (!ParseLet(&key, &value_, err)) return false;
    if (key != "depth") return lexer_->Error("unexpected variable '" + std::string(key) + "'", err);
    std::string value;
    value_.Evaluate(env_, &value);
    depth = PoolDepthAsNinjaReadsIt(value);
    if (depth < 0) return lexer_->Error("invalid pool depth", err);
  }
  if (depth < 0) return lexer_->Error("expected 'depth =' line", err);
  state_->AddPool(std::make_unique<Pool>(pool_name, depth));
  return true;
}

bool ManifestParser::ParseDefault(std::string* err) {
  value_.Clear();
  if (!lexer_->ReadPath(&value_, err)) return false;
  if (value_.empty()) return lexer_->Error("expected target name", err);
  do {
    if (!EvaluatePath(value_, env_, err)) return false;
    std::string default_err;
    if (!state_->AddDefault(path_, &default_err)) return lexer_->Error(default_err, err);
    value_.Clear();
    if (!lexer_->ReadPath(&value_, err)) return false;
  } while (!value_.empty());
  return ExpectToken(Lexer::Token::kNewline, err);
}

bool ManifestParser::ParseFileInclude(bool new_scope, std::string* err) {
  value_.Clear();
  if (!lexer_->ReadPath(&value_, err)) return false;
  // Included paths are relative to the working directory, not to the including file.
  std::string path;
  value_.Evaluate(env_, &path);

  std::string contents;
  std::string read_err;
  if (disk_->ReadFile(path, &contents, &read_err) != DiskInterface::ReadStatus::kOkay)
    return lexer_->Error("loading '" + path + "': " + read_err, err);

  // subninja gets a child scope (its rules and variables stay private); include shares ours.
  BindingEnv* child_env = new_scope ? state_->NewScope(env_) : env_;
  if (!ParseFile(path, contents, child_env, err)) return false;
  return ExpectToken(Lexer::Token::kNewline, err);
}

bool ManifestParser::ReadPathList(LexedStringList* list, std::string* err) {
  for (;;) {
    LexedString* path = list->Append();
    if (!lexer_->ReadPath(path, err)) return false;
    if (path->empty()) {
      list->PopBack();
      return true;
    }
  }
}

bool ManifestParser::ParseEdge(std::string* err) {
  outs_.Clear();
  ins_.Clear();
  validations_.Clear();

  if (!ReadPathList(&outs_, err)) return false;
  const size_t explicit_outs = outs_.size();
  if (lexer_->PeekToken(Lexer::Token::kPipe) && !ReadPathList(&outs_, err)) return false;
  const int implicit_outs = static_cast<int>(outs_.size() - explicit_outs);
  if (outs_.empty()) return lexer_->Error("expected path", err);

  if (!ExpectToken(Lexer::Token::kColon, err)) return false;
  std::string_view rule_name;
  if (!lexer_->ReadIdent(&rule_name)) return lexer_->Error("expected build command name", err);
  scratch_.assign(rule_name);
  const Rule* rule = env_->LookupRule(scratch_);
  if (!rule) return lexer_->Error("unknown build rule '" + scratch_ + "'", err);

  if (!ReadPathList(&ins_, err)) return false;
  const size_t explicit_ins = ins_.size();
  if (lexer_->PeekToken(Lexer::Token::kPipe) && !ReadPathList(&ins_, err)) return false;
  const int implicit_ins = static_cast<int>(ins_.size() - explicit_ins);
  if (lexer_->PeekToken(Lexer::Token::kPipe2) && !ReadPathList(&ins_, err)) return false;
  const int order_only_ins = static_cast<int>(ins_.size() - explicit_ins) - implicit_ins;
  if (lexer_->PeekToken(Lexer::Token::kPipeAt) && !ReadPathList(&validations_, err)) return false;
  if (!ExpectToken(Lexer::Token::kNewline, err)) return false;

  BindingEnv* env = nullptr;
  if (!ReadEdgeBindings(&env, err)) return false;

  Edge* edge = state_->AddEdge(rule);
  edge->env = env;
  if (!ResolveEdgePool(edge, err)) return false;
  if (!AddEdgeOutputs(edge, env, err)) return false;
  edge->implicit_outs = implicit_outs;
  if (!AddEdgeInputs(edge, env, err)) return false;
  edge->implicit_deps = implicit_ins;
  edge->order_only_deps = order_only_ins;
  DropPhonySelfReference(edge);
  return BindDyndep(edge, err);
}

bool ManifestParser::ReadEdgeBindings(BindingEnv** edge_env, std::string* err) {
  bool has_binding = lexer_->PeekToken(Lexer::Token::kIndent);
  // Only an edge with bindings gets a scope of its own. A binding-less edge shares the file scope, which
  // then shadows rule bindings (ninja #1516) -- BindingEnv::LookupWithFallback depends on this.
  *edge_env = has_binding ? state_->NewScope(env_) : env_;
  while (has_binding) {
    std::string_view key;
    if (!ParseLet(&key, &value_, err)) return false;
    // Edge bindings are evaluated now, in the enclosing file scope: they cannot see each other or $in/$out.
    std::string value;
    value_.Evaluate(env_, &value);
    (*edge_env)->AddBinding(std::string(key), value);
    has_binding = lexer_->PeekToken(Lexer::Token::kIndent);
  }
  return true;
}

bool ManifestParser::ResolveEdgePool(Edge* edge, std::string* err) {
  const std::string pool_name = edge->GetBinding("pool");
  if (pool_name.empty()) return true;
  Pool* pool = state_->LookupPool(pool_name);
  if (!pool) return lexer_->Error("unknown pool name '" + pool_name + "'", err);
  edge->pool = pool;
  return true;
}

bool ManifestParser::EvaluatePath(const LexedString& path, BindingEnv* env, std::string* err) {
  path.Evaluate(env, &path_);
  if (path_.empty()) return lexer_->Error("empty path", err);
  Canonicalize(&path_);
  return true;
}

bool ManifestParser::AddEdgeOutputs(Edge* edge, BindingEnv* env, std::string* err) {
  edge->outputs.reserve(outs_.size());
  for (size_t i = 0; i < outs_.size(); ++i) {
    if (!EvaluatePath(outs_[i], env, err)) return false;
    std::string out_err;
    if (!state_->AddOut(edge, path_, &out_err)) return lexer_->Error(out_err, err);
  }
  return true;
}

bool ManifestParser::AddEdgeInputs(Edge* edge, BindingEnv* env, std::string* err) {
  edge->inputs.reserve(ins_.size());
  for (size_t i = 0; i < ins_.size(); ++i) {
    if (!EvaluatePath(ins_[i], env, err)) return false;
    state_->AddIn(edge, path_);
  }
  for (size_t i = 0; i < validations_.size(); ++i) {
    if (!EvaluatePath(validations_[i], env, err)) return false;
    state_->AddValidation(edge, path_);
  }
  return true;
}

void ManifestParser::DropPhonySelfReference(Edge* edge) {
  // CMake 2.8.12/3.0 wrote `build a: phony a`; ninja tolerates it by ignoring the self-input unless
  // -w phonycycle=err asks for the cycle to be reported. The node keeps the edge among its out_edges,
  // exactly as ninja does (so `a` is no longer a root).
  if (options_.phony_cycle_action != PhonyCycleAction::kWarn || !edge->maybe_phonycycle_diagnostic()) return;
  Node* out = edge->outputs[0];
  std::vector<Node*> kept;
  kept.reserve(edge->inputs.size());
  int removed_order_only = 0;
  for (size_t i = 0; i < edge->inputs.size(); ++i) {
    if (edge->inputs[i] != out) {
      kept.push_back(edge->inputs[i]);
    } else if (edge->is_order_only(i)) {
      ++removed_order_only;  // keep the counts consistent with the shortened list
    }
  }
  if (kept.size() == edge->inputs.size()) return;
  edge->inputs.swap(kept);
  edge->order_only_deps -= removed_order_only;
  if (!options_.quiet)
    Warning("phony target '{}' names itself as an input; ignoring [-w phonycycle=warn]", out->path);
}

bool ManifestParser::BindDyndep(Edge* edge, std::string* err) {
  std::string dyndep = edge->GetUnescapedDyndep();
  if (dyndep.empty()) return true;
  Canonicalize(&dyndep);
  Node* node = state_->GetNode(dyndep);
  edge->dyndep = node;
  node->dyndep_pending = true;
  if (std::find(edge->inputs.begin(), edge->inputs.end(), node) == edge->inputs.end())
    return lexer_->Error("dyndep '" + dyndep + "' is not an input", err);
  return true;
}

}  // namespace headroom
