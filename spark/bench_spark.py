#!/usr/bin/env python3
"""Spark's scaling and overhead on this machine (benchmark, not a test; docs/SPARK.md).

    python3 spark/bench_spark.py --capture /tmp/bench/web-300m.pcap --pieces 16 --icy-sniff .build/release/icy-sniff

Cuts the capture into PIECES independent captures (editcap -c, renamed so that they are not one
rotated set), then times: icy-sniff -r DIR --out-dir with -j 1 and -j 2, and the Spark job on a
standalone cluster of 1 worker and of 2 workers (1 core each), output to a fresh directory each
time. Prints wall seconds and the ratios.
"""
import argparse, os, shutil, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_spark_cluster as cluster  # noqa: E402


def timed(cmd, env=None):
    start = time.time()
    p = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {p.stderr[-2000:]}")
    return time.time() - start


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--capture", required=True)
    ap.add_argument("--pieces", type=int, default=16)
    ap.add_argument("--icy-sniff", required=True)
    a = ap.parse_args()
    binary = os.path.abspath(a.icy_sniff)
    import pyspark
    spark_home = os.path.dirname(pyspark.__file__)
    work = tempfile.mkdtemp(prefix="icy-spark-bench-")
    archive = os.path.join(work, "archive")
    os.makedirs(archive)
    packets = int(subprocess.run(["capinfos", "-c", "-M", a.capture], stdout=subprocess.PIPE, text=True).stdout.split()[-1])
    subprocess.run(["editcap", "-c", str(packets // a.pieces + 1), a.capture, os.path.join(work, "cut.pcap")], check=True)
    for i, name in enumerate(sorted(n for n in os.listdir(work) if n.startswith("cut"))):
        os.rename(os.path.join(work, name), os.path.join(archive, f"site-{chr(97 + i // 26)}{chr(97 + i % 26)}.pcap"))
    size = sum(os.path.getsize(os.path.join(archive, n)) for n in os.listdir(archive)) / 1e6
    results = {}
    for jobs in (1, 2):
        results[f"icy-sniff -j {jobs}"] = timed([binary, "-r", archive, "--out-dir", os.path.join(work, f"out-j{jobs}"),
                                                 "--format", "ndjson", "-j", str(jobs), "--quiet"])
    for workers in (1, 2):
        url, procs, env = cluster.start_cluster(spark_home, os.path.join(work, f"cluster{workers}"), workers=workers)
        try:
            submit = [os.path.join(spark_home, "bin", "spark-submit"), "--master", url, "--conf", "spark.ui.enabled=false",
                      os.path.join(os.path.dirname(os.path.abspath(__file__)), "icy_sniff_spark.py"),
                      "--input", archive, "--output", os.path.join(work, f"spark{workers}"), "--icy-sniff", binary]
            results[f"spark, {workers} worker{'s' if workers > 1 else ''}"] = timed(submit, env)
            if workers == 2:
                # Everything committed: what is left is Spark's fixed cost (JVMs, planning, the check).
                results["spark, no-op rerun"] = timed(submit, env)
        finally:
            for p in procs: p.terminate()
            for p in procs: p.wait()
    print(f"{a.pieces} captures, {size:.0f} MB, {os.cpu_count()} cores")
    for name, seconds in results.items():
        print(f"{name:<20} {seconds:7.2f} s  {size / seconds:7.1f} MB/s")
    print(f"icy-sniff -j 2 / -j 1: {results['icy-sniff -j 2'] / results['icy-sniff -j 1']:.2f}; "
          f"spark 2 workers / 1 worker: {results['spark, 2 workers'] / results['spark, 1 worker']:.2f}; "
          f"spark 2 workers / icy-sniff -j 2: {results['spark, 2 workers'] / results['icy-sniff -j 2']:.2f}")
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
