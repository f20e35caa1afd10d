"""Short tables of a device run (the last thing device-run.sh prints) and the
latency plot.  Usage: python3 summary.py OUT_DIR.  Missing CSVs are skipped."""
import csv, os, sys

out = sys.argv[1]


def rows(name):
    p = os.path.join(out, name)
    return list(csv.DictReader(open(p))) if os.path.exists(p) else []


fp8 = rows("fp8_bench.csv")
if fp8:
    print("FP8 quantize bf16->e4m3fn B=128 fp32 scales, 256 MiB (same-run copy = roofline)")
    for r in fp8:
        print("  %-28s %8.4f ms %8.1f GB/s %6.1f%%" % (r["what"], float(r["ms"]), float(r["GBps"]),
                                                     100 * float(r["frac_of_copy_roofline"])))

def dda_tables(dda, label):
    print("DDA bf16 AllReduce" + label + ", us per call (graph replay median); floor = empty kernel per rank;"
          " %copy = copy of unique bytes / time; zc: input already in the registered buffer;"
          " staged: never direct; sys: system-scope barriers")
    cols = ("flat", "tree", "ll", "auto", "auto_zc", "auto_staged", "flat_sys", "auto_sys")
    print("  %-3s %9s " % ("N", "bytes") + " ".join("%8s" % c[:8] for c in cols) + " %7s %6s %6s" % ("floor", "%auto", "%zc"))
    keys = sorted({(int(r["nranks"]), int(r["bytes"])) for r in dda if r["dtype"] == "bf16"})
    for n, b in keys:
        same = {x["algo"]: x for x in dda if x["dtype"] == "bf16" and int(x["nranks"]) == n and int(x["bytes"]) == b}
        us = lambda a: float(same[a]["us"]) if a in same else float("nan")
        frac = lambda a: 100 * float(same[a]["frac_copy"]) if a in same else float("nan")
        print("  %-3d %9d " % (n, b) + " ".join("%8.2f" % us(c) for c in cols) + " %7.2f %5.0f%% %5.0f%%" % (
            float(same["auto"]["empty_us"]), frac("auto"), frac("auto_zc")))
    fj = [x for x in dda if x["algo"].endswith("_fj") and x["dtype"] == "bf16"]
    if fj:
        print("Small messages" + label + " with fork/join around every call (issue #3's floor method), us per call;"
              " over = time - floor_fj, the empty kernel timed in turn with it")
        for n, b in sorted({(int(x["nranks"]), int(x["bytes"])) for x in fj}):
            same = {x["algo"]: x for x in fj if int(x["nranks"]) == n and int(x["bytes"]) == b}
            fl, fa = (float(same[a]["empty_us"]) for a in ("flat_fj", "auto_fj"))
            print("  %-3d %9d  flat %6.2f (floor_fj %5.2f, over %5.2f)  auto %6.2f (floor_fj %5.2f, over %5.2f)" % (
                n, b, float(same["flat_fj"]["us"]), fl, float(same["flat_fj"]["us"]) - fl,
                float(same["auto_fj"]["us"]), fa, float(same["auto_fj"]["us"]) - fa))



dda = rows("bench_dda.csv")
for name, label in (("bench_dda.csv", ""), ("bench_dda_early.csv", " (RCCLX_PDL=2: next call launched early)")):
    if rows(name):
        dda_tables(rows(name), label)

def pick(tab, n, d, b, algo):
    """The bench_dda row of n ranks, dtype d, b bytes and algo, or None."""
    m = [x for x in tab if int(x["nranks"]) == n and x["dtype"] == d and int(x["bytes"]) == b and x["algo"] == algo]
    return m[0] if m else None


push = rows("bench_dda_push.csv")
if dda and push:
    print("LL one-shot pulled (default on one GPU) vs pushed (RCCLX_LL_PUSH=2), bf16, us per call over the floor;"
          " fj = fork/join around every call")
    def over(tab, n, b, algo):
        m = pick(tab, n, "bf16", b, algo)
        return float(m["us"]) - float(m["empty_us"]) if m else float("nan")
    for n, b in sorted({(int(x["nranks"]), int(x["bytes"])) for x in push if x["algo"] == "ll" and x["dtype"] == "bf16"}):
        print("  %-3d %9d  ll pull %6.2f push %6.2f   auto_fj pull %6.2f push %6.2f" % (
            n, b, over(dda, n, b, "ll"), over(push, n, b, "ll"), over(dda, n, b, "auto_fj"), over(push, n, b, "auto_fj")))

