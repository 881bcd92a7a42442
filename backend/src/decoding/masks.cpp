#include "draftscope/masks.h"

#include "draftscope/errors.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <limits>

namespace draftscope {

namespace {

/// Refuse masks whose cell count would not fit in memory comfortably (the views draw them).
constexpr std::int64_t kMaxCells = std::int64_t(1) << 28;

void allocate(MaskMatrix& m, std::int64_t rows, std::int64_t cols) {
    if (rows > 0 && cols > kMaxCells / rows)
        throw Error("mask of " + std::to_string(rows) + " x " + std::to_string(cols) +
                    " cells is too large (at most " + std::to_string(kMaxCells) + " cells)");
    m.rows = rows;
    m.cols = cols;
    m.visible.assign(static_cast<std::size_t>(rows * cols), 0);
    m.rowPositions.reserve(static_cast<std::size_t>(rows));
    m.rowLabels.reserve(static_cast<std::size_t>(rows));
    m.colPositions.reserve(static_cast<std::size_t>(cols));
    m.colLabels.reserve(static_cast<std::size_t>(cols));
}

void set(MaskMatrix& m, std::int64_t r, std::int64_t c) { m.visible[static_cast<std::size_t>(r * m.cols + c)] = 1; }

/// Masks every cell of m that `visibility` (same shape, row-major) does not show.
void intersect(MaskMatrix& m, const std::vector<std::uint8_t>& visibility) {
    for (std::size_t i = 0; i < visibility.size(); ++i) m.visible[i] = m.visible[i] && visibility[i];
}

std::string shapeOf(const MaskMatrix& m) { return std::to_string(m.rows) + " x " + std::to_string(m.cols); }

}  // namespace

std::int64_t MaskMatrix::visibleCount() const {
    return static_cast<std::int64_t>(std::count_if(visible.begin(), visible.end(), [](std::uint8_t v) { return v != 0; }));
}

MaskMatrix inferenceMask(std::int64_t contextLength, std::int64_t blockSize, const MaskConventions& conv,
                         bool anchorColumnAlways) {
    if (contextLength < 0)
        throw Error("inference mask: context length must be >= 0, got " + std::to_string(contextLength));
    if (blockSize < 1) throw Error("inference mask: block size must be >= 1, got " + std::to_string(blockSize));

    const bool inclusive = conv.context == MaskConventions::Context::Inclusive;
    const bool anchorCol = inclusive || anchorColumnAlways;
    const std::int64_t ctxCols = contextLength + (anchorCol ? 1 : 0);
    const std::int64_t B = blockSize;

    MaskMatrix m;
    allocate(m, B, ctxCols + B);
    m.contextCols = ctxCols;
    for (std::int64_t j = 0; j < contextLength; ++j) {
        m.colPositions.push_back(j);
        m.colLabels.push_back("ctx " + std::to_string(j));
    }
    if (anchorCol) {
        m.colPositions.push_back(contextLength);
        m.colLabels.push_back("ctx " + std::to_string(contextLength) + " (anchor feat)");
    }
    for (std::int64_t k = 0; k < B; ++k) {
        const std::int64_t pos = contextLength + conv.positionOffset + k;
        const std::string label = "b+" + std::to_string(k);
        m.rowPositions.push_back(pos);
        m.rowLabels.push_back(label);
        m.colPositions.push_back(pos);
        m.colLabels.push_back(label);
    }
    const bool causal = conv.block == MaskConventions::Block::Causal;
    for (std::int64_t r = 0; r < B; ++r) {
        for (std::int64_t j = 0; j < contextLength; ++j) set(m, r, j);
        if (anchorCol && inclusive) set(m, r, contextLength);
        for (std::int64_t k = 0; k < B; ++k)
            if (!causal || k <= r) set(m, r, ctxCols + k);
    }
    return m;
}

std::vector<std::uint8_t> layerVisibility(const LayerAttention& layer, const std::vector<std::int64_t>& queryPositions,
                                          const std::vector<std::int64_t>& keyPositions) {
    const auto Q = static_cast<std::int64_t>(queryPositions.size());
    const auto K = static_cast<std::int64_t>(keyPositions.size());
    if (Q > 0 && K > kMaxCells / Q)
        throw Error("layer mask of " + std::to_string(Q) + " x " + std::to_string(K) + " cells is too large (at most " +
                    std::to_string(kMaxCells) + " cells)");
    std::vector<std::uint8_t> out(static_cast<std::size_t>(Q * K));
    std::size_t i = 0;
    for (const auto q : queryPositions)
        for (const auto k : keyPositions) out[i++] = layer.visible(q, k) ? 1 : 0;
    return out;
}

MaskMatrix inferenceMask(std::int64_t contextLength, std::int64_t blockSize, const MaskConventions& conventions,
                         bool anchorColumnAlways, const LayerAttention& layer) {
    auto m = inferenceMask(contextLength, blockSize, conventions, anchorColumnAlways);
    if (!layer.needsMask()) return m;
    intersect(m, layerVisibility(layer, m.rowPositions, m.colPositions));
    return m;
}

std::string describeLayerAttention(const LayerAttention& layer) {
    return (layer.window ? "sliding " + std::to_string(*layer.window) : std::string("full")) +
           (layer.causal ? " causal" : " bidirectional");
}

std::string describeLayout(const std::vector<LayerAttention>& layers) {
    if (layers.empty()) return {};
    if (std::all_of(layers.begin(), layers.end(), [&](const LayerAttention& l) { return l == layers.front(); }))
        return std::to_string(layers.size()) + " x " + describeLayerAttention(layers.front());
    std::string s;
    for (const auto& l : layers) s += (s.empty() ? "" : ", ") + describeLayerAttention(l);
    return s;
}

MaskMatrix trainingMask(std::int64_t S, std::int64_t B, const std::vector<std::int64_t>& anchors,
                        const MaskConventions& conv, std::int64_t W) {
    if (S < 0) throw Error("training mask: context length S must be >= 0, got " + std::to_string(S));
    if (B < 1) throw Error("training mask: block size B must be >= 1, got " + std::to_string(B));
    if (W < 0) throw Error("training mask: sliding window must be >= 0 (0 = none), got " + std::to_string(W));
    for (std::size_t i = 0; i < anchors.size(); ++i) {
        const std::int64_t a = anchors[i];
        if (a < 0 || a >= S)
            throw Error("training mask: anchor " + std::to_string(a) + " (block " + std::to_string(i) +
                        ") is outside the context [0, " + std::to_string(S) + ")");
    }
    const auto N = static_cast<std::int64_t>(anchors.size());
    if (N > 0 && B > kMaxCells / N) throw Error("training mask: " + std::to_string(N) + " blocks of " + std::to_string(B) + " rows is too large");

    MaskMatrix m;
    allocate(m, N * B, S + N * B);
    m.contextCols = S;
    for (std::int64_t j = 0; j < S; ++j) {
        m.colPositions.push_back(j);
        m.colLabels.push_back("ctx " + std::to_string(j));
    }
    for (std::int64_t i = 0; i < N; ++i) {
        for (std::int64_t k = 0; k < B; ++k) {
            const std::int64_t pos = anchors[static_cast<std::size_t>(i)] + conv.positionOffset + k;
            std::string label = "b";  // appended, not "b" + ...: GCC 12 -O3 false -Wrestrict (GCC bug 105329)
            label += std::to_string(i);
            label += '+';
            label += std::to_string(k);
            m.rowPositions.push_back(pos);
            m.rowLabels.push_back(label);
            m.colPositions.push_back(pos);
            m.colLabels.push_back(label);
        }
    }
    const bool inclusive = conv.context == MaskConventions::Context::Inclusive;
    const bool causal = conv.block == MaskConventions::Block::Causal || W > 0;
    for (std::int64_t i = 0; i < N; ++i) {
        const std::int64_t a = anchors[static_cast<std::size_t>(i)];
        for (std::int64_t o = 0; o < B; ++o) {
            const std::int64_t r = i * B + o;
            // Context: [lo, hi] inclusive range of visible key positions.
            const std::int64_t hi = inclusive ? a : a - 1;
            const std::int64_t lo = W > 0 ? std::max<std::int64_t>(0, a + o - (W - 1)) : 0;
            for (std::int64_t kv = lo; kv <= hi && kv < S; ++kv) set(m, r, kv);
            // Own block.
            const std::int64_t c0 = S + i * B;
            for (std::int64_t k = 0; k < B; ++k)
                if (!causal || k <= o) set(m, r, c0 + k);
        }
    }
    return m;
}

MaskMatrix trainingMask(std::int64_t S, std::int64_t B, const std::vector<std::int64_t>& anchors,
                        const MaskConventions& conv, const LayerAttention& layer) {
    auto m = trainingMask(S, B, anchors, conv);
    if (!layer.needsMask()) return m;
    // Reference positions: the offset bug shifts the block's positions, never what it sees.
    auto rows = m.rowPositions, cols = m.colPositions;
    for (auto& p : rows) p -= conv.positionOffset;
    for (std::size_t c = static_cast<std::size_t>(m.contextCols); c < cols.size(); ++c) cols[c] -= conv.positionOffset;
    intersect(m, layerVisibility(layer, rows, cols));
    return m;
}

MaskMatrix maskDifference(const MaskMatrix& a, const MaskMatrix& b, MaskDiffCounts* counts) {
    if (a.rows != b.rows || a.cols != b.cols)
        throw Error("mask difference: shapes differ (" + shapeOf(a) + " vs " + shapeOf(b) + ")");
    MaskMatrix d = a;
    MaskDiffCounts n;
    for (std::size_t i = 0; i < d.visible.size(); ++i) {
        const bool va = a.visible[i] != 0, vb = b.visible[i] != 0;
        d.visible[i] = va != vb ? 1 : 0;
        if (va && !vb) ++n.onlyA;
        if (vb && !va) ++n.onlyB;
    }
    for (std::size_t r = 0; r < a.rowPositions.size() && r < b.rowPositions.size(); ++r)
        if (a.rowPositions[r] != b.rowPositions[r]) ++n.positionMismatches;
    for (std::size_t c = 0; c < a.colPositions.size() && c < b.colPositions.size(); ++c)
        if (a.colPositions[c] != b.colPositions[c]) ++n.positionMismatches;
    if (counts) *counts = n;
    return d;
}

std::vector<std::int64_t> parseIndexList(const std::string& text) {
    std::vector<std::int64_t> out;
    std::size_t i = 0;
    const auto isSep = [](char ch) { return ch == ',' || ch == ';' || std::isspace(static_cast<unsigned char>(ch)); };
    while (i < text.size()) {
        while (i < text.size() && isSep(text[i])) ++i;
        if (i >= text.size()) break;
        std::size_t j = i;
        while (j < text.size() && !isSep(text[j])) ++j;
        const std::string piece = text.substr(i, j - i);
        std::int64_t v = 0;
        const char* first = piece.data();
        if (!piece.empty() && piece[0] == '+') ++first;
        const auto [ptr, ec] = std::from_chars(first, piece.data() + piece.size(), v);
        if (ec != std::errc() || ptr != piece.data() + piece.size())
            throw Error("'" + piece + "' is not an integer (expected a comma-separated list such as 1, 4, 9)");
        out.push_back(v);
        i = j;
    }
    return out;
}

}  // namespace draftscope
