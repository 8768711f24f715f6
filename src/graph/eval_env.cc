// EvalString evaluation and BindingEnv scope lookup (including ninja's binding-less-edge lookup order).
#include "headroom/graph/eval_env.h"

#include <array>
#include <algorithm>

namespace headroom {

void EvalString::AddText(std::string_view text) {
  if (!pieces_.empty() && pieces_.back().second == PieceKind::kText)
    pieces_.back().first.append(text);
  else
    pieces_.emplace_back(std::string(text), PieceKind::kText);
}

void EvalString::AddSpecial(std::string_view name) { pieces_.emplace_back(std::string(name), PieceKind::kVariable); }

std::string EvalString::Evaluate(Env* env) const {
  if (pieces_.size() == 1 && pieces_[0].second == PieceKind::kText) return pieces_[0].first;
  std::string result;
  for (const auto& [text, kind] : pieces_) {
    if (kind == PieceKind::kText)
      result.append(text);
    else
      result.append(env->LookupVariable(text));
  }
  return result;
}

std::string EvalString::Serialize() const {
  std::string result;
  for (const auto& [text, kind] : pieces_) {
    result.push_back('[');
    if (kind == PieceKind::kVariable) result.push_back('$');
    result.append(text);
    result.push_back(']');
  }
  return result;
}

std::string EvalString::Unparse() const {
  std::string result;
  for (const auto& [text, kind] : pieces_) {
    if (kind == PieceKind::kVariable) {
      result.append("${").append(text).append("}");
    } else {
      // Literal text is printed as it reads, like ninja's `-t rules -d` shows it.
      result.append(text);
    }
  }
  return result;
}

bool EvalString::IsLiteral() const {
  return std::none_of(pieces_.begin(), pieces_.end(), [](const auto& p) { return p.second == PieceKind::kVariable; });
}

const EvalString* Rule::GetBinding(const std::string& key) const {
  auto it = bindings_.find(key);
  return it == bindings_.end() ? nullptr : &it->second;
}

bool Rule::IsReservedBinding(std::string_view key) {
  static constexpr std::array<std::string_view, 11> kReserved = {
      "command", "depfile", "dyndep",  "description", "deps", "generator", "pool",
      "restat",  "rspfile", "rspfile_content", "msvc_deps_prefix"};
  return std::find(kReserved.begin(), kReserved.end(), key) != kReserved.end();
}

std::string BindingEnv::LookupVariable(const std::string& var) {
  for (BindingEnv* scope = this; scope; scope = scope->parent_) {
    auto it = scope->bindings_.find(var);
    if (it != scope->bindings_.end()) return it->second;
  }
  return {};
}

void BindingEnv::AddBinding(const std::string& key, const std::string& value) { bindings_[key] = value; }

void BindingEnv::AddRule(std::unique_ptr<Rule> rule) {
  rules_[rule->name()] = rule.get();
  owned_rules_.push_back(std::move(rule));
}

void BindingEnv::AddBuiltinRule(const Rule* rule) { rules_[rule->name()] = rule; }

const Rule* BindingEnv::LookupRuleCurrentScope(const std::string& name) const {
  auto it = rules_.find(name);
  return it == rules_.end() ? nullptr : it->second;
}

const Rule* BindingEnv::LookupRule(const std::string& name) const {
  for (const BindingEnv* scope = this; scope; scope = scope->parent_) {
    if (const Rule* rule = scope->LookupRuleCurrentScope(name)) return rule;
  }
  return nullptr;
}

std::string BindingEnv::LookupWithFallback(const std::string& var, const EvalString* rule_value, Env* edge_env) {
  // An edge with bindings has its own scope, so its bindings beat the rule's. An edge without
  // bindings shares the file scope, which is therefore consulted before the rule (ninja #1516).
  auto it = bindings_.find(var);
  if (it != bindings_.end()) return it->second;
  if (rule_value) return rule_value->Evaluate(edge_env);
  if (parent_) return parent_->LookupVariable(var);
  return {};
}

}  // namespace headroom