nccl = [x for x in dda if x["algo"] in ("nccl", "nccl_fj")]
if nccl:
    print("Against NCCL (same process, same graph method; one GPU per rank), us per call;"
          " x = NCCL / rcclx auto (fj: fork/join around every call)")
    def us_of(n, d, b, algo):
        m = pick(dda, n, d, b, algo)
        return float(m["us"]) if m else float("nan")
    for n, d, b in sorted({(int(x["nranks"]), x["dtype"], int(x["bytes"])) for x in nccl}):
        line = "  %-3d %-5s %9d  nccl %8.2f  auto %8.2f  x%.2f" % (
            n, d, b, us_of(n, d, b, "nccl"), us_of(n, d, b, "auto"), us_of(n, d, b, "nccl") / us_of(n, d, b, "auto"))
        if pick(nccl, n, d, b, "nccl_fj"):
            line += "   fj: nccl %8.2f  auto %8.2f  x%.2f" % (
                us_of(n, d, b, "nccl_fj"), us_of(n, d, b, "auto_fj"), us_of(n, d, b, "nccl_fj") / us_of(n, d, b, "auto_fj"))
        print(line)
elif dda:
    print("Against NCCL: no rows (NCCL needs one GPU per rank; the reason is in bench_dda's log)")

lp = rows("bench_lowp.csv")
if lp:
    print("Low precision (e4m3, B=128, fp32 scales) vs full precision, us per call; x = full / best low-precision")
    by = {}
    for r in lp:
        by.setdefault((int(r["nranks"]), r["collective"], int(r["bytes_per_rank"])), {})[r["path"]] = float(r["us"])
    for (n, c, b), d in sorted(by.items()):
        full = d.get("full_auto", d.get("full_raw"))
        best = min(v for k, v in d.items() if k.startswith("lowp"))
        print("  %-3d %-14s %9d full %9.2f  lowp %s  x%.2f" % (
            n, c, b, full, " ".join("%s %.2f" % (k, v) for k, v in sorted(d.items()) if k.startswith("lowp")), full / best)
              + ("  nccl bf16 %.2f (lowp x%.2f)" % (d["nccl_bf16"], d["nccl_bf16"] / best) if "nccl_bf16" in d else ""))

fu = rows("bench_fusion.csv")
if fu:
    print("Fusion, us per call (graph replay median); x = unfused / way")
    by = {}
    for r in fu:
        by.setdefault((int(r["nranks"]), r["what"], int(r["M"]), int(r["N"])), {})[r["way"]] = float(r["us"])
    for (n, w, m, nn), d in sorted(by.items()):
        unf = d["unfused"]
        far = ("  example GEMM / vendor GEMM %.1fx" % (d["gemm_only"] / d["vendor_gemm_only"])
               if "gemm_only" in d and "vendor_gemm_only" in d else "")
        print("  %-3d %-18s M/T %5d N/H %5d  %s%s" % (n, w, m, nn, "  ".join(
            "%s %.2f (x%.2f)" % (k, v, unf / v) for k, v in d.items()), far))

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    if dda:
        # One panel per rank count: what each algorithm costs, against the
        # empty-kernel floor and the copy time of the unique bytes measured
        # in the same run (bench_dda's empty_us, copy_us).
        algos = (("flat", "tab:blue", "-"), ("tree", "tab:orange", "-"), ("ll", "tab:green", "-"),
                 ("auto", "black", ":"), ("auto_zc", "tab:purple", "--"), ("auto_staged", "tab:brown", "--"))
        ns = [n for n in ("2", "4", "8") if any(x["nranks"] == n and x["dtype"] == "bf16" for x in dda)]
        fig, axes = plt.subplots(1, len(ns), figsize=(5 * len(ns), 4.5), sharey=True, squeeze=False)
        for ax, n in zip(axes[0], ns):
            sel = [x for x in dda if x["nranks"] == n and x["dtype"] == "bf16"]
            for algo, color, style in algos:
                pts = sorted((int(x["bytes"]), float(x["us"])) for x in sel if x["algo"] == algo)
                if pts:
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], style, color=color, marker="o", ms=3, label=algo)
            ref = sorted({(int(x["bytes"]), float(x["empty_us"]), float(x["copy_us"])) for x in sel
                          if x["algo"] == "auto"})  # the graph-replay floor (the _fj rows carry fork/join's)
            ax.plot([r[0] for r in ref], [r[1] for r in ref], "-", color="grey", lw=2, alpha=.5, label="empty kernel")
            ax.plot([r[0] for r in ref], [r[2] for r in ref], "--", color="grey", lw=2, alpha=.5, label="copy of unique bytes")
            ax.set_xscale("log", base=2); ax.set_yscale("log"); ax.set_xlabel("bytes per rank")
            ax.set_title(f"{n} virtual ranks"); ax.grid(True, alpha=.3)
        axes[0][0].set_ylabel("us per call (graph replay median)")
        axes[0][0].legend(fontsize=7)
        fig.suptitle("rcclx DDA AllReduce, bf16, virtual ranks on one GPU")
        fig.tight_layout()
        fig.savefig(os.path.join(out, "dda_latency.png"), dpi=90)
except Exception as e:  # the plot is a convenience
    print("plot skipped:", e)
