// Variable scopes and unevaluated strings of the manifest language: EvalString, Rule, BindingEnv.
// Lookup order and the binding-less-edge quirk of ninja are encoded in BindingEnv::LookupWithFallback.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace headroom {

// Anything that can answer "what is $var?".
class Env {
 public:
  virtual ~Env() = default;
  virtual std::string LookupVariable(const std::string& var) = 0;
};

// A string as written in the manifest: literal runs and $variable references, evaluated later.
class EvalString {
 public:
  // Appends literal text; adjacent literal runs are merged so a plain value is one piece.
  void AddText(std::string_view text);
  // Appends a reference to the variable `name`.
  void AddSpecial(std::string_view name);
  void Clear() { pieces_.clear(); }
  bool empty() const { return pieces_.empty(); }

  std::string Evaluate(Env* env) const;
  // Debug form used by tests: "[literal][$var]".
  std::string Serialize() const;
  // The text as tools print a binding: literals as they read, variables as ${name}.
  std::string Unparse() const;
  // True when the string holds no variable references.
  bool IsLiteral() const;

 private:
  enum class PieceKind { kText, kVariable };
  std::vector<std::pair<std::string, PieceKind>> pieces_;
};

// A `rule` block: a name and lazily evaluated bindings.
class Rule {
 public:
  explicit Rule(std::string name) : name_(std::move(name)) {}
  const std::string& name() const { return name_; }
  void AddBinding(const std::string& key, const EvalString& value) { bindings_[key] = value; }
  const EvalString* GetBinding(const std::string& key) const;
  const std::map<std::string, EvalString>& bindings() const { return bindings_; }
  // The keys a rule may define (command, depfile, deps, dyndep, description, generator, pool,
  // restat, rspfile, rspfile_content, msvc_deps_prefix).
  static bool IsReservedBinding(std::string_view key);

 private:
  std::string name_;
  std::map<std::string, EvalString> bindings_;
};

// A scope: the top-level file, a subninja, or one build edge with its own bindings.
class BindingEnv : public Env {
 public:
  BindingEnv() = default;
  explicit BindingEnv(BindingEnv* parent) : parent_(parent) {}

  std::string LookupVariable(const std::string& var) override;
  void AddBinding(const std::string& key, const std::string& value);

  void AddRule(std::unique_ptr<Rule> rule);
  // Registers a rule owned elsewhere (the built-in `phony`).
  void AddBuiltinRule(const Rule* rule);
  // Searches this scope and its parents.
  const Rule* LookupRule(const std::string& name) const;
  // Searches only this scope (duplicate-rule detection).
  const Rule* LookupRuleCurrentScope(const std::string& name) const;
  const std::map<std::string, const Rule*>& rules() const { return rules_; }
  BindingEnv* parent() const { return parent_; }

  // Looks `var` up in this scope's own bindings; if absent evaluates `rule_value` (the rule's
  // binding) in `edge_env`; if there is none, asks the parent scope.
  std::string LookupWithFallback(const std::string& var, const EvalString* rule_value, Env* edge_env);

 private:
  std::map<std::string, std::string> bindings_;
  std::map<std::string, const Rule*> rules_;
  std::vector<std::unique_ptr<Rule>> owned_rules_;
  BindingEnv* parent_ = nullptr;
};

}  // namespace headroom
