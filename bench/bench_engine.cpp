// draftscope-bench: times the engine on one target + DFlash drafter pair, stage by stage
// (load, prefill + features, one drafter call, one verify block, the whole DFlash loop),
// measures the device's copy bandwidth, and dumps the prompt's tapped hidden states and
// per-position logits argmax for the numerical check against HF transformers.
// Used by bench/run.sh; see docs/PERFORMANCE.md. Stage timings synchronise the device
// around each repetition and report the median; the loop itself runs unmodified (its one
// synchronisation per step is the accepted count).

#include "checkpoints/weight_loader.h"
#include "core/torch_compat.h"
#include "decoding/dflash_loop.h"
#include "decoding/draft_graph.h"
#include "decoding/verify_graph.h"
#include "draftscope/errors.h"
#include "draftscope/file_io.h"
#include "draftscope/model_config.h"
#include "draftscope/placement.h"
#include "draftscope/safetensors.h"
#include "draftscope/settings_validation.h"
#include "engine/target_placement.h"
#include "models/dflash_drafter.h"
#include "models/target_model.h"

#include <c10/core/InferenceMode.h>
#if __has_include(<nvtx3/nvToolsExt.h>)
#include <nvtx3/nvToolsExt.h>  // header-only NVTX: ranges for `ncu --nvtx` (--profile-verify)
#define DRAFTSCOPE_BENCH_NVTX 1
#endif
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

using namespace draftscope;
using Clock = std::chrono::steady_clock;

namespace {

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
}

