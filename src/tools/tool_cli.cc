// CLI11 for headroom's own `-t` tools: ninja-style help ("usage: ninja -t NAME ...") and errors
// ("ninja: error: ..."), getopt's long-option abbreviations, and the number checks their options share.
#include "headroom/tools/tool_cli.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "headroom/util/messages.h"

namespace headroom {
namespace {

// "-t history export", the words a user types to reach `app`.
std::string CommandPath(const CLI::App* app) {
  std::string path = app->get_name();
  for (const CLI::App* parent = app->get_parent(); parent; parent = parent->get_parent()) {
    path = parent->get_name() + " " + path;
  }
  return "ninja -t " + path;
}

// An option as a user writes it: "-j N", "--mem-budget=SIZE", "--json", "-h, --help".
std::string OptionSpelling(const CLI::Option* option) {
  std::string names = option->get_name(false, true);  // "-h,--help"
  for (size_t comma = names.find(','); comma != std::string::npos; comma = names.find(',', comma + 2)) {
    names.insert(comma + 1, " ");
  }
  const std::string value = option->get_type_size() == 0 ? "" : option->get_type_name();
  if (value.empty()) return names;
  return names + (option->get_lnames().empty() ? " " : "=") + value;
}

// Help in the style of ninja's tools: the usage line first, then what the tool does, its options, its commands.
class ToolHelpFormatter : public CLI::Formatter {
 public:
  ToolHelpFormatter() { column_width(24); }

  std::string make_help(const CLI::App* app, std::string, CLI::AppFormatMode) const override {
    std::ostringstream out;
    out << "usage: " << CommandPath(app) << Synopsis(app) << "\n";
    if (!app->get_description().empty()) out << "\n" << app->get_description() << "\n";
    const std::vector<const CLI::App*> commands = app->get_subcommands({});
    if (!commands.empty()) {
      out << "\ncommands:\n";
      for (const CLI::App* command : commands) out << make_subcommand(command);
    }
    out << "\noptions:\n";
    for (const CLI::Option* option : app->get_options([](const CLI::Option* o) { return o->nonpositional(); })) {
      CLI::detail::format_help(out, OptionSpelling(option), option->get_description(), column_width_);
    }
    return out.str();
  }

  std::string make_subcommand(const CLI::App* command) const override {
    std::ostringstream out;
    CLI::detail::format_help(out, command->get_name() + Operands(command), command->get_description(), column_width_);
    return out.str();
  }

 private:
  // " FILE", " [targets...]": the operands as the usage line shows them.
  static std::string Operands(const CLI::App* app) {
    std::string text;
    for (const CLI::Option* operand : app->get_options([](const CLI::Option* o) { return o->get_positional(); })) {
      std::string name = operand->get_name(true, false);
      if (operand->get_expected_max() > 1) name += "...";
      text += " " + (operand->get_required() ? name : "[" + name + "]");
    }
    return text;
  }

  static std::string Synopsis(const CLI::App* app) {
    const bool has_options = app->get_options([app](const CLI::Option* o) {
      return o->nonpositional() && o != app->get_help_ptr();
    }).size() > 0;
    std::string text = has_options ? " [options]" : "";
    std::vector<const CLI::App*> commands = app->get_subcommands({});
    for (size_t i = 0; i < commands.size(); ++i) {
      text += (i == 0 ? " " : " | ") + commands[i]->get_name() + Operands(commands[i]);
    }
    return text + Operands(app);
  }
};

// CLI11's messages start with a capital ("The following argument was not expected"); ninja's errors do not. A
// name in capitals ("FILE is required") stays as it is.
std::string NinjaStyle(std::string message) {
  const size_t word_end = std::min(message.find(' '), message.size());
  const bool capitalised_word = std::none_of(message.begin() + (word_end > 0 ? 1 : 0), message.begin() + word_end,
                                             [](char c) { return std::isupper(static_cast<unsigned char>(c)); });
  if (word_end > 0 && capitalised_word) {
    message[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(message[0])));
  }
  return message;
}

// "history import": the tool and the commands given to it, as far as the parse got.
std::string CommandsGiven(const CLI::App& app) {
  std::string words = app.get_name();
  for (const CLI::App* at = &app; !at->get_subcommands().empty();) {
    at = at->get_subcommands().front();
    words += " " + at->get_name();
  }
  return words;
}

// The long options of `app` and of its commands, without their dashes.
void CollectLongNames(const CLI::App* app, std::vector<std::string>* names) {
  for (const CLI::Option* option : app->get_options({})) {
    for (const std::string& name : option->get_lnames()) names->push_back(name);
  }
  for (const CLI::App* command : app->get_subcommands({})) CollectLongNames(command, names);
}

// "--mem=1G" -> "--mem-budget=1G" when exactly one long option starts with "mem" (getopt_long's rule, which
// `-t plan` followed before CLI11); an exact name, an ambiguous prefix or anything after "--" is left as it is.
std::vector<std::string> ExpandAbbreviations(const CLI::App& app, std::vector<std::string> args) {
  std::vector<std::string> names;
  CollectLongNames(&app, &names);
  for (std::string& arg : args) {
    if (arg == "--") break;
    if (arg.size() < 3 || arg.compare(0, 2, "--") != 0) continue;
    const size_t equals = arg.find('=');
    const std::string typed = arg.substr(2, equals == std::string::npos ? std::string::npos : equals - 2);
    const std::string* match = nullptr;
    bool exact = false, ambiguous = false;
    for (const std::string& name : names) {
      if (name == typed) exact = true;
      if (name.compare(0, typed.size(), typed) != 0) continue;
      if (match && *match != name) ambiguous = true;
      match = &name;
    }
    if (!exact && !ambiguous && match) arg = "--" + *match + (equals == std::string::npos ? "" : arg.substr(equals));
  }
  return args;
}

}  // namespace

ToolCli::ToolCli(const std::string& tool, std::string description) : app_(std::move(description), tool) {
  app_.formatter(std::make_shared<ToolHelpFormatter>());
  app_.set_help_flag("-h,--help", "print this help");
  app_.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);  // getopt's rule: the last one counts
}

std::optional<int> ToolCli::Parse(const std::vector<std::string>& args) {
  std::vector<std::string> reversed = ExpandAbbreviations(app_, {args.begin() + (args.empty() ? 0 : 1), args.end()});
  std::reverse(reversed.begin(), reversed.end());  // CLI11 takes its arguments last first
  try {
    app_.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    printf("%s", app_.help().c_str());  // the help of the command asked about, if one was named
    return 0;
  } catch (const ToolFlagError& error) {
    Error("{}", error.what());
    return 1;
  } catch (const CLI::ParseError& error) {
    Error("{}: {}", CommandsGiven(app_), NinjaStyle(error.what()));
    printf("%s", app_.help().c_str());
    return 1;
  }
  return std::nullopt;
}

double ParseNumberFlag(const std::string& text, bool (*valid)(double), const char* error) {
  char* end = nullptr;
  const double value = strtod(text.c_str(), &end);
  if (*end != '\0' || !valid(value)) {
    throw ToolFlagError(fmt::format(fmt::runtime(error), text));
  }
  return value;
}

long ParseIntegerFlag(const std::string& text, bool (*valid)(long), const char* error) {
  char* end = nullptr;
  const long value = strtol(text.c_str(), &end, 10);  // out of range: LONG_MIN or LONG_MAX, for `valid` to judge
  if (*end != '\0' || !valid(value)) {
    throw ToolFlagError(fmt::format(fmt::runtime(error), text));
  }
  return value;
}

}  // namespace headroom
