#include "motes/particles/layout/builder.hpp"

#include <algorithm>
#include <boost/sort/sort.hpp>
#include <cmath>
#include <limits>
#include <mutex>
#include <numeric>
#include <thread>
#include <string>

#include "motes/core/parallel.hpp"
#include "motes/particles/layout/radix_sort.hpp"
#include "motes/particles/layout/treelet.hpp"

namespace motes {

namespace {

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

// Sort keys: a Morton code and the input row. Below 2^32 rows both pack into
// one u64 (the code's top 32 bits above the row), which sorts much faster; the
// shallow tree only needs the top bits, the treelets split on coordinates.
struct KeyedRow {
  uint64_t code;  // 63-bit Morton code
  uint64_t row;
  bool operator<(const KeyedRow& o) const { return code < o.code || (code == o.code && row < o.row); }
};
inline uint64_t code_bits(const KeyedRow& k) { return k.code << 1; }  // top Morton bit at bit 63
inline uint64_t row_of(const KeyedRow& k) { return k.row; }
inline uint64_t code_bits(uint64_t packed) { return packed & ~uint64_t(0xFFFFFFFF); }
inline uint64_t row_of(uint64_t packed) { return packed & 0xFFFFFFFF; }
inline int lowest_code_bit(const KeyedRow&) { return 1; }
inline int lowest_code_bit(uint64_t) { return 32; }

constexpr int kMortonBits = 21;

struct ShallowNode {
  bool treelet;
  uint64_t a, b;                   // range in the sorted array
  std::vector<uint64_t> lod_rows;  // inner only
  int left = -1, right = -1;
  size_t task = 0;                 // treelet only
};

// The top of the tree: a binary radix tree over Morton code bits (splits at
// spatial midpoints, found by binary search in the sorted keys), down to
// regions of at most treelet_size points.
template <class Key>
class ShallowBuilder {
 public:
  std::vector<ShallowNode> nodes;
  std::vector<size_t> tasks;    // shallow node index of each treelet
  std::vector<uint64_t> taken;  // sorted positions already used as LOD points

  ShallowBuilder(const BigVector<Key>& keys, const LayoutOptions& o) : keys_(keys), opt_(o) {}

  int build(uint64_t a, uint64_t b, int bit) {
    uint64_t n = (b - a) - count_taken(a, b);
    const int lowest = keys_.empty() ? 63 : lowest_code_bit(keys_[0]);
    while (bit >= lowest && n > opt_.treelet_size) {
      uint64_t mask = uint64_t(1) << bit;
      auto it = std::partition_point(keys_.begin() + int64_t(a), keys_.begin() + int64_t(b),
                                     [&](const Key& k) { return (code_bits(k) & mask) == 0; });
      uint64_t m = uint64_t(it - keys_.begin());
      if (m == a || m == b) {
        --bit;
        continue;
      }
      int id = int(nodes.size());
      nodes.push_back(ShallowNode{false, a, b, {}, -1, -1, 0});
      pick_lod(a, b, n, nodes[size_t(id)].lod_rows);
      int l = build(a, m, bit - 1);
      int r = build(m, b, bit - 1);
      nodes[size_t(id)].left = l;
      nodes[size_t(id)].right = r;
      return id;
    }
    int id = int(nodes.size());
    nodes.push_back(ShallowNode{true, a, b, {}, -1, -1, tasks.size()});
    tasks.push_back(size_t(id));
    return id;
  }

  void treelet_rows(const ShallowNode& s, std::vector<uint64_t>& rows) const {
    rows.clear();
    rows.reserve(s.b - s.a);
    auto t = std::lower_bound(taken.begin(), taken.end(), s.a);
    for (uint64_t p = s.a; p < s.b; ++p) {
      if (t != taken.end() && *t == p) {
        ++t;
        continue;
      }
      rows.push_back(row_of(keys_[p]));
    }
  }

 private:
  const BigVector<Key>& keys_;
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
      out.push_back(row_of(keys_[p]));
    }
  }
};