double msSince(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

/// The distinct devices of a placement (a split on one GPU, "cuda:0,cuda:0", is one device).
std::vector<at::Device> distinct(const std::vector<at::Device>& devices) {
    std::vector<at::Device> out;
    for (const auto& d : devices)
        if (std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
    return out;
}

void synchronize(const std::vector<at::Device>& devices) {
    for (const auto& d : devices) compat::synchronize(d);
}

/// Milliseconds of `reps` runs of `body` after `warmup` runs, synchronising every device
/// around each.
std::vector<double> timeIt(const std::vector<at::Device>& devs, int warmup, int reps, const std::function<void()>& body) {
    for (int i = 0; i < warmup; ++i) body();
    synchronize(devs);
    std::vector<double> ms;
    for (int i = 0; i < reps; ++i) {
        const auto t0 = Clock::now();
        body();
        synchronize(devs);
        ms.push_back(msSince(t0));
    }
    return ms;
}

std::vector<float> toFloats(const at::Tensor& t) {
    const auto c = t.to(at::kCPU, at::kFloat).contiguous();
    return {c.data_ptr<float>(), c.data_ptr<float>() + c.numel()};
}

}  // namespace

int main(int argc, char** argv) {
    std::map<std::string, std::string> a = {{"--device", "cuda"}, {"--dtype", "bfloat16"}, {"--new", "256"},
                                            {"--reps", "20"}, {"--e2e-reps", "3"}, {"--label", "draftscope"}};
    for (int i = 1; i + 1 < argc; i += 2) a[argv[i]] = argv[i + 1];
    for (const char* k : {"--target", "--drafter", "--prompt-ids", "--out"})
        if (!a.count(k)) {
            std::cerr << "usage: draftscope-bench --target DIR --drafter DIR --prompt-ids FILE.json --out FILE.json\n"
                         "       [--dump FILE.safetensors] [--new 256] [--reps 20] [--e2e-reps 3] [--e2e-cold 1] [--exact 1]\n"
                         "       [--device cuda | cuda:0,cuda:0 | auto] [--gpu-memory 40GiB,40GiB] [--split-after L]\n"
                         "       [--drafter-device D] [--dtype bfloat16] [--cuda-graphs auto|on|off] [--label NAME]\n"
                         "       [--mxfp4-experts auto|packed|unpacked]\n"
                         "       [--profile-verify 1]\n";
            return 2;
        }
    try {
        c10::InferenceMode guard;
        if (a.count("--exact") && a["--exact"] != "0") compat::setFastKernels(false);
        // The placement options as the CLI takes them (LoadOptions, validated the same way).
        LoadOptions lo;
        lo.device = a["--device"];
        lo.dtype = a["--dtype"];
        if (a.count("--gpu-memory")) lo.deviceMemory = parseMemoryLimits(a["--gpu-memory"]);
        if (a.count("--split-after")) {
            std::stringstream list(a["--split-after"]);
            for (std::string e; std::getline(list, e, ',');) lo.splitAfterLayers.push_back(std::stoll(e));
        }
        if (a.count("--drafter-device")) lo.drafterDevice = a["--drafter-device"];
        if (a.count("--cuda-graphs")) lo.cudaGraphs = a["--cuda-graphs"];
        if (a.count("--mxfp4-experts")) lo.mxfp4Experts = a["--mxfp4-experts"];
        validate(lo);
        const auto dtype = compat::parseDtype(lo.dtype);
        std::vector<at::Device> devs;
        for (const auto& name : placementDevices(lo.device)) devs.push_back(compat::parseDevice(name));
        devs = distinct(devs);
        const auto dev = devs.front();
        const int reps = std::stoi(a["--reps"]), e2eReps = std::stoi(a["--e2e-reps"]);
        const std::int64_t maxNew = std::stoll(a["--new"]);
        nlohmann::json out;
        out["label"] = a["--label"];
        out["libtorch"] = compat::libtorchDescription();
        out["fast_kernels"] = compat::fastKernels(dev, dtype);

        std::vector<std::int64_t> ids = nlohmann::json::parse(readFileToString(a["--prompt-ids"])).get<std::vector<std::int64_t>>();
        const auto P = static_cast<std::int64_t>(ids.size());
        const auto longOpts = at::TensorOptions().dtype(at::kLong);

        // Device warm-up (context creation stays out of the load time), then the copy ceiling.
        {
            const std::int64_t n = std::int64_t(1) << 30;  // 2 GiB of bf16 per buffer
            auto src = at::empty({n}, at::TensorOptions().dtype(at::kBFloat16).device(dev)).uniform_();
            auto dst = at::empty_like(src);
            const auto ms = timeIt(devs, 3, 10, [&] { dst.copy_(src); });
            out["copy_ms"] = median(ms);
            out["copy_bandwidth_gbps"] = 2.0 * n * 2 / (median(ms) * 1e6);  // read + write
        }

        synchronize(devs);
        for (const auto& d : devs) compat::resetPeakMemory(d);
        const auto tLoad = Clock::now();
        std::unique_ptr<TargetModel> target;
        std::unique_ptr<DFlashDrafter> drafter;
        std::uint64_t targetBytes = 0, drafterBytes = 0, embedBytes = 0;
        {
            const auto cfg = loadTargetConfig(a["--target"]);
            WeightLoader w(a["--target"]);
            targetBytes = w.totalBytes();
            const auto embedName = cfg.weightPrefix + "embed_tokens.weight";
            if (w.has(embedName) && !cfg.tieWordEmbeddings) {
                std::uint64_t n = 2;
                for (auto d : w.shape(embedName)) n *= static_cast<std::uint64_t>(d);
                embedBytes = n;
            }
            target = std::make_unique<TargetModel>(cfg, w, dtype, planTarget(cfg, w, dtype, lo));
            target->setCudaGraphMode(cudaGraphMode(lo));
        }
        const double targetLoadS = msSince(tLoad) / 1e3;
        {
            const auto cfg = loadDrafterConfig(a["--drafter"]);
            WeightLoader w(a["--drafter"]);
            drafterBytes = w.totalBytes();
            drafter = std::make_unique<DFlashDrafter>(cfg, w, *target);
        }
        synchronize(devs);
        const double loadS = msSince(tLoad) / 1e3;
        out["load_s"] = loadS;
        out["target_load_s"] = targetLoadS;
        out["weight_bytes"] = targetBytes + drafterBytes;
        out["target_bytes"] = targetBytes;
        out["drafter_bytes"] = drafterBytes;
        out["load_gbps"] = static_cast<double>(targetBytes + drafterBytes) / loadS / 1e9;
        // A verify pass reads every target weight except the embedding table (16 rows of it).
        out["verify_weight_bytes"] = targetBytes - embedBytes;
        out["placement"] = describePlacement(target->placement().plan, target->placement().names);
        out["groups"] = target->placement().names.size();
        std::int64_t memAfter = 0, peakLoad = 0;
        for (const auto& d : devs) {
            const auto m = compat::deviceMemoryStats(d);
            memAfter += m.allocated;
            peakLoad += m.peakAllocated;
        }
        out["mem_after_load_bytes"] = memAfter;  // summed over the distinct devices
        out["peak_load_bytes"] = peakLoad;
        std::cout << a["--label"] << ": placement " << out["placement"].get<std::string>() << std::endl;

        const auto featIdx = drafter->featureIndices();
        const std::int64_t B = drafter->blockSize();
        const auto promptT = at::tensor(ids, longOpts);

        // Prefill + features (+ the anchor, which needs the host).
        std::vector<at::Tensor> ctxHolder(1);
        std::int64_t anchor = 0;
        auto prefillMs = timeIt(devs, 1, 5, [&] {
            KVCache c = target->makeCache();
            c.reserve(P + maxNew + B);
            const auto pre = target->forward(promptT, c, {featIdx, P - 1, {}, {}, {}});
            ctxHolder[0] = at::cat(pre.hidden, -1);
            anchor = pre.logits.argmax(-1).item<std::int64_t>();
        });
        out["prefill_ms"] = median(prefillMs);

        KVCache tcache = target->makeCache();
        tcache.reserve(P + maxNew + B);
        const auto pre = target->forward(promptT, tcache, {featIdx, P - 1, {}, {}, {}});
        const auto ctx = at::cat(pre.hidden, -1);
        const auto block = at::full({B}, drafter->config().maskTokenId, longOpts.device(target->drafterDevice()));
        block.narrow(0, 0, 1).fill_(anchor);

        // One drafter call with one new context row on a cache holding the prompt.
        KVCache dcache = drafter->makeCache();
        dcache.reserve(P + maxNew + B);
        drafter->draft(ctx, block, dcache, RunSettings{}.loop);
        const auto ctx1 = ctx.narrow(0, P - 1, 1);
        at::Tensor drafted;
        // As the loop drafts (DraftGraph: a captured graph per context length where allowed).
        DraftGraph drafterGraph(*drafter, *target, RunSettings{}.loop);
        const auto draftMs = timeIt(devs, 3, reps, [&] {
            drafted = drafterGraph.draft(ctx1, block, dcache).logits.argmax(-1).to(at::kCPU);
            dcache.crop(P);
        });
        out["draft_ms"] = median(draftMs);
        out["draft_cuda_graphs"] = drafterGraph.describe();

        // One verify block of B tokens on a cache holding the prompt.
        const auto verifyIds = at::cat({block.narrow(0, 0, 1), drafted.to(dev)});
        // Hybrid targets: commit() adopts the Gated DeltaNet state after the kept prefix of the
        // verify block (docs/ENGINE.md, "Hybrid targets: state rollback"); each repetition
        // goes back to the prompt by committing none of the block (no work: the state before
        // the block stays where the next step reads it).
        const bool hybrid = target->isHybrid();
        out["hybrid"] = hybrid;
        const auto beforeVerify = tcache.snapshot();
        // As the loop verifies (VerifyGraph: a captured graph where --cuda-graphs allows).
        VerifyGraph verifier(*target, B, featIdx);
        const auto verifyMs = timeIt(devs, 3, reps, [&] {
            const auto v = verifier.forward(verifyIds, tcache);
            const auto feats = at::cat(v.hidden, -1);
            const auto post = v.logits.argmax(-1).to(at::kCPU);
            verifier.commit(tcache, P);
        });
        out["verify_ms"] = median(verifyMs);
        if (a.count("--profile-verify") && a["--profile-verify"] != "0") {
            // One more verify inside the NVTX range "verify", for
            // `ncu --nvtx --nvtx-include verify/` (bench/profile_verify.sh).
#ifdef DRAFTSCOPE_BENCH_NVTX
            synchronize(devs);
            nvtxRangePushA("verify");
            verifier.forward(verifyIds, tcache);
            synchronize(devs);
            nvtxRangePop();
            verifier.commit(tcache, P);
#else
            std::cerr << "draftscope-bench: --profile-verify needs the NVTX headers (nvtx3/nvToolsExt.h)\n";
            return 1;
#endif
        }
        out["verify_cuda_graphs"] = verifier.describe();
        out["cuda_graphs_option"] = lo.cudaGraphs;
        if (hybrid) {
            // What a rejected hybrid step adds: the commit of one token, which rebuilds each
            // DeltaNet layer's state from the verify pass (no weight reads; a captured graph
            // where the verify step is one); timed alone between synchronisations, the verify
            // pass before it untimed.
            std::vector<double> cropMs;
            for (int i = 0; i < 3 + reps; ++i) {
                verifier.forward(verifyIds, tcache);
                synchronize(devs);
                const auto t0 = Clock::now();
                verifier.commit(tcache, P + 1);
                synchronize(devs);
                if (i >= 3) cropMs.push_back(msSince(t0));
                tcache.restore(beforeVerify);
            }
            out["rollback_1_ms"] = median(cropMs);
        }
        if (a.count("--out")) std::ofstream(a["--out"]) << out.dump(1) << "\n";  // partial: stages only
        std::cout << a["--label"] << ": stages: prefill " << out["prefill_ms"].get<double>() << " ms, draft "
                  << out["draft_ms"].get<double>() << " ms, verify " << out["verify_ms"].get<double>() << " ms ["
                  << verifier.describe() << "]" << (hybrid ? ", rollback to 1 token " + std::to_string(out["rollback_1_ms"].get<double>()) + " ms"
                             : std::string())
                  << std::endl;

        // The prompt's tapped hidden states and logits argmax for the numerical check (before
        // the end-to-end runs, so a run cut by a time limit still leaves it).
        if (a.count("--dump")) {
            std::vector<std::int64_t> all;
            KVCache c = target->makeCache();
            const auto f = target->forward(promptT, c, {featIdx, 0, {}, {}, {}});
            SafetensorsWriter w;
            for (std::size_t i = 0; i < featIdx.size(); ++i)
                w.addFloat32("hidden." + std::to_string(featIdx[i] - 1), {P, f.hidden[i].size(1)}, toFloats(f.hidden[i]));
            const auto am = f.logits.argmax(-1).to(at::kCPU).contiguous();
            w.addInt64("logits_argmax", {P}, {am.data_ptr<std::int64_t>(), am.data_ptr<std::int64_t>() + P});
            w.write(a["--dump"]);
        }

        // The whole DFlash loop, as the CLI and the GUI run it (all per-step statistics).
        RunSettings s;
        s.maxNewTokens = maxNew;
        s.ignoreEos = true;
        s.temperature = 0;
        // The first full run is reported apart ("cold"): it meets every key length for the
        // first time (plan caches, e.g. cuDNN attention, would show here).
        if (a.count("--e2e-cold") == 0 || a["--e2e-cold"] != "0") {
            synchronize(devs);
            const auto t0 = Clock::now();
            runDFlash(*target, *drafter, ids, s, {}, {}, nullptr);
            synchronize(devs);
            out["e2e_cold_ms"] = msSince(t0);
        }
        std::vector<double> e2e;
        RunResult last;
        for (int i = 0; i < e2eReps; ++i) {
            synchronize(devs);
            const auto t0 = Clock::now();
            last = runDFlash(*target, *drafter, ids, s, {}, {}, nullptr);
            synchronize(devs);
            e2e.push_back(msSince(t0));
        }
        if (!e2e.empty()) {
            out["e2e_ms"] = median(e2e);
            out["e2e_all_ms"] = e2e;
            out["e2e_prefill_ms"] = last.timing.prefillMs;
            out["steps"] = last.acceptanceLengths.size();
            out["tau"] = last.tau;
            out["acceptance_lengths"] = last.acceptanceLengths;
            out["output_ids"] = std::vector<std::int64_t>(last.outputIds.begin() + P, last.outputIds.end());
            out["peak_run_bytes"] = last.timing.peakDeviceBytes;
            out["run_cuda_graphs"] = last.timing.cudaGraphs;
        }

        std::ofstream(a["--out"]) << out.dump(1) << "\n";
        std::cout << a["--label"] << ": load " << loadS << " s (" << out["load_gbps"].get<double>() << " GB/s), prefill "
                  << out["prefill_ms"].get<double>() << " ms, draft " << out["draft_ms"].get<double>() << " ms, verify "
                  << out["verify_ms"].get<double>() << " ms, e2e " << out.value("e2e_ms", 0.0) << " ms, steps "
                  << last.acceptanceLengths.size() << "\n";
    } catch (const std::exception& e) {
        std::cerr << "draftscope-bench: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
