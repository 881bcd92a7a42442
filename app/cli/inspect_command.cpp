#include "cli/inspect_command.h"

#include "draftscope/file_io.h"
#include "draftscope/inspector.h"

#include <cstdio>
#include <iostream>
#include <sstream>

namespace draftscope::cli {

namespace {

std::string shapeText(const std::vector<std::int64_t>& s) {
    std::string out = "[";
    for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
    return out + "]";
}

std::string num(double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.4g", v);
    return b;
}

std::string csvField(const std::string& s) {
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string q = "\"";
    for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
}

nlohmann::json toJson(const CheckpointInspection& r) {
    nlohmann::json tensors = nlohmann::json::array();
    for (const auto& t : r.tensors)
        tensors.push_back({{"name", t.name}, {"shape", t.shape}, {"dtype", t.dtype}, {"numel", t.numel},
                           {"mean", t.mean}, {"std", t.std}, {"rms", t.rms}, {"max_abs", t.maxAbs},
                           {"non_finite", t.nonFinite}});
    nlohmann::json config = nlohmann::json::object();
    for (const auto& [k, v] : r.configFields) config[k] = nlohmann::json::parse(v, nullptr, false);
    return {{"path", r.path}, {"kind", r.kind}, {"source", r.source}, {"architecture", r.architecture},
            {"attention_layout", r.attentionLayout}, {"family", r.family}, {"family_detail", r.familyDetail},
            {"architecture_checked", r.architectureChecked},
            {"config", config}, {"total_parameters", r.totalParameters}, {"total_bytes", r.totalBytes},
            {"missing", r.missing}, {"mismatched", r.mismatched}, {"unexpected", r.unexpected},
            {"notes", r.notes}, {"tensors", tensors}};
}

nlohmann::json toJson(const CheckpointDiff& d) {
    nlohmann::json common = nlohmann::json::array();
    for (const auto& t : d.common)
        common.push_back({{"name", t.name}, {"shape_a", t.shapeA}, {"shape_b", t.shapeB}, {"same_shape", t.sameShape},
                          {"rms_a", t.rmsA}, {"rms_b", t.rmsB}, {"max_abs_diff", t.maxAbsDiff},
                          {"relative_diff", t.relativeDiff}, {"cosine", t.cosine}});
    return {{"path_a", d.pathA}, {"path_b", d.pathB}, {"common", common}, {"only_a", d.onlyA}, {"only_b", d.onlyB}};
}

}  // namespace

void InspectCommand::add(CLI::App& app) {
    command = app.add_subcommand("inspect", "show a checkpoint's config, tensors (shape, dtype, mean/std/rms), "
                                            "parameter totals and missing/unexpected tensors; --diff compares two");
    command->add_option("path", path, "model directory or .pt training checkpoint")->required();
    command->add_option("--config", config, "config.json for a .pt checkpoint (default: the one beside it)");
    auto* diff = command->add_option("--diff", diffWith, "a second checkpoint: per-tensor difference statistics");
    command->add_option("--diff-config", diffConfig, "config.json for a .pt --diff checkpoint")->needs(diff);
    command->add_option("--json", jsonOut, "write the inspection (and diff) as JSON");
    command->add_option("--csv", csvOut, "write the tensor table (or, with --diff, the diff table) as CSV");
}

int InspectCommand::run() const {
    checkPaths({{"path", path, PathKind::FileOrDirectory},
                {"--config", config, PathKind::File},
                {"--diff", diffWith, PathKind::FileOrDirectory},
                {"--diff-config", diffConfig, PathKind::File}},
               {{"--json", jsonOut}, {"--csv", csvOut}});
    checkConfigOnlyForPt("--config", config, "path", path);
    checkConfigOnlyForPt("--diff-config", diffConfig, "--diff", diffWith);
    const auto r = inspectCheckpoint(path, config);
    std::cout << "checkpoint: " << r.path << "\n";
    std::cout << "kind: " << r.kind << (r.architecture.empty() ? "" : " (" + r.architecture + ")") << "; " << r.source
              << "\n";
    if (!r.family.empty())
        std::cout << "drafter family: " << r.family << (r.familyDetail.empty() ? "" : " (" + r.familyDetail + ")") << "\n";
    if (!r.attentionLayout.empty()) std::cout << "attention layout: " << r.attentionLayout << "\n";
    std::cout << "parameters: " << r.totalParameters << " in " << r.tensors.size() << " tensors, "
              << num(static_cast<double>(r.totalBytes) / (1 << 20)) << " MiB\n";
    for (const auto& n : r.notes) std::cout << "note: " << n << "\n";
    if (!r.configFields.empty()) {
        std::cout << "\nconfig:\n";
        for (const auto& [k, v] : r.configFields) std::cout << "  " << k << " = " << v << "\n";
    }
    if (!r.architectureChecked) {
        std::cout << "\narchitecture check: skipped (see the note above)\n";
    } else {
        std::cout << "\narchitecture check: ";
        if (r.missing.empty() && r.mismatched.empty() && r.unexpected.empty()) std::cout << "every expected tensor present, nothing extra\n";
        else std::cout << r.missing.size() << " missing, " << r.mismatched.size() << " mismatched, " << r.unexpected.size() << " unexpected\n";
        for (const auto& m : r.missing) std::cout << "  missing:    " << m << "\n";
        for (const auto& m : r.mismatched) std::cout << "  mismatched: " << m << "\n";
        for (const auto& m : r.unexpected) std::cout << "  unexpected: " << m << "\n";
    }
    std::cout << "\n";
    char line[512];
    std::snprintf(line, sizeof line, "%-48s %-16s %-5s %11s %11s %11s %11s %11s\n", "tensor", "shape", "dtype", "numel",
                  "mean", "std", "rms", "max|x|");
    std::cout << line;
    for (const auto& t : r.tensors) {
        std::snprintf(line, sizeof line, "%-48s %-16s %-5s %11lld %11s %11s %11s %11s%s\n", t.name.c_str(),
                      shapeText(t.shape).c_str(), t.dtype.c_str(), static_cast<long long>(t.numel), num(t.mean).c_str(),
                      num(t.std).c_str(), num(t.rms).c_str(), num(t.maxAbs).c_str(),
                      t.nonFinite ? ("  " + std::to_string(t.nonFinite) + " non-finite").c_str() : "");
        std::cout << line;
    }
    nlohmann::json j = toJson(r);
    std::ostringstream csv;
    if (!diffWith.empty()) {
        const auto d = diffCheckpoints(path, diffWith, config, diffConfig);
        std::cout << "\ndiff against " << diffWith << " (largest relative difference first):\n";
        std::snprintf(line, sizeof line, "%-48s %11s %11s %11s %11s %9s\n", "tensor", "rms A", "rms B", "max|A-B|",
                      "|A-B|/|B|", "cosine");
        std::cout << line;
        for (const auto& t : d.common) {
            if (!t.sameShape)
                std::snprintf(line, sizeof line, "%-48s shape %s vs %s\n", t.name.c_str(), shapeText(t.shapeA).c_str(),
                              shapeText(t.shapeB).c_str());
            else
                std::snprintf(line, sizeof line, "%-48s %11s %11s %11s %11s %9.6f\n", t.name.c_str(), num(t.rmsA).c_str(),
                              num(t.rmsB).c_str(), num(t.maxAbsDiff).c_str(), num(t.relativeDiff).c_str(), t.cosine);
            std::cout << line;
        }
        for (const auto& n : d.onlyA) std::cout << "only in " << path << ": " << n << "\n";
        for (const auto& n : d.onlyB) std::cout << "only in " << diffWith << ": " << n << "\n";
        j = {{"inspection", j}, {"diff", toJson(d)}};
        csv << "name,shape_a,shape_b,rms_a,rms_b,max_abs_diff,relative_diff,cosine\n";
        for (const auto& t : d.common)
            csv << csvField(t.name) << "," << csvField(shapeText(t.shapeA)) << "," << csvField(shapeText(t.shapeB)) << ","
                << t.rmsA << "," << t.rmsB << "," << t.maxAbsDiff << "," << t.relativeDiff << "," << t.cosine << "\n";
    } else {
        csv << "name,shape,dtype,numel,mean,std,rms,max_abs,non_finite\n";
        for (const auto& t : r.tensors)
            csv << csvField(t.name) << "," << csvField(shapeText(t.shape)) << "," << t.dtype << "," << t.numel << ","
                << t.mean << "," << t.std << "," << t.rms << "," << t.maxAbs << "," << t.nonFinite << "\n";
    }
    if (!jsonOut.empty()) {
        writeJson(jsonOut, j);
        std::cerr << "wrote " << jsonOut << "\n";
    }
    if (!csvOut.empty()) {
        writeFileAtomically(csvOut, csv.str());
        std::cerr << "wrote " << csvOut << "\n";
    }
    return 0;
}

}  // namespace draftscope::cli
