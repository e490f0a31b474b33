#include "motes/particles/layout/builder.hpp"

#include <algorithm>
#include <bit>
#include <boost/sort/sort.hpp>
#include <cmath>
#include <limits>
#include <numeric>
#include <thread>
#include <string>

#include "motes/core/parallel.hpp"
#include "motes/particles/layout/radix_sort.hpp"

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
constexpr uint32_t kMaxLod = 1024;  // LOD points per inner node, at most

// Index order that makes every prefix of a leaf an evenly spread sample of it
// (bit reversal of positions along the space-filling order).
inline uint32_t reverse_bits(uint32_t v) {
  v = (v >> 1 & 0x55555555u) | (v & 0x55555555u) << 1;
  v = (v >> 2 & 0x33333333u) | (v & 0x33333333u) << 2;
  v = (v >> 4 & 0x0f0f0f0fu) | (v & 0x0f0f0f0fu) << 4;
  return __builtin_bswap32(v);
}
template <class RowOf>
void append_stratified(uint32_t n, RowOf&& row_of, std::vector<uint64_t>& out) {
  if (n <= 1) {
    if (n) out.push_back(row_of(0));
    return;
  }
  const int bits = 32 - std::countl_zero(n - 1);  // 2^bits >= n
  for (uint64_t i = 0; i < (uint64_t(1) << bits); ++i) {
    const uint32_t r = reverse_bits(uint32_t(i)) >> (32 - bits);
    if (r < n) out.push_back(row_of(r));
  }
}

// Builds one treelet: a median-split k-d tree over points kept in space-filling
// order (partitions are stable), each inner node taking K stratified LOD points.
// A point is its three coordinates and its index among the treelet's rows, side by
// side, so a partition moves one record; points move between two buffers, one level
// to the next (no copying back).
template <class P>
class TreeletBuilder {
 public:
  std::vector<TreeNode> nodes;
  std::vector<uint64_t> own;  // own rows of each node, in node order

  TreeletBuilder(const LayoutOptions& o, const Coordinate* axes) : opt_(&o), axes_(axes) {}

  // fill(rows) puts the treelet's input rows, in space-filling order, into `rows`.
  template <class Fill>
  void build(Fill&& fill) {
    Scratch& w = scratch();
    fill(w.rows);
    const uint64_t n = w.rows.size();
    if (n > UINT32_MAX)  // 2^32 points in one cell of the finest Morton grid
      throw UsageError("more than 2^32 particles share one position cell; the layout cannot split them");
    rows_ = w.rows.data();
    for (auto& b : w.points) b.resize(n);
    points_[0] = w.points[0].data(), points_[1] = w.points[1].data();
    P lo[3], hi[3];
    for (int a = 0; a < 3; ++a) lo[a] = std::numeric_limits<P>::max(), hi[a] = std::numeric_limits<P>::lowest();
    for (uint64_t i = 0; i < n; ++i) {
      if (i + 32 < n)
        for (int a = 0; a < 3; ++a) axes_[a].prefetch(rows_[i + 32]);
      Point& pt = points_[0][i];
      for (int a = 0; a < 3; ++a) {
        const P v = P(axes_[a][rows_[i]]);
        pt.c[a] = v;
        lo[a] = std::min(lo[a], v), hi[a] = std::max(hi[a], v);
      }
      pt.index = uint32_t(i);
    }
    w.select.resize(n);
    select_ = w.select.data();
    own.reserve(n);
    split(0, n, 0, lo, hi);
    if (n > kKeepScratch) w = Scratch();  // an unusually large treelet: give its memory back
  }

  template <class V>
  static void release(V& v) {
    V().swap(v);
  }

 private:
  struct Point {
    P c[3];
    uint32_t index;  // into rows_
  };
  // Working buffers, kept per thread from one treelet to the next: fresh memory
  // for every treelet would cost a page fault (and a cleared page) per 4 KiB.
  struct Scratch {
    std::vector<uint64_t> rows;
    std::vector<Point> points[2];
    std::vector<P> select;
  };
  static Scratch& scratch() {
    static thread_local Scratch s;
    return s;
  }
  static constexpr uint64_t kKeepScratch = uint64_t(1) << 22;

  const LayoutOptions* opt_;
  const Coordinate* axes_;
  const uint64_t* rows_ = nullptr;
  Point* points_[2] = {};
  P* select_ = nullptr;

