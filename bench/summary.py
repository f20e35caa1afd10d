"""Short table of the sweep (last thing device-run.sh prints) + plot."""
import csv, sys, os
out = sys.argv[1]
rows = list(csv.DictReader(open(os.path.join(out, "bench_dda.csv"))))
print(open(os.path.join(out, "fp8_bench.txt")).read())
print("DDA bf16 allreduce, us per call (graph replay median); floor = empty kernel per rank; %copy = copy time / time")
print("%-3s %9s %8s %8s %8s %7s %7s" % ("N", "bytes", "flat", "tree", "auto", "floor", "%copy"))
for r in rows:
    if r["dtype"] != "bf16" or r["algo"] != "auto":
        continue
    same = {x["algo"]: float(x["us"]) for x in rows if x["dtype"] == "bf16" and x["nranks"] == r["nranks"] and x["bytes"] == r["bytes"]}
    print("%-3s %9s %8.2f %8.2f %8.2f %7.2f %6.0f%%" % (r["nranks"], r["bytes"], same["flat"], same["tree"], same["auto"],
                                                       float(r["empty_us"]), 100 * float(r["frac_copy"])))
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 5))
    for n in ("2", "4", "8"):
        for algo, style in (("flat", "-"), ("tree", "--")):
            pts = [(int(x["bytes"]), float(x["us"])) for x in rows if x["nranks"] == n and x["algo"] == algo and x["dtype"] == "bf16"]
            ax.plot([p[0] for p in pts], [p[1] for p in pts], style, marker="o", label=f"{n} ranks {algo}")
    ax.set_xscale("log", base=2); ax.set_yscale("log"); ax.set_xlabel("bytes per rank"); ax.set_ylabel("us per call")
    ax.set_title("rcclx DDA bf16 AllReduce, virtual ranks on one H200"); ax.legend(fontsize=7); ax.grid(True, alpha=.3)
    fig.savefig(os.path.join(out, "dda_latency.png"), dpi=100)
except Exception as e:  # the plot is a convenience
    print("plot skipped:", e)
