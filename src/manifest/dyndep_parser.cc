// Parser of dyndep files (ninja 1.10+ format) into a DyndepFile: per edge, extra implicit ins/outs and restat.
#include "headroom/manifest/dyndep_parser.h"

#include "headroom/manifest/version.h"
#include "headroom/util/disk.h"
#include "headroom/util/path.h"

namespace headroom {

namespace {

constexpr char kExpectedVersion[] = "expected 'ninja_dyndep_version = ...'";

}  // namespace

DyndepParser::DyndepParser(State* state, DiskInterface* disk, DyndepFile* dyndep_file)
    : state_(state), disk_(disk), dyndep_file_(dyndep_file) {}

bool DyndepParser::Load(const std::string& filename, std::string* err) {
  std::string contents;
  std::string read_err;
  if (disk_->ReadFile(filename, &contents, &read_err) != DiskInterface::ReadStatus::kOkay) {
    *err = "loading '" + filename + "': " + read_err;
    return false;
  }
  return Parse(filename, contents, err);
}

bool DyndepParser::ParseTest(const std::string& input, std::string* err) {
  test_input_ = input;
  return Parse("input", test_input_, err);
}

bool DyndepParser::Parse(const std::string& filename, const std::string& contents, std::string* err) {
  lexer_.Start(filename, contents);
  bool have_version = false;
  for (;;) {
    const Lexer::Token token = lexer_.ReadToken();
    switch (token) {
      case Lexer::Token::kBuild:
        if (!have_version) return lexer_.Error(kExpectedVersion, err);
        if (!ParseEdge(err)) return false;
        break;
      case Lexer::Token::kIdent:
        lexer_.UnreadToken();
        // The version line must come first and only once; no other variables exist in dyndep files.
        if (have_version) return lexer_.Error(std::string("unexpected ") + Lexer::TokenName(token), err);
        if (!ParseDyndepVersion(err)) return false;
        have_version = true;
        break;
      case Lexer::Token::kError: return lexer_.Error(lexer_.DescribeLastError(), err);
      case Lexer::Token::kEof:
        if (!have_version) return lexer_.Error(kExpectedVersion, err);
        return true;
      case Lexer::Token::kNewline: break;
      default: return lexer_.Error(std::string("unexpected ") + Lexer::TokenName(token), err);
    }
  }
}

bool DyndepParser::ExpectToken(Lexer::Token expected, std::string* err) {
  const Lexer::Token token = lexer_.ReadToken();
  if (token == expected) return true;
  return lexer_.Error(std::string("expected ") + Lexer::TokenName(expected) + ", got " + Lexer::TokenName(token) +
                          Lexer::TokenErrorHint(expected),
                      err);
}

bool DyndepParser::ParseLet(std::string_view* key, LexedString* value, std::string* err) {
  if (!lexer_.ReadIdent(key)) return lexer_.Error("expected variable name", err);
  if (!ExpectToken(Lexer::Token::kEquals, err)) return false;
  value->Clear();
  return lexer_.ReadValue(value, err);
}

bool DyndepParser::ParseDyndepVersion(std::string* err) {
  std::string_view name;
  LexedString value;
  if (!ParseLet(&name, &value, err)) return false;
  if (name != "ninja_dyndep_version") return lexer_.Error(kExpectedVersion, err);
  std::string version;
  value.Evaluate(&env_, &version);
  int major, minor;
  ParseVersion(version, &major, &minor);
  // Only 1.0 exists; suffixes such as "1.0-foo" read as 1.0 and are accepted.
  if (major != 1 || minor != 0)
    return lexer_.Error("unsupported 'ninja_dyndep_version = " + version + "'", err);
  return true;
}

bool DyndepParser::ReadPathList(std::vector<LexedString>* list, std::string* err) {
  for (;;) {
    LexedString path;
    if (!lexer_.ReadPath(&path, err)) return false;
    if (path.empty()) return true;
    list->push_back(std::move(path));
  }
}

bool DyndepParser::ParseEdgeOutput(Dyndeps** dyndeps, std::string* err) {
  LexedString out;
  if (!lexer_.ReadPath(&out, err)) return false;
  if (out.empty()) return lexer_.Error("expected path", err);
  std::string path;
  out.Evaluate(&env_, &path);
  if (path.empty()) return lexer_.Error("empty path", err);
  std::string unused_err;
  CanonicalizePath(&path, &unused_err);
  // The statement must describe an edge the manifest already has.
  Node* node = state_->LookupNode(path);
  if (!node || !node->in_edge) return lexer_.Error("no build statement exists for '" + path + "'", err);
  auto [it, inserted] = dyndep_file_->try_emplace(node->in_edge);
  if (!inserted) return lexer_.Error("multiple statements for '" + path + "'", err);
  *dyndeps = &it->second;
  return true;
}

bool DyndepParser::ParseEdge(std::string* err) {
  Dyndeps* dyndeps = nullptr;
  if (!ParseEdgeOutput(&dyndeps, err)) return false;

  LexedString extra;
  if (!lexer_.ReadPath(&extra, err)) return false;
  if (!extra.empty()) return lexer_.Error("explicit outputs not supported", err);

  std::vector<LexedString> outs;
  if (lexer_.PeekToken(Lexer::Token::kPipe) && !ReadPathList(&outs, err)) return false;
  if (!ExpectToken(Lexer::Token::kColon, err)) return false;

  std::string_view rule_name;
  if (!lexer_.ReadIdent(&rule_name) || rule_name != "dyndep")
    return lexer_.Error("expected build command name 'dyndep'", err);

  if (!lexer_.ReadPath(&extra, err)) return false;
  if (!extra.empty()) return lexer_.Error("explicit inputs not supported", err);

  std::vector<LexedString> ins;
  if (lexer_.PeekToken(Lexer::Token::kPipe) && !ReadPathList(&ins, err)) return false;
  if (lexer_.PeekToken(Lexer::Token::kPipe2)) return lexer_.Error("order-only inputs not supported", err);
  if (!ExpectToken(Lexer::Token::kNewline, err)) return false;
  if (!ParseRestatBinding(dyndeps, err)) return false;

  if (!AddNodes(ins, &dyndeps->implicit_inputs, err)) return false;
  return AddNodes(outs, &dyndeps->implicit_outputs, err);
}

bool DyndepParser::ParseRestatBinding(Dyndeps* dyndeps, std::string* err) {
  if (!lexer_.PeekToken(Lexer::Token::kIndent)) return true;
  std::string_view key;
  LexedString value;
  if (!ParseLet(&key, &value, err)) return false;
  if (key != "restat") return lexer_.Error("binding is not 'restat'", err);
  std::string restat;
  value.Evaluate(&env_, &restat);
  dyndeps->restat = !restat.empty();
  return true;
}

bool DyndepParser::AddNodes(const std::vector<LexedString>& paths, std::vector<Node*>* nodes, std::string* err) {
  nodes->reserve(nodes->size() + paths.size());
  std::string path;
  for (const LexedString& lexed : paths) {
    lexed.Evaluate(&env_, &path);
    if (path.empty()) return lexer_.Error("empty path", err);
    std::string unused_err;
    CanonicalizePath(&path, &unused_err);
    nodes->push_back(state_->GetNode(path));
  }
  return true;
}

}  // namespace headroom