// Sorts keys on all threads: split around sampled pivots, sort the parts in parallel.
template <class Key>
void sort_keys(BigVector<Key>& keys, unsigned threads) {
  auto sort_range = [&](auto&& self, size_t lo, size_t hi, unsigned t) -> void {
    if (t <= 1 || hi - lo < (1u << 16)) {
      boost::sort::pdqsort(keys.begin() + int64_t(lo), keys.begin() + int64_t(hi));
      return;
    }
    std::vector<Key> sample;
    for (size_t i = 0; i < 1023; ++i) sample.push_back(keys[lo + (hi - lo) * (2 * i + 1) / 2046]);
    std::nth_element(sample.begin(), sample.begin() + 511, sample.end());
    const Key pivot = sample[511];
    size_t mid = size_t(std::partition(keys.begin() + int64_t(lo), keys.begin() + int64_t(hi),
                                       [&](const Key& k) { return k < pivot; }) - keys.begin());
    parallel_for(2, 2, [&](uint64_t part) { part ? self(self, mid, hi, t - t / 2) : self(self, lo, mid, t / 2); });
  };
  sort_range(sort_range, 0, keys.size(), threads);
}

// Bounds of a range of values, and the first non-finite one (UINT64_MAX when none). The
// loop has no branch (a NaN or infinity only clears `finite`), so it vectorises where the
// values are contiguous; the first bad row is looked for only when there is one.
template <class T>
void bound_range(const char* base, int64_t stride, uint64_t b, uint64_t e, double& lo, double& hi, uint64_t& bad) {
  auto range = [&](auto at) {
    T mn = std::numeric_limits<T>::infinity(), mx = -mn;
    bool finite = true;
    for (uint64_t i = b; i < e; ++i) {
      const T v = at(i);
      finite &= v - v == T(0);
      mn = v < mn ? v : mn;
      mx = v > mx ? v : mx;
    }
    if (!finite)
      for (uint64_t i = b; i < e; ++i)
        if (!(at(i) - at(i) == T(0))) return void(bad = i);
    lo = double(mn), hi = double(mx);
  };
  if (stride == int64_t(sizeof(T))) {
    const T* v = reinterpret_cast<const T*>(base);
    range([v](uint64_t i) { return v[i]; });
  } else {
    range([&](uint64_t i) { return *reinterpret_cast<const T*>(base + int64_t(i) * stride); });
  }
}

// Adds one axis' quantised bits into the 63-bit Morton codes (the first axis, shift 2,
// writes them: the codes' memory is not zeroed first).
template <class T>
void add_morton_axis(const ColumnView& c, double lo, double hi, int shift, BigVector<uint64_t>& codes, unsigned threads) {
  const char* base = static_cast<const char*>(c.data);
  int64_t stride = c.stride();
  double scale = hi > lo ? double((1u << kMortonBits) - 1) / (hi - lo) : 0.0;
  parallel_ranges(codes.size(), threads, 1 << 16, [&](uint64_t b, uint64_t e) {
    for (uint64_t i = b; i < e; ++i) {
      double v = double(*reinterpret_cast<const T*>(base + int64_t(i) * stride));
      const uint64_t bits = spread_bits_3d(uint64_t((v - lo) * scale)) << shift;
      codes[i] = shift == 2 ? bits : codes[i] | bits;
    }
  });
}

