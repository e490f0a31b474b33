#include "motes/layout/builder.hpp"

#include <algorithm>
#include <boost/sort/sort.hpp>
#include <cmath>
#include <numeric>
#include <string>

#include "motes/util/parallel.hpp"

namespace motes {

namespace {

// Reads one coordinate column (f32 or f64, any stride) as double.
struct Coordinate {
  const char* base;
  int64_t stride;
  bool is_f32;
  explicit Coordinate(const ColumnView& c)
      : base(static_cast<const char*>(c.data)), stride(c.stride()), is_f32(c.spec.dtype == DType::f32) {}
  double operator[](uint64_t row) const {
    const char* p = base + int64_t(row) * stride;
    return is_f32 ? double(*reinterpret_cast<const float*>(p)) : *reinterpret_cast<const double*>(p);
  }
};

// Spreads the low 21 bits of v so that bit k lands on bit 3k.
inline uint64_t spread_bits_3d(uint64_t v) {
  v &= 0x1fffff;
  v = (v | v << 32) & 0x1f00000000ffffULL;
  v = (v | v << 16) & 0x1f0000ff0000ffULL;
  v = (v | v << 8) & 0x100f00f00f00f00fULL;
  v = (v | v << 4) & 0x10c30c30c30c30c3ULL;
  v = (v | v << 2) & 0x1249249249249249ULL;
  return v;
}

struct KeyedRow {
  uint64_t code;
  uint64_t row;
  bool operator<(const KeyedRow& o) const { return code < o.code || (code == o.code && row < o.row); }
};

constexpr int kMortonBits = 21;
constexpr int kTopBit = 3 * kMortonBits - 1;

// Index order that makes every prefix of a leaf an evenly spread sample of it
// (bit reversal of positions along the space-filling order).
void append_stratified(const uint64_t* rows, uint32_t n, std::vector<uint64_t>& out) {
  uint32_t bits = 0;
  while ((uint64_t(1) << bits) < n) ++bits;
  for (uint64_t i = 0; i < (uint64_t(1) << bits); ++i) {
    uint64_t r = 0;
    for (uint32_t b = 0; b < bits; ++b) r |= ((i >> b) & 1) << (bits - 1 - b);
    if (r < n) out.push_back(rows[r]);
  }
}

// Builds one treelet: a median-split k-d tree over points kept in space-filling
// order (partitions are stable), each inner node taking K stratified LOD points.
class TreeletBuilder {
 public:
  std::vector<TreeNode> nodes;
  std::vector<uint64_t> own;  // own rows of each node, in node order

  TreeletBuilder(const LayoutOptions& o, const Coordinate* axes) : opt_(o), axes_(axes) {}

  void build(std::vector<uint64_t>&& rows) {
    rows_ = std::move(rows);
    uint64_t n = rows_.size();
    for (int a = 0; a < 3; ++a) {
      pos_[a].resize(n);
      for (uint64_t i = 0; i < n; ++i) pos_[a][i] = axes_[a][rows_[i]];
    }
    tmp_rows_.resize(n);
    for (auto& t : tmp_pos_) t.resize(n);
    scratch_.resize(n);
    own.reserve(n);
    split(0, n);
    release(rows_);
    release(tmp_rows_);
    release(scratch_);
    for (int a = 0; a < 3; ++a) release(pos_[a]), release(tmp_pos_[a]);
  }

  template <class V>
  static void release(V& v) {
    V().swap(v);
  }

 private:
  const LayoutOptions& opt_;
  const Coordinate* axes_;
  std::vector<uint64_t> rows_, tmp_rows_;
  std::vector<double> pos_[3], tmp_pos_[3], scratch_;

  void move_point(uint64_t from, uint64_t to, bool into_tmp) {
    if (into_tmp) {
      tmp_rows_[to] = rows_[from];
      for (int a = 0; a < 3; ++a) tmp_pos_[a][to] = pos_[a][from];
    } else {
      rows_[to] = tmp_rows_[from];
      for (int a = 0; a < 3; ++a) pos_[a][to] = tmp_pos_[a][from];
    }
  }

