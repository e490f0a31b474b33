#include "motes/request/request.hpp"

#include <algorithm>

#include "motes/core/errors.hpp"
#include "motes/expr/expr.hpp"
#include "motes/core/text.hpp"

namespace motes {

namespace {

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

const StepEntry& resolve_step(const Dataset& dataset, std::optional<int64_t> step) {
  const std::vector<StepEntry>& steps = dataset.steps();
  if (steps.empty()) throw UsageError("dataset has no steps");
  return step ? dataset.step(*step) : steps.back();
}

const SpeciesEntry& resolve_species(const StepEntry& step, const std::optional<std::string>& species) {
  std::vector<std::string> names;
  for (const SpeciesEntry& s : step.species) names.push_back(s.name);
  std::vector<std::string> fields;
  for (const FieldEntry& f : step.fields) fields.push_back(f.name);
  const std::string at = "step " + std::to_string(step.index);
  if (names.empty()) throw UsageError(at + " holds no particles, only fields (" + joined(fields) + ")");
  if (!species) {
    if (names.size() != 1) throw UsageError(at + " has several species (" + joined(names) + "): pass species=");
    return step.species.front();
  }
  return step.find(*species);
}

std::optional<std::pair<std::string, std::string>> column_field(const std::string& text, const std::vector<std::string>& known) {
  if (contains(known, text)) return std::nullopt;
  ExprPtr e;
  try {
    e = parse_value(text);
  } catch (const UsageError&) {  // not an expression: an unknown column, which the caller names
    return std::nullopt;
  }
  if (e->kind != Expr::Kind::field) return std::nullopt;
  return std::make_pair(e->name, e->component);
}

ReadRequest resolve_read(const Dataset& dataset, const ReadArgs& args, QuerySpec spec, const SamplerOf& sampler_of) {
  check_query_spec(spec);
  const StepEntry& step = resolve_step(dataset, args.step);
  const SpeciesEntry& species = resolve_species(step, args.species);
  ReadRequest r;
  r.step = step.index;
  r.species = species.name;
  for (const ColumnSpec& c : species.columns) r.known.push_back(c.name);

  r.columns = args.columns ? *args.columns : r.known;
  for (const std::string& c : r.columns) {
    if (contains(r.known, c)) continue;
    if (auto ref = column_field(c, r.known)) {
      step.find_field(ref->first);  // UsageError naming the step's fields
      continue;
    }
    throw UsageError("unknown column '" + c + "' (columns: " + joined(r.known) + ")");
  }

  // The fields `where` and the values sample, each once, in the order they are named.
  std::vector<std::pair<std::string, std::string>> refs;
  auto add = [&](std::vector<std::pair<std::string, std::string>> more) {
    for (auto& f : more)
      if (std::find(refs.begin(), refs.end(), f) == refs.end()) refs.push_back(std::move(f));
  };
  if (spec.where.find("field") != std::string::npos) add(referenced_fields(*parse_expression(spec.where)));
  for (const std::string& v : args.values) {
    if (v.find("field") == std::string::npos || contains(r.known, v)) continue;
    ExprPtr e = parse_value(v);
    bind_columns(*e, r.known);
    add(referenced_fields(*e));
  }
  for (const auto& [name, component] : refs) {
    step.find_field(name);
    spec.fields.push_back(FieldRef{name, component, sampler_of(step.index, name, component)});
  }
  r.spec = std::move(spec);
  return r;
}

}  // namespace motes
