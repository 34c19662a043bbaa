#!/usr/bin/env python3
"""The Spark job on S3: a real S3 server (moto's, in server mode: the S3 HTTP API on localhost)
started and stopped here, the test archive of test_spark_cluster.py uploaded to it with boto3,
and the job run in local[2] with `--input s3://BUCKET/archive/...` (and the Hadoop name `s3a://`
for one folder of it) and `--output s3://BUCKET/icy`, through the job's own code: listed and
probed with pyarrow's S3 client, every capture streamed into icy-sniff (one capture into its
standard input, the 76 pieces of the rotated set into FIFOs), nothing copied to disk, every
Parquet file written to the store by the executor. Checks: the rows read back from S3 equal
`icy-sniff -r ARCHIVE --format ndjson` over a local copy field by field, with the S3 URIs as
capture names; the rotated set is whole; the corrupt capture is a failure under its URI; a
second run is a no-op; the key log, given as an s3:// URI too, decrypts the TLS sample's three
requests; a set whose commit marker is gone runs again without doubling its rows,
and a stale temporary file is removed. Prints "spark-s3-test: OK ..." and exits 0, or says
what differs.

    python3 spark/test_spark_s3.py --icy-sniff .build/release/icy-sniff [--keep DIR]
"""
import json, os, shutil, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_spark_cluster as cluster  # noqa: E402

BUCKET = "captures"
KEYLOG = os.path.join(cluster.ROOT, "captures/tls-sample.keys")


def start_s3(work):
    port = cluster.free_port()
    log = open(os.path.join(work, "moto.log"), "w")
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                              stdout=log, stderr=subprocess.STDOUT)
    if cluster.listening(port, 20, server):
        return server, f"http://127.0.0.1:{port}"
    server.kill()
    raise SystemExit("spark-s3-test: moto's S3 server did not start:\n" + open(os.path.join(work, "moto.log")).read()[-2000:])


