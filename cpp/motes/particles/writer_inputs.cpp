// What the particle writer is given, checked: the columns (validate_columns), the columns its
// options name for the value indexes (id_column_of, tail_columns_of), and the codec memo it
// takes plans from (CodecMemo). The writer itself is writer.cpp.
#include "motes/particles/writer.hpp"

#include <algorithm>
#include <set>

#include "motes/core/text.hpp"
#include "motes/expr/derive.hpp"
#include "motes/particles/id_index.hpp"

namespace motes {

namespace {

bool is_identifier(const std::string& s) {
  if (s.empty() || s.size() > 255) return false;
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (!alpha(s[0])) return false;
  for (char c : s)
    if (!alpha(c) && !(c >= '0' && c <= '9')) return false;
  return true;
}

// A column's or a derived quantity's name (`what`: "column name", "derived quantity name"):
// an identifier that is not a reserved word of the query language; UsageError otherwise.
void check_name(const std::string& what, const std::string& name) {
  if (!is_identifier(name))
    throw UsageError(what + " '" + printable(name) +
                     "' is not an identifier (letters, digits, '_', not starting with a digit, at most 255 bytes)");
  for (const char* word : kReservedWords)
    if (name == word) throw UsageError(what + " '" + name + "' is a reserved word of the query language");
}

}  // namespace

void validate_columns(const std::vector<ColumnView>& columns) {
  if (columns.size() > 65535) throw UsageError("too many columns (" + std::to_string(columns.size()) + ", at most 65535)");
  std::set<std::string> seen;
  for (const ColumnView& c : columns) {
    check_name("column name", c.spec.name);
    if (!seen.insert(c.spec.name).second) throw UsageError("column '" + c.spec.name + "' is given twice");
    if (!dtype_valid(uint8_t(c.spec.dtype))) throw UsageError("column '" + c.spec.name + "' has an unknown dtype");
    if (c.count != columns[0].count)
      throw UsageError("columns have different lengths: '" + columns[0].spec.name + "' has " +
                       std::to_string(columns[0].count) + " values, '" + c.spec.name + "' has " +
                       std::to_string(c.count));
    if (c.count && !c.data) throw UsageError("column '" + c.spec.name + "' has no data pointer");
    if (c.spec.unit.size() > (1u << 20)) throw UsageError("unit metadata of column '" + c.spec.name + "' exceeds 1 MiB");
    if (!valid_utf8(c.spec.unit))
      throw UsageError("unit of column '" + c.spec.name + "' is not UTF-8 text: '" + printable(c.spec.unit) + "'");
  }
  for (const ColumnView& c : columns) {
    const bool position = is_position_column(c.spec.name);
    if (c.spec.index == IndexKind::quantile && (position || dtype_size(c.spec.dtype) == 1))
      throw UsageError("column '" + c.spec.name + "' cannot have a quantile index (" +
                       (position ? "positions are indexed by the tree itself" : "1-byte values are their own codes") + ")");
  }
  for (const char* axis : kPositionColumns) {
    if (!seen.count(axis))
      throw UsageError(std::string("position column '") + axis + "' is missing (need x, y and z)");
  }
}

int id_column_of(const std::vector<ColumnView>& columns, const WriteOptions& options) {
  if (options.id_column.empty()) return -1;
  for (size_t i = 0; i < columns.size(); ++i) {
    const ColumnSpec& s = columns[i].spec;
    if (options.id_column == "auto" ? s.name == "id" : s.name == options.id_column) {
      if (id_dtype(s.dtype) && !(s.error_bound > 0)) return int(i);
      if (options.id_column == "auto") return -1;  // a column named id of another type: no index
      throw UsageError("the id column '" + s.name + "' must be int32, uint32, int64 or uint64 and stored exactly, not " +
                       dtype_name(s.dtype));
    }
  }
  if (options.id_column != "auto") throw UsageError("the id column '" + options.id_column + "' is not among the columns");
  return -1;
}

std::vector<int> tail_columns_of(const std::vector<ColumnView>& columns, const WriteOptions& options) {
  std::vector<int> out;
  if (options.tail_fraction == 0) return out;
  if (!(options.tail_fraction > 0 && options.tail_fraction <= 0.25))
    throw UsageError("the tail fraction must be in (0, 0.25] (0: no tail indexes), got " + number_text(options.tail_fraction));
  if (options.tail_columns) {
    for (const std::string& name : *options.tail_columns) {
      size_t i = 0;
      while (i < columns.size() && columns[i].spec.name != name) ++i;
      if (i == columns.size()) throw UsageError("tail index column '" + name + "' is not among the columns");
      if (std::find(out.begin(), out.end(), int(i)) == out.end()) out.push_back(int(i));
    }
    return out;
  }
  const int id = id_column_of(columns, options);
  for (size_t i = 0; i < columns.size(); ++i) {
    const std::string& name = columns[i].spec.name;
    if (name != "x" && name != "y" && name != "z" && int(i) != id) out.push_back(int(i));
  }
  return out;
}

std::vector<int> tail_cover_columns_of(const std::vector<ColumnView>& columns, const WriteOptions& options) {
  std::vector<int> out;
  if (!(options.tail_cover >= 0 && options.tail_cover <= 0.25))
    throw UsageError("the tail cover must be in [0, 0.25] (0: no cover), got " + number_text(options.tail_cover));
  if (options.tail_cover == 0) return out;
  if (options.tail_cover_columns) {
    for (const std::string& name : *options.tail_cover_columns) {
      size_t i = 0;
      while (i < columns.size() && columns[i].spec.name != name) ++i;
      if (i == columns.size()) throw UsageError("tail cover column '" + name + "' is not among the columns");
      if (columns[i].spec.error_bound > 0)
        throw UsageError("tail cover column '" + name + "' is stored within an error bound; a cover holds exact values only");
      if (std::find(out.begin(), out.end(), int(i)) == out.end()) out.push_back(int(i));
    }
    return out;
  }
  for (size_t i = 0; i < columns.size(); ++i)
    if (!(columns[i].spec.error_bound > 0)) out.push_back(int(i));
  return out;
}

void check_derived(const std::vector<ColumnView>& columns, const WriteOptions& options) {
  if (options.derived.empty()) return;
  if (options.derived.size() > 256) throw UsageError("too many derived quantities (" + std::to_string(options.derived.size()) + ", at most 256)");
  std::set<std::string> seen;
  std::vector<std::string> names;
  std::vector<double> bounds;
  for (const ColumnView& c : columns) seen.insert(c.spec.name), names.push_back(c.spec.name), bounds.push_back(c.spec.error_bound);
  for (const DerivedSpec& d : options.derived) {
    check_name("derived quantity name", d.name);
    if (!seen.insert(d.name).second) throw UsageError("derived quantity '" + d.name + "' has the name of a column or of another one");
    if (d.expression.empty() || d.expression.size() > (1u << 16))
      throw UsageError("derived quantity '" + d.name + "' needs an expression of 1 to 65536 bytes");
    derived_expression(d.expression, names, bounds);  // its syntax and columns, before anything is written
  }
}

const CodecMemo::Entry* CodecMemo::reusable(const Key& key, uint64_t sampled) const {
  for (const Entry& e : entries)
    if (e.key == key) return e.sampled >= sampled ? &e : nullptr;
  return nullptr;
}

void CodecMemo::keep(const Key& key, uint64_t sampled, const codec::Plan& values, const codec::Plan& codes) {
  for (Entry& e : entries)
    if (e.key == key) return void(e = Entry{key, sampled, values, codes});
  entries.push_back(Entry{key, sampled, values, codes});
}

}  // namespace motes
