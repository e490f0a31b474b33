#include "motes/particles/track.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "motes/core/errors.hpp"
#include "motes/particles/id_index.hpp"

namespace motes {

std::vector<int64_t> find_rows(const ParticleFile& f, size_t column, const uint64_t* keys, size_t n) {
  const DType dt = f.schema().at(column).dtype;
  if (!id_dtype(dt)) throw UsageError("column '" + f.schema()[column].name + "' is not an integer id column");
  std::vector<uint64_t> sorted(keys, keys + n);
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  std::vector<int64_t> found(sorted.size(), -1);
  if (f.id_index() && f.id_index()->column() == column) {
    f.id_index()->find(sorted.data(), sorted.size(), found.data());
  } else {  // no index: the whole column, read once and searched
    const uint64_t count = f.particle_count();
    const size_t size = dtype_size(dt);
    std::vector<unsigned char> all(count * size);
    f.values(column).read(0, count, all.data());
    std::vector<std::pair<uint64_t, uint64_t>> table(count);
    for (uint64_t p = 0; p < count; ++p) table[p] = {id_key(dt, all.data() + p * size), p};
    std::sort(table.begin(), table.end());
    for (size_t j = 0; j < sorted.size(); ++j) {
      auto it = std::lower_bound(table.begin(), table.end(), std::pair<uint64_t, uint64_t>{sorted[j], 0});
      if (it == table.end() || it->first != sorted[j]) continue;
      if (it + 1 != table.end() && (it + 1)->first == sorted[j])
        throw FormatError(f.path() + ": id " + std::to_string(sorted[j]) + " (as a key) is held by two particles");
      found[j] = int64_t(it->second);
    }
  }
  std::vector<int64_t> rows(n);
  for (size_t i = 0; i < n; ++i) rows[i] = found[size_t(std::lower_bound(sorted.begin(), sorted.end(), keys[i]) - sorted.begin())];
  return rows;
}

void track_column(const Collection& c, const std::string& id_column, const int64_t* ids, size_t n,
                  const std::string& column, double* out, uint8_t* found) {
  std::fill(out, out + n, std::numeric_limits<double>::quiet_NaN());
  std::fill(found, found + n, uint8_t(0));
  std::vector<uint64_t> keys(n);
  for (size_t k = 0; k < c.part_count(); ++k) {
    auto f = c.part(k);
    const size_t idc = !id_column.empty() ? f->column(id_column)
                       : f->id_index()    ? f->id_index()->column()
                                          : f->column("id");
    for (size_t i = 0; i < n; ++i) keys[i] = id_key_of_int64(f->schema()[idc].dtype, ids[i]);
    const std::vector<int64_t> rows = find_rows(*f, idc, keys.data(), n);
    const size_t col = f->column(column);
    const DType vt = f->schema()[col].dtype;
    std::vector<unsigned char> values(n * dtype_size(vt), 0);
    if (col == idc) {  // the ids found are the ids asked: nothing to read (ids-by-index files store none)
      for (size_t i = 0; i < n; ++i)
        if (rows[i] >= 0) id_of_key(vt, keys[i], values.data() + i * dtype_size(vt));
    } else {
      gather_rows(f->values(col), rows.data(), n, values.data());
    }
    for (size_t i = 0; i < n; ++i) {
      if (rows[i] < 0) continue;
      if (found[i]) throw FormatError(c.path() + ": id " + std::to_string(ids[i]) + " is held by two particles (in two parts)");
      found[i] = 1;
      out[i] = dispatch_dtype(vt, [&](auto tag) {
        using T = decltype(tag);
        T v;
        std::memcpy(&v, values.data() + i * sizeof(T), sizeof(T));
        return double(v);
      });
    }
  }
}

}  // namespace motes