// Sorts the keys, builds the shallow tree and the treelets (in parallel) and
// splices them into one preorder tree; own_rows[own_offset[i]...] are node i's points.
template <class P, class Key>
void build_tree(BigVector<Key>& keys, const LayoutOptions& options, unsigned threads, const ColumnView& x,
                const ColumnView& y, const ColumnView& z, Layout& out, BigVector<uint64_t>& own_rows,
                std::vector<uint64_t>& own_offset, BigVector<uint64_t>& spare) {
  const uint64_t n = keys.size();
  if constexpr (std::is_same_v<Key, uint64_t>)
    sort_by_high_bits(keys, spare, threads);  // code above row, rows ascending: sorting the code bits sorts all
  else
    sort_keys(keys, threads);
  out.phases.lap("sort");
  ShallowBuilder<Key> shallow(keys, options);
  int root = shallow.build(0, n, 63);
  out.phases.lap("shallow tree");
  Coordinate coords[3] = {Coordinate(x), Coordinate(y), Coordinate(z)};
  std::vector<treelet::TreeletBuilder<P>> treelets(shallow.tasks.size(), treelet::TreeletBuilder<P>(options, coords));
  parallel_for(shallow.tasks.size(), threads, [&](uint64_t t) {
    treelets[t].build([&](std::vector<uint64_t>& rows) { shallow.treelet_rows(shallow.nodes[shallow.tasks[t]], rows); });
  });
  out.phases.lap("treelets");
  if constexpr (std::is_same_v<Key, uint64_t>) {
    own_rows.swap(keys);  // the keys' pages are touched already: reuse them
    own_rows.clear();
  }
  keys = {};
  own_rows.reserve(n);
  auto emit = [&](auto&& self, int s) -> void {
    const ShallowNode& sn = shallow.nodes[size_t(s)];
    if (sn.treelet) {
      treelet::TreeletBuilder<P>& t = treelets[sn.task];
      uint32_t base = uint32_t(out.nodes.size());
      uint64_t own_pos = own_rows.size();
      for (const TreeNode& tn : t.nodes) {
        out.nodes.push_back(TreeNode{tn.right ? tn.right + base : 0, tn.own_count});
        own_offset.push_back(own_pos);
        own_pos += tn.own_count;
      }
      own_rows.insert(own_rows.end(), t.own.begin(), t.own.end());
      treelet::TreeletBuilder<P>::release(t.nodes);  // free its memory early
      treelet::TreeletBuilder<P>::release(t.own);
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
  out.phases.lap("splice");
}

}  // namespace

void position_bounds(const ColumnView& c, const char* axis, unsigned threads, double& lo, double& hi) {
  if (c.spec.dtype != DType::f32 && c.spec.dtype != DType::f64)
    throw UsageError(std::string("position column '") + axis + "' must be f32 or f64");
  const char* base = static_cast<const char*>(c.data);
  const int64_t stride = c.stride();
  std::mutex m;
  uint64_t first_bad = UINT64_MAX;
  lo = INFINITY, hi = -INFINITY;
  parallel_ranges(c.count, threads, 1 << 16, [&](uint64_t b, uint64_t e) {
    double l = INFINITY, h = -INFINITY;
    uint64_t bad = UINT64_MAX;
    if (c.spec.dtype == DType::f32) bound_range<float>(base, stride, b, e, l, h, bad);
    else bound_range<double>(base, stride, b, e, l, h, bad);
    std::lock_guard lock(m);
    first_bad = std::min(first_bad, bad);
    lo = std::min(lo, l), hi = std::max(hi, h);
  });
  if (first_bad != UINT64_MAX)
    throw UsageError(std::string("position column '") + axis + "' has a NaN or infinite value at row " +
                     std::to_string(first_bad));
}

void check_layout_options(const LayoutOptions& o) {
  if (o.lod_count < 1 || o.lod_count > treelet::kMaxLod) throw UsageError("lod_count must be in [1, " + std::to_string(treelet::kMaxLod) + "]");
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
  out.phases.restart();
  for (int a = 0; a < 3; ++a) {
    double lo = 0, hi = 0;
    position_bounds(*axes[a], names[a], threads, lo, hi);
    out.bounds.lo[a] = n ? lo : 0.0;
    out.bounds.hi[a] = n ? hi : 0.0;
  }
  out.phases.lap("bounds");

  BigVector<uint64_t> codes(n);
  for (int a = 0; a < 3; ++a) {
    int shift = 2 - a;
    if (axes[a]->spec.dtype == DType::f32)
      add_morton_axis<float>(*axes[a], out.bounds.lo[a], out.bounds.hi[a], shift, codes, threads);
    else
      add_morton_axis<double>(*axes[a], out.bounds.lo[a], out.bounds.hi[a], shift, codes, threads);
  }
  out.phases.lap("morton codes");
  const bool f32 = x.spec.dtype == DType::f32 && y.spec.dtype == DType::f32 && z.spec.dtype == DType::f32;
  BigVector<uint64_t> own_rows, spare;  // spare: the key sort's scratch, whose pages become the file order
  std::vector<uint64_t> own_offset;
  if (n < (uint64_t(1) << 32)) {
    BigVector<uint64_t> keys(std::move(codes));
    parallel_ranges(n, threads, 1 << 16, [&](uint64_t b, uint64_t e) {
      for (uint64_t i = b; i < e; ++i) keys[i] = (keys[i] >> 31) << 32 | i;
    });
    f32 ? build_tree<float>(keys, options, threads, x, y, z, out, own_rows, own_offset, spare)
        : build_tree<double>(keys, options, threads, x, y, z, out, own_rows, own_offset, spare);
  } else {
    BigVector<KeyedRow> keys(n);
    for (uint64_t i = 0; i < n; ++i) keys[i] = KeyedRow{codes[i], i};
    codes = {};
    f32 ? build_tree<float>(keys, options, threads, x, y, z, out, own_rows, own_offset, spare)
        : build_tree<double>(keys, options, threads, x, y, z, out, own_rows, own_offset, spare);
  }

  out.levels = compute_levels(out.nodes, options.lod_count, n);
  out.order.swap(spare);
  out.order.resize(n);  // every position is written below
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
  out.phases.lap("file order");
  return out;
}

}  // namespace motes
