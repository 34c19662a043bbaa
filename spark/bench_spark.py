#!/usr/bin/env python3
"""What the Spark job costs on this machine (benchmark, not a test; docs/SPARK.md).

    python3 spark/bench_spark.py --capture /tmp/bench/web-200m.pcap --pieces 16 --icy-sniff .build/release/icy-sniff

Cuts the capture into PIECES independent captures (editcap -c, renamed so that they are not one
rotated set) and, for the skew case, into the same pieces named as one rotated set. Times, each
into a fresh output folder:
- icy-sniff's own batch, `-r DIR --out-dir OUT --format ndjson` with -j 1 and -j 2;
- the job in `local[2]` on one small capture (its fixed cost) and on the archive;
- the job on a standalone cluster of 1 and of 2 workers (1 core each), and a rerun with
  everything committed;
- the rotated set (one task however many cores) in `local[2]` and with icy-sniff alone;
- with --s3: the archive on moto's S3 server, downloaded by boto3 alone and read by the job.
Checks that the job's rows equal icy-sniff's NDJSON over the folder, field by field, and prints
wall seconds.
"""
import argparse, json, os, shutil, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_spark_cluster as cluster  # noqa: E402

JOB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "icy_sniff_spark.py")


def timed(cmd, env=None):
    start = time.time()
    p = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {p.stderr[-2000:]}")
    return time.time() - start


def cut(capture, pieces, folder, name):
    os.makedirs(folder)
    packets = int(subprocess.run(["capinfos", "-c", "-M", capture], stdout=subprocess.PIPE, text=True).stdout.split()[-1])
    subprocess.run(["editcap", "-c", str(packets // pieces + 1), capture, os.path.join(folder, "cut.pcap")], check=True)
    for i, piece in enumerate(sorted(n for n in os.listdir(folder) if n.startswith("cut"))):
        os.rename(os.path.join(folder, piece), os.path.join(folder, name(i, piece)))


def same_rows(binary, archive, out):
    """The job's Parquet rows against icy-sniff's NDJSON over the same folder, field by field
    (the tests' comparison): their number, or the run stops with what differs."""
    import pyarrow.parquet as pq
    local = subprocess.run([binary, "-r", archive, "--format", "ndjson"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    rows = pq.read_table(os.path.join(out, "transactions")).to_pylist()
    differ = cluster.differences([json.loads(l) for l in local.stdout.splitlines() if l.strip()], rows)
    if differ:
        raise SystemExit("\n".join(differ))
    return len(rows)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--capture", required=True)
    ap.add_argument("--pieces", type=int, default=16)
    ap.add_argument("--icy-sniff", required=True)
    ap.add_argument("--no-cluster", action="store_true", help="local[2] only")
    ap.add_argument("--s3", action="store_true", help="also the archive read from moto's S3 server (its speed is moto's)")
    a = ap.parse_args()
    binary = os.path.abspath(a.icy_sniff)
    import pyspark
    spark_home = os.path.dirname(pyspark.__file__)
    submit = os.path.join(spark_home, "bin", "spark-submit")
    work = tempfile.mkdtemp(prefix="icy-spark-bench-")
    archive, ring, small = (os.path.join(work, n) for n in ("archive", "ring", "small"))
    cut(a.capture, a.pieces, archive, lambda i, _: f"site-{chr(97 + i // 26)}{chr(97 + i % 26)}.pcap")
    cut(a.capture, a.pieces, ring, lambda i, piece: piece)  # editcap's own names: one rotated set
    os.makedirs(small)
    shutil.copy(os.path.join(os.path.dirname(JOB), "..", "captures", "wikipedia.pcap"), small)
    size = sum(os.path.getsize(os.path.join(archive, n)) for n in os.listdir(archive)) / 1e6
    results = {}

    def job(name, inputs, out, master, env=None):
        results[name] = timed([submit, "--master", master, "--conf", "spark.ui.enabled=false", JOB,
                               "--input", inputs, "--output", os.path.join(work, out), "--icy-sniff", binary], env)

    for jobs in (1, 2):
        results[f"icy-sniff -j {jobs}"] = timed([binary, "-r", archive, "--out-dir", os.path.join(work, f"out-j{jobs}"),
                                                 "--format", "ndjson", "-j", str(jobs), "--quiet"])
    job("local[2], 1 small capture", small, "local-small", "local[2]")
    job("local[2], archive", archive, "local-archive", "local[2]")
    rows = same_rows(binary, archive, os.path.join(work, "local-archive"))
    job("local[2], no-op rerun", archive, "local-archive", "local[2]")
    results["icy-sniff, rotated set"] = timed([binary, "-r", ring, "--out-dir", os.path.join(work, "out-ring"),
                                               "--format", "ndjson", "--quiet"])
    job("local[2], rotated set", ring, "local-ring", "local[2]")
    if a.s3:
        import boto3, test_spark_s3
        server, endpoint = test_spark_s3.start_s3(work)
        try:
            env = dict(os.environ, AWS_ACCESS_KEY_ID="test", AWS_SECRET_ACCESS_KEY="test", AWS_DEFAULT_REGION="us-east-1",
                       AWS_ENDPOINT_URL=endpoint)
            s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="test", aws_secret_access_key="test",
                              region_name="us-east-1")
            s3.create_bucket(Bucket="bench")
            for n in os.listdir(archive):
                s3.upload_file(os.path.join(archive, n), "bench", "archive/" + n)
            start = time.time()
            for n in os.listdir(archive):
                s3.download_fileobj("bench", "archive/" + n, open(os.devnull, "wb"))
            results["S3: download every capture"] = time.time() - start
            job("local[2], archive on S3", "s3://bench/archive", "local-s3", "local[2]", env)
        finally:
            server.terminate()
            server.wait()
    if not a.no_cluster:
        for workers in (1, 2):
            url, procs, env = cluster.start_cluster(spark_home, os.path.join(work, f"cluster{workers}"), workers=workers)
            try:
                plural = "s" if workers > 1 else ""
                job(f"standalone, {workers} worker{plural}", archive, f"spark{workers}", url, env)
                if workers == 2:
                    job("standalone, no-op rerun", archive, f"spark{workers}", url, env)
                    job("standalone, 1 small capture", small, "spark-small", url, env)
            finally:
                for p in procs: p.terminate()
                for p in procs: p.wait()
    print(f"{a.pieces} captures, {size:.0f} MB, {rows} transactions (the job's rows = icy-sniff's), {os.cpu_count()} cores")
    for name, seconds in results.items():
        print(f"{name:<30} {seconds:7.2f} s")
    fixed = results["local[2], 1 small capture"]
    print(f"local[2]: beyond the fixed cost {results['local[2], archive'] - fixed:.2f} s "
          f"({(results['local[2], archive'] - fixed) / rows * 1000:.3f} ms per transaction)")
    if not a.no_cluster:
        sfixed = results["standalone, 1 small capture"]
        print(f"standalone, 2 workers / (its fixed cost + icy-sniff -j 2): "
              f"{results['standalone, 2 workers'] / (sfixed + results['icy-sniff -j 2']):.2f}")
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