  void split(uint64_t lo, uint64_t hi) {
    uint64_t n = hi - lo;
    uint32_t id = uint32_t(nodes.size());
    nodes.push_back(TreeNode{});
    if (n <= opt_.leaf_size) {
      nodes[id].own_count = uint32_t(n);
      append_stratified(rows_.data() + lo, uint32_t(n), own);
      return;
    }
    // Take K stratified LOD points out, keep the rest in order at [lo, lo + m).
    uint32_t k = opt_.lod_count;
    uint64_t m = 0, next_pick = 0;
    for (uint64_t i = 0; i < n; ++i) {
      if (next_pick < k && i == (2 * next_pick + 1) * n / (2 * k)) {
        own.push_back(rows_[lo + i]);
        ++next_pick;
      } else {
        move_point(lo + i, m++, true);
      }
    }
    nodes[id].own_count = k;
    for (uint64_t i = 0; i < m; ++i) move_point(i, lo + i, false);

    // Median split on the axis of longest extent, stable on both sides.
    int axis = 0;
    double best = -1;
    for (int a = 0; a < 3; ++a) {
      auto [mn, mx] = std::minmax_element(pos_[a].begin() + lo, pos_[a].begin() + lo + m);
      if (*mx - *mn > best) best = *mx - *mn, axis = a;
    }
    uint64_t half = m / 2;
    std::copy(pos_[axis].begin() + lo, pos_[axis].begin() + lo + m, scratch_.begin());
    std::nth_element(scratch_.begin(), scratch_.begin() + half, scratch_.begin() + m);
    double median = scratch_[half];
    uint64_t below = 0;
    for (uint64_t i = 0; i < m; ++i) below += pos_[axis][lo + i] < median;
    uint64_t equal_left = half - below;  // ties sent left to make the halves exact
    uint64_t l = 0, r = half;
    for (uint64_t i = 0; i < m; ++i) {
      double v = pos_[axis][lo + i];
      bool left = v < median || (v == median && equal_left > 0 && (--equal_left, true));
      move_point(lo + i, left ? l++ : r++, true);
    }
    for (uint64_t i = 0; i < m; ++i) move_point(i, lo + i, false);
    split(lo, lo + half);
    nodes[id].right = uint32_t(nodes.size());
    split(lo + half, lo + m);
  }
};

struct ShallowNode {
  bool treelet;
  uint64_t a, b;                 // range in the sorted array
  std::vector<uint64_t> lod_rows;  // inner only
  int left = -1, right = -1;
  size_t task = 0;               // treelet only
};

class ShallowBuilder {
 public:
  std::vector<ShallowNode> nodes;
  std::vector<size_t> tasks;  // shallow node index of each treelet
  std::vector<uint64_t> taken;  // sorted positions already used as LOD points

  ShallowBuilder(const std::vector<KeyedRow>& keys, const LayoutOptions& o) : keys_(keys), opt_(o) {}

  int build(uint64_t a, uint64_t b, int bit) {
    uint64_t n = (b - a) - count_taken(a, b);
    while (bit >= 0 && n > opt_.treelet_size) {
      uint64_t mask = uint64_t(1) << bit;
      auto it = std::partition_point(keys_.begin() + a, keys_.begin() + b,
                                     [&](const KeyedRow& k) { return (k.code & mask) == 0; });
      uint64_t m = uint64_t(it - keys_.begin());
      if (m == a || m == b) {
        --bit;
        continue;
      }
      int id = int(nodes.size());
      nodes.push_back(ShallowNode{false, a, b, {}, -1, -1, 0});
      pick_lod(a, b, n, nodes[id].lod_rows);
      int l = build(a, m, bit - 1);
      int r = build(m, b, bit - 1);
      nodes[id].left = l;
      nodes[id].right = r;
      return id;
    }
    int id = int(nodes.size());
    nodes.push_back(ShallowNode{true, a, b, {}, -1, -1, tasks.size()});
    tasks.push_back(size_t(id));
    return id;
  }

  std::vector<uint64_t> treelet_rows(const ShallowNode& s) const {
    std::vector<uint64_t> rows;
    rows.reserve(s.b - s.a);
    auto t = std::lower_bound(taken.begin(), taken.end(), s.a);
    for (uint64_t p = s.a; p < s.b; ++p) {
      if (t != taken.end() && *t == p) {
        ++t;
        continue;
      }
      rows.push_back(keys_[p].row);
    }
    return rows;
  }

 private:
  const std::vector<KeyedRow>& keys_;
  const LayoutOptions& opt_;