def main():
    binary, spark_home, work = cluster.begin("icy-spark-s3-")
    import pyarrow.parquet as pq, boto3
    archive = os.path.join(work, "archive")
    shutil.rmtree(archive, ignore_errors=True)
    out = f"s3://{BUCKET}/icy"
    files = cluster.make_archive(archive)
    server, endpoint = start_s3(work)
    # The credentials and endpoint every S3 client of the job reads (pyarrow's, boto3's).
    env = dict(os.environ, AWS_ACCESS_KEY_ID="test", AWS_SECRET_ACCESS_KEY="test", AWS_DEFAULT_REGION="us-east-1",
               AWS_ENDPOINT_URL=endpoint)
    failures = []
    try:
        s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="test", aws_secret_access_key="test",
                          region_name="us-east-1")
        s3.create_bucket(Bucket=BUCKET)
        for folder, _, names in os.walk(archive):
            for n in names:
                path = os.path.join(folder, n)
                s3.upload_file(path, BUCKET, "archive/" + os.path.relpath(path, archive))
        # The TLS sample's key log, on the store too: its three HTTPS requests are decrypted.
        s3.upload_file(KEYLOG, BUCKET, "keys/tls-sample.keys")
        # One input as s3://, one folder of it under Hadoop's name s3a://.
        inputs = [f"s3://{BUCKET}/archive/corpus", f"s3://{BUCKET}/archive/samples", f"s3://{BUCKET}/archive/broken",
                  f"s3a://{BUCKET}/archive/ring"]
        submit = [os.path.join(spark_home, "bin", "spark-submit"), "--master", "local[2]", "--conf", "spark.ui.enabled=false",
                  os.path.join(cluster.ROOT, "spark/icy_sniff_spark.py"), "--input", *inputs, "--output", out,
                  "--icy-sniff", binary, "--keylog", f"s3://{BUCKET}/keys/tls-sample.keys"]
        started = time.time()
        first = subprocess.run(submit, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        job_seconds = time.time() - started
        if first.returncode != 0:
            raise SystemExit("spark-s3-test: spark-submit failed:\n" + first.stderr[-4000:])
        second = subprocess.run(submit, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        open(os.path.join(work, "second.log"), "w").write(second.stdout + second.stderr)
        if "0 to run" not in second.stdout + second.stderr:
            failures.append("the second run was not a no-op: " + "\n".join(l for l in second.stderr.splitlines() if "icy-sniff" in l or "Error" in l or "Traceback" in l or "rror" in l))
        # A task that died after writing the rotated set's rows and before its commit marker, and
        # another that left a temporary file: the set runs again, rewrites the same file (its rows
        # are not there twice), and the temporary file goes.
        from pyarrow import fs
        s3fs = fs.S3FileSystem(endpoint_override=endpoint, access_key="test", secret_key="test", region="us-east-1")
        markers = [f.path for f in s3fs.get_file_info(fs.FileSelector(f"{BUCKET}/icy/sets"))]
        ring_marker = next(m for m in markers
                           if pq.read_table(m, filesystem=s3fs).column("set_name")[0].as_py() == "2021-01-06/split")
        s3fs.delete_file(ring_marker)
        stale = f"{BUCKET}/icy/transactions/capture_date=2021-01-06/.set-dead.0.parquet.tmp"
        with s3fs.open_output_stream(stale) as f:
            f.write(b"partial")
        third = subprocess.run(submit, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # Every set but the one whose marker went is committed (however many the archive holds).
        import re
        planned = re.search(r"(\d+) capture sets \(\d+ captures\), (\d+) already committed, 1 to run", third.stdout + third.stderr)
        if (not planned or int(planned.group(2)) != int(planned.group(1)) - 1
                or s3fs.get_file_info(stale).type != fs.FileType.NotFound):
            failures.append("a set without its commit marker was not run again alone, or the temporary file stayed: "
                            + "\n".join(l for l in (third.stdout + third.stderr).splitlines() if "icy-sniff" in l))
        rows = pq.read_table(f"{BUCKET}/icy/transactions", filesystem=s3fs).to_pylist()
        fails = pq.read_table(f"{BUCKET}/icy/failures", filesystem=s3fs).to_pylist()
    finally:
        server.terminate()
        server.wait()

    # What icy-sniff itself says about the same captures on the local disk, named by their URIs.
    def uri(path, scheme):
        return f"{scheme}{BUCKET}/archive/" + os.path.relpath(path, archive)
    expected = []
    for sub in ("corpus", "samples", "broken", "ring"):
        local = subprocess.run([binary, "-r", os.path.join(archive, sub), "--format", "ndjson", "--keylog", KEYLOG],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for line in local.stdout.splitlines():
            if line.strip():
                row = json.loads(line)
                row["capture"] = uri(row["capture"], "s3a://" if sub == "ring" else "s3://")
                expected.append(row)
    failures += cluster.differences(expected, rows)
    decrypted = [r for r in rows if r["capture"].endswith("/tls-sample.pcap") and r["method"] == "GET"]
    if len(decrypted) != 3:
        failures.append(f"the key log on S3 decrypted {len(decrypted)} of the TLS sample's 3 requests")
    ring = [r for r in rows if r["set_name"] == "2021-01-06/split"]
    if len(ring) != 5 or any(r["flags"] for r in ring):
        failures.append(f"the rotated set gave {len(ring)} transactions (flags {[r['flags'] for r in ring]}), not 5 whole ones")
    if ring and not all(r["capture"].startswith(f"s3a://{BUCKET}/archive/ring/2021-01-06/split_") for r in ring):
        failures.append(f"the rotated set's rows are not named by their URIs: {sorted({r['capture'] for r in ring})[:3]}")
    if not any(f["capture"] == f"s3://{BUCKET}/archive/broken/corrupt.pcap" and f["kind"] == "failed"
               and f["capture"] in f["message"] for f in fails):
        failures.append(f"the corrupt capture is not a failure under its URI: {fails}")
    return cluster.report("spark-s3-test", failures, f"{files} files on S3 ({endpoint}), {len(rows)} transactions, "
                          f"{len(fails)} failures, job {job_seconds:.0f} s, second run a no-op, "
                          "an uncommitted set rerun without duplicates")


if __name__ == "__main__":
    sys.exit(main())