  // The value of rank n/2 of the points' coordinate `axis`, exactly, and how many values
  // are below it and equal to it. Floyd-Rivest style: a sorted sample brackets the median,
  // one branch-free pass keeps only the values between the brackets (and counts those
  // below), and selection and counting run on those few; a missed bracket falls back to a
  // selection over everything.
  P select_median(const Point* pts, uint64_t n, int axis, uint64_t& less, uint64_t& equal) {
    const uint64_t want = n / 2;
    if (n >= 1024) {
      // The band is about 3 standard deviations of the sample median's rank either side.
      const uint32_t samples = n >= 4096 ? 1024 : 256, band = n >= 4096 ? 48 : 24;
      P sample[1024];
      for (uint32_t i = 0; i < samples; ++i) sample[i] = pts[(2 * uint64_t(i) + 1) * n / (2 * samples)].c[axis];
      std::sort(sample, sample + samples);
      const P low = sample[samples / 2 - band], high = sample[samples / 2 + band];
      uint64_t below = 0, kept = 0;
      for (uint64_t i = 0; i < n; ++i) {
        const P x = pts[i].c[axis];
        below += x < low;
        select_[kept] = x;
        kept += (x >= low) & (x <= high);
      }
      if (want >= below && want < below + kept) {
        std::nth_element(select_, select_ + (want - below), select_ + kept);
        const P median = select_[want - below];
        less = below, equal = 0;  // values outside [low, high] are outside the median's ties
        for (uint64_t i = 0; i < kept; ++i) less += select_[i] < median, equal += select_[i] == median;
        return median;
      }
    }
    for (uint64_t i = 0; i < n; ++i) select_[i] = pts[i].c[axis];
    std::nth_element(select_, select_ + want, select_ + n);
    const P median = select_[want];
    less = equal = 0;
    for (uint64_t i = 0; i < n; ++i) less += pts[i].c[axis] < median, equal += pts[i].c[axis] == median;
    return median;
  }

  void split(uint64_t lo, uint64_t hi, int s, const P* blo, const P* bhi) {
    const uint64_t n = hi - lo;
    const uint32_t id = uint32_t(nodes.size());
    nodes.push_back(TreeNode{});
    const Point* in = points_[s] + lo;
    if (n <= opt_->leaf_size) {
      nodes[id].own_count = uint32_t(n);
      append_stratified(uint32_t(n), [&](uint32_t i) { return rows_[in[i].index]; }, own);
      return;
    }
    int axis = 0;
    for (int a = 1; a < 3; ++a)
      if (bhi[a] - blo[a] > bhi[axis] - blo[axis]) axis = a;
    uint64_t less, equal;
    const P median = select_median(in, n, axis, less, equal);

    // K stratified LOD points leave; the rest splits at the median, ties filling the left half.
    // Loops run between the picks, without branches on the data.
    const uint32_t k = opt_->lod_count;
    uint64_t picks[kMaxLod + 1];
    for (uint32_t j = 0; j < k; ++j) picks[j] = (2 * uint64_t(j) + 1) * n / (2 * k);
    picks[k] = n;
    for (uint32_t j = 0; j < k; ++j) less -= in[picks[j]].c[axis] < median, equal -= in[picks[j]].c[axis] == median;
    const uint64_t m = n - k, target = m / 2;
    uint64_t left = less >= target ? less : std::min(target, less + equal);
    const bool by_count = left == 0 || left == m;  // degenerate: split by order alone
    if (by_count) left = target;
    const int d = 1 - s;
    Point* out = points_[d] + lo;
    uint64_t l = 0, r = left, ties = left - std::min(left, less);
    for (uint64_t begin = 0, j = 0; j <= k; begin = picks[j] + 1, ++j) {
      if (by_count) {
        for (uint64_t i = begin; i < picks[j]; ++i) {
          const bool to_left = l < left;
          out[to_left ? l : r] = in[i];
          l += to_left, r += !to_left;
        }
      } else {
        for (uint64_t i = begin; i < picks[j]; ++i) {
          const P x = in[i].c[axis];
          const bool eq = x == median;
          const bool to_left = (x < median) | (eq & (ties > 0));
          ties -= uint64_t(eq & to_left);
          out[to_left ? l : r] = in[i];
          l += to_left, r += !to_left;
        }
      }
      if (j < k) own.push_back(rows_[in[picks[j]].index]);
    }
    nodes[id].own_count = k;
    P llo[3], lhi[3], rlo[3], rhi[3];
    for (int a = 0; a < 3; ++a) llo[a] = rlo[a] = blo[a], lhi[a] = rhi[a] = bhi[a];
    if (!by_count) lhi[axis] = rlo[axis] = median;
    split(lo, lo + left, d, llo, lhi);
    nodes[id].right = uint32_t(nodes.size());
    split(lo + left, lo + m, d, rlo, rhi);
  }
};

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
  std::vector<TreeletBuilder<P>> treelets(shallow.tasks.size(), TreeletBuilder<P>(options, coords));
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
      TreeletBuilder<P>& t = treelets[sn.task];
      uint32_t base = uint32_t(out.nodes.size());
      uint64_t own_pos = own_rows.size();
      for (const TreeNode& tn : t.nodes) {
        out.nodes.push_back(TreeNode{tn.right ? tn.right + base : 0, tn.own_count});
        own_offset.push_back(own_pos);
        own_pos += tn.own_count;
      }
      own_rows.insert(own_rows.end(), t.own.begin(), t.own.end());
      TreeletBuilder<P>::release(t.nodes);  // free its memory early
      TreeletBuilder<P>::release(t.own);
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

void check_layout_options(const LayoutOptions& o) {
  if (o.lod_count < 1 || o.lod_count > kMaxLod) throw UsageError("lod_count must be in [1, " + std::to_string(kMaxLod) + "]");
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
    if (axes[a]->spec.dtype == DType::f32)
      check_finite_and_bound<float>(*axes[a], names[a], threads, lo, hi);
    else
      check_finite_and_bound<double>(*axes[a], names[a], threads, lo, hi);
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