  uint64_t count_taken(uint64_t a, uint64_t b) const {
    return uint64_t(std::lower_bound(taken.begin(), taken.end(), b) - std::lower_bound(taken.begin(), taken.end(), a));
  }
  bool is_taken(uint64_t p) const { return std::binary_search(taken.begin(), taken.end(), p); }

  void pick_lod(uint64_t a, uint64_t b, uint64_t n_free, std::vector<uint64_t>& out) {
    uint32_t k = opt_.lod_count;
    uint64_t span = b - a;
    for (uint32_t j = 0; j < k && out.size() < n_free; ++j) {
      uint64_t p = a + (2 * uint64_t(j) + 1) * span / (2 * k);
      while (is_taken(p)) p = (p + 1 < b) ? p + 1 : a;  // terminates: n_free > picked
      taken.insert(std::upper_bound(taken.begin(), taken.end(), p), p);
      out.push_back(keys_[p].row);
    }
  }
};

template <class T>
void check_finite_and_bound(const ColumnView& c, const char* axis, unsigned threads, double& lo, double& hi) {
  const char* base = static_cast<const char*>(c.data);
  int64_t stride = c.stride();
  uint64_t n = c.count;
  std::vector<double> los(threads * 4 + 1, INFINITY), his(threads * 4 + 1, -INFINITY);
  std::vector<uint64_t> bad(threads * 4 + 1, UINT64_MAX);
  std::atomic<size_t> slot{0};
  parallel_ranges(n, threads, 1 << 16, [&](uint64_t b, uint64_t e) {
    size_t s = slot.fetch_add(1);
    double mn = INFINITY, mx = -INFINITY;
    for (uint64_t i = b; i < e; ++i) {
      double v = double(*reinterpret_cast<const T*>(base + int64_t(i) * stride));
      if (!std::isfinite(v)) {
        bad[s] = i;
        break;
      }
      mn = std::min(mn, v);
      mx = std::max(mx, v);
    }
    los[s] = mn;
    his[s] = mx;
  });
  uint64_t first_bad = *std::min_element(bad.begin(), bad.end());
  if (first_bad != UINT64_MAX)
    throw UsageError(std::string("position column '") + axis + "' has a NaN or infinite value at row " +
                     std::to_string(first_bad));
  lo = *std::min_element(los.begin(), los.end());
  hi = *std::max_element(his.begin(), his.end());
}

template <class T>
void add_morton_axis(const ColumnView& c, double lo, double hi, int shift, std::vector<KeyedRow>& keys, unsigned threads) {
  const char* base = static_cast<const char*>(c.data);
  int64_t stride = c.stride();
  double scale = hi > lo ? double((1u << kMortonBits) - 1) / (hi - lo) : 0.0;
  parallel_ranges(keys.size(), threads, 1 << 16, [&](uint64_t b, uint64_t e) {
    for (uint64_t i = b; i < e; ++i) {
      double v = double(*reinterpret_cast<const T*>(base + int64_t(i) * stride));
      uint64_t q = uint64_t((v - lo) * scale);
      keys[i].code |= spread_bits_3d(q) << shift;
    }
  });
}

}  // namespace

void check_layout_options(const LayoutOptions& o) {
  if (o.lod_count < 1) throw UsageError("lod_count must be at least 1");
  if (o.leaf_size < 2 * o.lod_count || o.leaf_size < 4)
    throw UsageError("leaf_size (" + std::to_string(o.leaf_size) + ") must be at least 4 and at least 2 x lod_count (" +
                     std::to_string(o.lod_count) + ")");
  if (o.treelet_size < o.leaf_size)
    throw UsageError("treelet_size (" + std::to_string(o.treelet_size) + ") must be at least leaf_size (" +
                     std::to_string(o.leaf_size) + ")");
}

Layout build_layout(const ColumnView& x, const ColumnView& y, const ColumnView& z, const LayoutOptions& options) {
  check_layout_options(options);
  const ColumnView* axes[3] = {&x, &y, &z};
  const char* names[3] = {"x", "y", "z"};
  for (int a = 0; a < 3; ++a) {
    if (axes[a]->spec.dtype != DType::f32 && axes[a]->spec.dtype != DType::f64)
      throw UsageError(std::string("position column '") + names[a] + "' must be f32 or f64, got " +
                       dtype_name(axes[a]->spec.dtype));
    if (axes[a]->count != x.count)
      throw UsageError("position columns have different lengths (x: " + std::to_string(x.count) + ", " + names[a] +
                       ": " + std::to_string(axes[a]->count) + ")");
  }
  unsigned threads = options.threads ? options.threads : default_threads();
  uint64_t n = x.count;
  Layout out;
  for (int a = 0; a < 3; ++a) {
    double lo = 0, hi = 0;
    if (axes[a]->spec.dtype == DType::f32)
      check_finite_and_bound<float>(*axes[a], names[a], threads, lo, hi);
    else
      check_finite_and_bound<double>(*axes[a], names[a], threads, lo, hi);
    out.bounds.lo[a] = n ? lo : 0.0;
    out.bounds.hi[a] = n ? hi : 0.0;
  }

  std::vector<KeyedRow> keys(n);
  parallel_ranges(n, threads, 1 << 16, [&](uint64_t b, uint64_t e) {
    for (uint64_t i = b; i < e; ++i) keys[i] = KeyedRow{0, i};
  });
  for (int a = 0; a < 3; ++a) {
    int shift = 2 - a;
    if (axes[a]->spec.dtype == DType::f32)
      add_morton_axis<float>(*axes[a], out.bounds.lo[a], out.bounds.hi[a], shift, keys, threads);
    else
      add_morton_axis<double>(*axes[a], out.bounds.lo[a], out.bounds.hi[a], shift, keys, threads);
  }
  if (threads > 1)
    boost::sort::block_indirect_sort(keys.begin(), keys.end(), std::less<KeyedRow>(), threads);
  else
    boost::sort::pdqsort(keys.begin(), keys.end());

  ShallowBuilder shallow(keys, options);
  int root = shallow.build(0, n, kTopBit);

  Coordinate coords[3] = {Coordinate(x), Coordinate(y), Coordinate(z)};
  std::vector<TreeletBuilder> treelets(shallow.tasks.size(), TreeletBuilder(options, coords));
  parallel_for(shallow.tasks.size(), threads, [&](uint64_t t) {
    treelets[t].build(shallow.treelet_rows(shallow.nodes[shallow.tasks[t]]));
  });
  keys.clear();
  keys.shrink_to_fit();

  // Splice shallow nodes and treelets into one preorder tree.
  std::vector<uint64_t> own_rows;
  own_rows.reserve(n);
  std::vector<uint64_t> own_offset;
  auto emit = [&](auto&& self, int s) -> void {
    const ShallowNode& sn = shallow.nodes[size_t(s)];
    if (sn.treelet) {
      TreeletBuilder& t = treelets[sn.task];
      uint32_t base = uint32_t(out.nodes.size());
      uint64_t own_pos = own_rows.size();
      for (const TreeNode& tn : t.nodes) {
        out.nodes.push_back(TreeNode{tn.right ? tn.right + base : 0, tn.own_count});
        own_offset.push_back(own_pos);
        own_pos += tn.own_count;
      }
      own_rows.insert(own_rows.end(), t.own.begin(), t.own.end());
      TreeletBuilder::release(t.nodes);  // free its memory early
      TreeletBuilder::release(t.own);
      return;
    }
    uint32_t id = uint32_t(out.nodes.size());
    out.nodes.push_back(TreeNode{0, uint32_t(sn.lod_rows.size())});
    own_offset.push_back(own_rows.size());
    own_rows.insert(own_rows.end(), sn.lod_rows.begin(), sn.lod_rows.end());
    self(self, sn.left);
    out.nodes[id].right = uint32_t(out.nodes.size());
    self(self, sn.right);
  };
  emit(emit, root);

  out.levels = compute_levels(out.nodes, options.lod_count, n);
  out.order.resize(n);
  const Levels& lv = out.levels;
  parallel_ranges(out.nodes.size(), threads, 1024, [&](uint64_t b, uint64_t e) {
    for (uint64_t i = b; i < e; ++i) {
      uint64_t src = own_offset[i];
      for (uint32_t r = lv.run_begin[i]; r < lv.run_begin[i + 1]; ++r) {
        const Run& run = lv.runs[r];
        std::copy_n(own_rows.begin() + int64_t(src), run.count, out.order.begin() + int64_t(run.start));
        src += run.count;
      }
    }
  });
  return out;
}

}  // namespace motes
